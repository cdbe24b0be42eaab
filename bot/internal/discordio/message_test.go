package discordio

import (
	"testing"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/snowflake/v2"
)

// TestMessageOf reads MESSAGE_CREATE as a value and a pointer: where, by
// whom, a bot or a webhook, and what the event shows of its pictures
// (nothing without the message content intent); nothing from other
// events.
func TestMessageOf(t *testing.T) {
	guild, webhook := snowflake.ID(1), snowflake.ID(77)
	png, text := "image/png", "text/plain"
	base := discord.Message{ID: 4, ChannelID: 3, GuildID: &guild, Author: discord.User{ID: 2}}
	hidden := gateway.EventMessageCreate{Message: base}
	pics := base
	pics.Attachments = []discord.Attachment{{Filename: "a.txt", ContentType: &text}, {Filename: "b.png", ContentType: &png}}
	byName := base
	byName.Attachments = []discord.Attachment{{Filename: "c.JPG"}}
	embed := base
	embed.Embeds = []discord.Embed{{Image: &discord.EmbedResource{URL: "https://example.com/a.png"}}}
	words := base
	words.Content, words.Attachments = "hello", []discord.Attachment{{Filename: "notes.txt", ContentType: &text}}
	bot := base
	bot.Author.Bot = true
	hook := base
	hook.WebhookID = &webhook
	dm := base
	dm.GuildID = nil

	want := Message{GuildID: 1, ChannelID: 3, MessageID: 4, AuthorID: 2}
	with := func(f func(*Message)) Message { m := want; f(&m); return m }
	for i, c := range []struct {
		ev   gateway.EventData
		want Message
		ok   bool
	}{
		{hidden, want, true},
		{&hidden, want, true},
		{gateway.EventMessageCreate{Message: pics}, with(func(m *Message) { m.Shown, m.Attachments, m.Images = true, 2, true }), true},
		{gateway.EventMessageCreate{Message: byName}, with(func(m *Message) { m.Shown, m.Attachments, m.Images = true, 1, true }), true},
		{gateway.EventMessageCreate{Message: embed}, with(func(m *Message) { m.Shown, m.Images = true, true }), true},
		{gateway.EventMessageCreate{Message: words}, with(func(m *Message) { m.Shown, m.Attachments = true, 1 }), true},
		{gateway.EventMessageCreate{Message: bot}, with(func(m *Message) { m.Bot = true }), true},
		{gateway.EventMessageCreate{Message: hook}, with(func(m *Message) { m.Bot = true }), true},
		{gateway.EventMessageCreate{Message: dm}, with(func(m *Message) { m.GuildID = 0 }), true},
		{(*gateway.EventMessageCreate)(nil), Message{}, false},
		{gateway.EventMessageUpdate{Message: pics}, with(func(m *Message) { m.Kind, m.Shown, m.Attachments, m.Images = MessageUpdated, true, 2, true }), true},
		{&gateway.EventMessageUpdate{Message: base}, with(func(m *Message) { m.Kind = MessageUpdated }), true},
		{(*gateway.EventMessageUpdate)(nil), Message{}, false},
		{gateway.EventMessageDelete{ID: 4, ChannelID: 3, GuildID: &guild}, Message{Kind: MessageDeleted, GuildID: 1, ChannelID: 3, MessageID: 4}, true},
		{&gateway.EventMessageDelete{ID: 4, ChannelID: 3}, Message{Kind: MessageDeleted, ChannelID: 3, MessageID: 4}, true},
		{gateway.EventMessageDeleteBulk{IDs: []snowflake.ID{4}, ChannelID: 3}, Message{}, false},
		{gateway.EventInteractionCreate{}, Message{}, false},
	} {
		got, ok := MessageOf(c.ev)
		if got != c.want || ok != c.ok {
			t.Errorf("case %d: MessageOf(%T) = %+v, %v; want %+v, %v", i, c.ev, got, ok, c.want, c.ok)
		}
	}
}

// TestDeletedOf: a MESSAGE_DELETE_BULK is one delete per message.
func TestDeletedOf(t *testing.T) {
	guild := snowflake.ID(1)
	got := DeletedOf(&gateway.EventMessageDeleteBulk{IDs: []snowflake.ID{4, 5}, ChannelID: 3, GuildID: &guild})
	want := []Message{{Kind: MessageDeleted, GuildID: 1, ChannelID: 3, MessageID: 4}, {Kind: MessageDeleted, GuildID: 1, ChannelID: 3, MessageID: 5}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("DeletedOf = %+v, want %+v", got, want)
	}
	if DeletedOf(gateway.EventMessageDelete{ID: 4}) != nil {
		t.Fatal("DeletedOf of a MESSAGE_DELETE is not nil")
	}
}

// TestGatewayMessageIntents: OnMessage adds GUILD_MESSAGES, alone or
// beside the reactions' intent; never the privileged message content.
func TestGatewayMessageIntents(t *testing.T) {
	if got := (GatewayConfig{OnMessage: func(Message) {}}).Intents(); got != gateway.IntentGuildMessages {
		t.Errorf("OnMessage alone: intents %v, want GUILD_MESSAGES", got)
	}
	both := GatewayConfig{OnMessage: func(Message) {}, OnReaction: func(Reaction) {}}
	if got := both.Intents(); got != gateway.IntentGuildMessages|gateway.IntentGuildMessageReactions {
		t.Errorf("both: intents %v", got)
	}
	if got := both.Intents(); got.Has(gateway.IntentMessageContent) {
		t.Errorf("asks for the message content intent: %v", got)
	}
}
