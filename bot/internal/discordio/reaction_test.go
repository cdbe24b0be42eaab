package discordio

import (
	"testing"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/snowflake/v2"
)

// TestReactionOf reads both reaction events, as values and pointers, a
// unicode and a custom emoji, a bot's add, and nothing from other events.
func TestReactionOf(t *testing.T) {
	guild, author, emojiID := snowflake.ID(1), snowflake.ID(9), snowflake.ID(42)
	pin, custom := "📌", "pinit"
	add := gateway.EventMessageReactionAdd{
		UserID: 2, ChannelID: 3, MessageID: 4, GuildID: &guild, MessageAuthorID: &author,
		Member: &discord.Member{User: discord.User{ID: 2}},
		Emoji:  discord.PartialEmoji{Name: &pin},
	}
	botAdd := add
	botAdd.Member = &discord.Member{User: discord.User{ID: 2, Bot: true}}
	remove := gateway.EventMessageReactionRemove{UserID: 2, ChannelID: 3, MessageID: 4, GuildID: &guild,
		Emoji: discord.PartialEmoji{Name: &custom, ID: &emojiID}}
	dm := gateway.EventMessageReactionAdd{UserID: 2, ChannelID: 3, MessageID: 4, Emoji: discord.PartialEmoji{Name: &pin}}

	want := Reaction{Added: true, UserID: 2, ChannelID: 3, MessageID: 4, GuildID: 1, Emoji: "📌"}
	wantBot := want
	wantBot.Bot = true
	wantRemove := Reaction{UserID: 2, ChannelID: 3, MessageID: 4, GuildID: 1, Emoji: "pinit:42", EmojiID: 42}
	wantDM := Reaction{Added: true, UserID: 2, ChannelID: 3, MessageID: 4, Emoji: "📌"}
	for i, c := range []struct {
		ev   gateway.EventData
		want Reaction
		ok   bool
	}{
		{add, want, true},
		{&add, want, true},
		{botAdd, wantBot, true},
		{remove, wantRemove, true},
		{&remove, wantRemove, true},
		{dm, wantDM, true},
		{(*gateway.EventMessageReactionAdd)(nil), Reaction{}, false},
		{gateway.EventInteractionCreate{}, Reaction{}, false},
		{gateway.EventMessageReactionRemoveEmoji{}, Reaction{}, false},
	} {
		got, ok := ReactionOf(c.ev)
		if got != c.want || ok != c.ok {
			t.Errorf("case %d: ReactionOf(%T) = %+v, %v; want %+v, %v", i, c.ev, got, ok, c.want, c.ok)
		}
	}
}

// TestGatewayIntents: a gateway asks for GUILD_MESSAGE_REACTIONS alone
// when it hands reactions on, and for no intent otherwise.
func TestGatewayIntents(t *testing.T) {
	if got := (GatewayConfig{}).Intents(); got != gateway.IntentsNone {
		t.Errorf("without OnReaction: intents %v, want none", got)
	}
	if got := (GatewayConfig{OnReaction: func(Reaction) {}}).Intents(); got != gateway.IntentGuildMessageReactions {
		t.Errorf("with OnReaction: intents %v, want GUILD_MESSAGE_REACTIONS", got)
	}
}
