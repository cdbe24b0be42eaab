package discordtest_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// connectWithIntents dials, identifies shard 0 of 1 with intents and
// reads READY and the GUILD_CREATEs of guilds guilds.
func connectWithIntents(t *testing.T, s *discordtest.Server, intents gateway.Intents, guilds int) *rawGateway {
	t.Helper()
	g := dialGateway(t, s.GatewayURL())
	g.mustRead()
	g.identify(s.Token(), 0, 1, intents)
	if f := g.mustRead(); f.T != "READY" {
		t.Fatalf("got %s, want READY", f.T)
	}
	for range guilds {
		if f := g.mustRead(); f.T != "GUILD_CREATE" {
			t.Fatalf("got %s, want GUILD_CREATE", f.T)
		}
	}
	return g
}

// eventTypes returns the types of shard 0's dispatches after the first n.
func eventTypes(t *testing.T, s *discordtest.Server, n int) []string {
	t.Helper()
	sess, ok := s.Session(0)
	if !ok {
		t.Fatal("no session for shard 0")
	}
	var out []string
	for _, e := range sess.Events[n:] {
		out = append(out, e.Type)
	}
	return out
}

// getMessage fetches a message over REST as the bot.
func getMessage(t *testing.T, s *discordtest.Server, channelID, messageID snowflake.ID) discord.Message {
	t.Helper()
	r := call(t, s, "GET", "/channels/"+channelID.String()+"/messages/"+messageID.String(), nil, true)
	var m discord.Message
	if err := json.Unmarshal(r.body, &m); err != nil || r.status != 200 {
		t.Fatalf("GET message: %d %s", r.status, r.body)
	}
	return m
}

func TestReactionEvents(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	w := addWorld(t, s, 0, 1, 1)
	bob, err := s.AddMember(discordtest.Member{GuildID: w.guild.ID, Username: "bob", Nick: "bobby"})
	if err != nil {
		t.Fatal(err)
	}
	g := connectWithIntents(t, s, gateway.IntentGuilds|gateway.IntentGuildMessageReactions, 1)
	const pin = "📌"

	if err := s.AddReaction(w.channel.ID, w.message.ID, bob.UserID, pin); err != nil {
		t.Fatal(err)
	}
	f := g.mustRead()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(f.D, &raw); err != nil {
		t.Fatal(err)
	}
	wantRaw := map[string]string{
		"user_id":           `"` + bob.UserID.String() + `"`,
		"channel_id":        `"` + w.channel.ID.String() + `"`,
		"message_id":        `"` + w.message.ID.String() + `"`,
		"guild_id":          `"` + w.guild.ID.String() + `"`,
		"message_author_id": `"` + w.user.UserID.String() + `"`,
		"emoji":             `{"id":null,"name":"📌"}`,
		"burst":             `false`,
		"type":              `0`,
	}
	for k, v := range wantRaw {
		if string(raw[k]) != v {
			t.Errorf("MESSAGE_REACTION_ADD %s = %s, want %s", k, raw[k], v)
		}
	}
	var add gateway.EventMessageReactionAdd
	if err := json.Unmarshal(f.D, &add); err != nil {
		t.Fatalf("MESSAGE_REACTION_ADD does not decode into disgo's type: %v", err)
	}
	if f.T != "MESSAGE_REACTION_ADD" || add.Member == nil || add.Member.User.ID != bob.UserID ||
		add.Member.Nick == nil || *add.Member.Nick != "bobby" || add.Emoji.Reaction() != pin || add.Emoji.ID != nil {
		t.Errorf("got %s %+v, want bob's 📌 with his member", f.T, add)
	}

	// The same reaction again is no event; a second user's is, and the
	// bot's own reaction shows as me in GET message.
	if err := s.AddReaction(w.channel.ID, w.message.ID, bob.UserID, pin); err != nil {
		t.Fatal(err)
	}
	if err := s.AddReaction(w.channel.ID, w.message.ID, w.user.UserID, pin); err != nil {
		t.Fatal(err)
	}
	if f := g.mustRead(); f.T != "MESSAGE_REACTION_ADD" || json.Unmarshal(f.D, &add) != nil || add.UserID != w.user.UserID {
		t.Errorf("after a duplicate, got %s %s, want alice's reaction", f.T, f.D)
	}
	if err := s.AddReaction(w.channel.ID, w.message.ID, s.BotUserID(), "⏳"); err != nil {
		t.Fatal(err)
	}
	g.mustRead()
	m := getMessage(t, s, w.channel.ID, w.message.ID)
	if len(m.Reactions) != 2 ||
		m.Reactions[0].Emoji.Name != pin || m.Reactions[0].Emoji.ID != 0 || m.Reactions[0].Count != 2 ||
		m.Reactions[0].CountDetails.Normal != 2 || m.Reactions[0].Me ||
		m.Reactions[1].Emoji.Name != "⏳" || m.Reactions[1].Count != 1 || !m.Reactions[1].Me {
		t.Errorf("GET message reactions = %+v, want 📌 by 2 and ⏳ by the bot", m.Reactions)
	}

	// Removing: an event without member or author; a second removal is
	// no event; the last removal drops the emoji from the message.
	if err := s.RemoveReaction(w.channel.ID, w.message.ID, bob.UserID, pin); err != nil {
		t.Fatal(err)
	}
	f = g.mustRead()
	raw = nil
	if err := json.Unmarshal(f.D, &raw); err != nil {
		t.Fatal(err)
	}
	var rm gateway.EventMessageReactionRemove
	if err := json.Unmarshal(f.D, &rm); err != nil {
		t.Fatalf("MESSAGE_REACTION_REMOVE does not decode into disgo's type: %v", err)
	}
	if f.T != "MESSAGE_REACTION_REMOVE" || rm.UserID != bob.UserID || rm.MessageID != w.message.ID ||
		rm.ChannelID != w.channel.ID || rm.GuildID == nil || *rm.GuildID != w.guild.ID ||
		string(raw["emoji"]) != `{"id":null,"name":"📌"}` || string(raw["burst"]) != "false" || string(raw["type"]) != "0" ||
		raw["member"] != nil || raw["message_author_id"] != nil {
		t.Errorf("got %s %s, want the removal of bob's 📌", f.T, f.D)
	}
	before := len(eventTypes(t, s, 0))
	if err := s.RemoveReaction(w.channel.ID, w.message.ID, bob.UserID, pin); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveReaction(w.channel.ID, w.message.ID, bob.UserID, "🎉"); err != nil {
		t.Fatal(err)
	}
	if got := eventTypes(t, s, before); len(got) != 0 {
		t.Errorf("removing reactions that are not there sent %v", got)
	}
	if err := s.RemoveReaction(w.channel.ID, w.message.ID, w.user.UserID, pin); err != nil {
		t.Fatal(err)
	}
	g.mustRead()
	if got, _ := s.Message(w.message.ID); !reflect.DeepEqual(got.Reactions, []discordtest.Reaction{{Emoji: "⏳", UserIDs: []snowflake.ID{s.BotUserID()}}}) {
		t.Errorf("reactions = %+v, want only the bot's ⏳", got.Reactions)
	}
	if got := eventTypes(t, s, 1); !reflect.DeepEqual(got, []string{
		"GUILD_CREATE", "MESSAGE_REACTION_ADD", "MESSAGE_REACTION_ADD", "MESSAGE_REACTION_ADD",
		"MESSAGE_REACTION_REMOVE", "MESSAGE_REACTION_REMOVE",
	}) {
		t.Errorf("events = %v", got)
	}

	// A custom emoji has its ID.
	if err := s.AddReaction(w.channel.ID, w.message.ID, bob.UserID, "pinbot:123456789"); err != nil {
		t.Fatal(err)
	}
	if f := g.mustRead(); json.Unmarshal(f.D, &add) != nil || add.Emoji.ID == nil || *add.Emoji.ID != 123456789 ||
		add.Emoji.Name == nil || *add.Emoji.Name != "pinbot" {
		t.Errorf("custom emoji reaction: %s", f.D)
	}
}

func TestReactionErrors(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	w := addWorld(t, s, 0, 1, 1)
	other, _ := s.AddChannel(discordtest.Channel{GuildID: w.guild.ID})
	stranger, _ := s.AddGuild(discordtest.Guild{})
	outsider, _ := s.AddMember(discordtest.Member{GuildID: stranger.ID})
	c, m, u := w.channel.ID, w.message.ID, w.user.UserID
	for _, tc := range []struct {
		name             string
		channel, message snowflake.ID
		user             snowflake.ID
		emoji            string
		want             error
	}{
		{"unknown channel", 77, m, u, "📌", discordtest.ErrUnknownChannel},
		{"unknown message", c, 77, u, "📌", discordtest.ErrUnknownMessage},
		{"message of another channel", other.ID, m, u, "📌", discordtest.ErrUnknownMessage},
		{"unknown user", c, m, 77, "📌", discordtest.ErrUnknownUser},
		{"not a member", c, m, outsider.UserID, "📌", discordtest.ErrUnknownMember},
		{"no emoji", c, m, u, "", discordtest.ErrInvalid},
		{"bad custom emoji", c, m, u, "pinbot:x", discordtest.ErrInvalid},
	} {
		if err := s.AddReaction(tc.channel, tc.message, tc.user, tc.emoji); !errors.Is(err, tc.want) {
			t.Errorf("AddReaction, %s: %v, want %v", tc.name, err, tc.want)
		}
		if tc.want == discordtest.ErrUnknownMember {
			continue // a user who left may still have reactions to remove
		}
		if err := s.RemoveReaction(tc.channel, tc.message, tc.user, tc.emoji); !errors.Is(err, tc.want) {
			t.Errorf("RemoveReaction, %s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if got, _ := s.Message(m); len(got.Reactions) != 0 {
		t.Errorf("refused reactions were kept: %+v", got.Reactions)
	}
}

func TestReactionEventsNeedTheIntent(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	w := addWorld(t, s, 0, 1, 1)
	g := connectWithIntents(t, s, gateway.IntentGuilds|gateway.IntentGuildMessages, 1)
	if err := s.AddReaction(w.channel.ID, w.message.ID, w.user.UserID, "📌"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveReaction(w.channel.ID, w.message.ID, w.user.UserID, "📌"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddReaction(w.channel.ID, w.message.ID, w.user.UserID, "📌"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMessage(w.message.ID); err != nil {
		t.Fatal(err)
	}
	if f := g.mustRead(); f.T != "MESSAGE_DELETE" {
		t.Errorf("without GUILD_MESSAGE_REACTIONS got %s first, want MESSAGE_DELETE", f.T)
	}
}

func TestMessageUpdate(t *testing.T) {
	t.Parallel()
	ptr := func(s string) *string { return &s }
	for _, tc := range []struct {
		name        string
		intents     gateway.Intents
		mention     bool
		wantContent bool
	}{
		{"with message content", gateway.IntentGuilds | gateway.IntentGuildMessages | gateway.IntentMessageContent, false, true},
		{"without message content", gateway.IntentGuilds | gateway.IntentGuildMessages, false, false},
		{"without message content, mentioning the bot", gateway.IntentGuilds | gateway.IntentGuildMessages, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			w := addWorld(t, s, 0, 1, 1)
			if tc.mention {
				w.message.Mentions = []snowflake.ID{s.BotUserID()}
				if _, err := s.AddMessage(w.message); err != nil {
					t.Fatal(err)
				}
			}
			g := connectWithIntents(t, s, tc.intents, 1)
			kept := w.message.Attachments[0]
			edited, err := s.EditMessage(w.channel.ID, w.message.ID, discordtest.MessageEdit{
				Content: ptr("two cats"),
				Attachments: &[]discordtest.Attachment{
					{ID: kept.ID},
					{Filename: "dog.jpg", ContentType: "image/jpeg"},
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if edited.EditedAt.IsZero() || len(edited.Attachments) != 2 || edited.Attachments[0] != kept ||
				edited.Attachments[1].ID == 0 || edited.Attachments[1].URL == "" {
				t.Errorf("edited = %+v", edited)
			}
			f := g.mustRead()
			var mu gateway.EventMessageUpdate
			if err := json.Unmarshal(f.D, &mu); err != nil {
				t.Fatalf("MESSAGE_UPDATE does not decode into disgo's type: %v", err)
			}
			if f.T != "MESSAGE_UPDATE" || mu.ID != w.message.ID || mu.ChannelID != w.channel.ID ||
				mu.GuildID == nil || *mu.GuildID != w.guild.ID || mu.Author.ID != w.user.UserID ||
				mu.Member == nil || mu.EditedTimestamp == nil || !mu.EditedTimestamp.Equal(edited.EditedAt) {
				t.Errorf("got %s %s, want MESSAGE_UPDATE of the message", f.T, f.D)
			}
			if tc.wantContent {
				if mu.Content != "two cats" || len(mu.Attachments) != 2 || mu.Attachments[1].Filename != "dog.jpg" {
					t.Errorf("content %q, %d attachments; want the edit's", mu.Content, len(mu.Attachments))
				}
			} else if mu.Content != "" || len(mu.Attachments) != 0 {
				t.Errorf("without the intent: content %q, %d attachments; want none", mu.Content, len(mu.Attachments))
			}
		})
	}
}

func TestEditMessageModel(t *testing.T) {
	t.Parallel()
	ptr := func(s string) *string { return &s }
	s := newServer(t)
	w := addWorld(t, s, 0, 1, 1)
	// Without GUILD_MESSAGES no MESSAGE_UPDATE: the next event is the
	// reaction's.
	g := connectWithIntents(t, s, gateway.IntentGuilds|gateway.IntentGuildMessageReactions, 1)

	// Discord unfolding a link changes the embeds but is no edit.
	embeds := []discord.Embed{{Type: discord.EmbedTypeImage, Thumbnail: &discord.EmbedResource{URL: "https://example.com/cat.png"}}}
	m, err := s.EditMessage(w.channel.ID, w.message.ID, discordtest.MessageEdit{Embeds: &embeds})
	if err != nil {
		t.Fatal(err)
	}
	if !m.EditedAt.IsZero() || len(m.Embeds) != 1 || m.Content != "look at this" || len(m.Attachments) != 1 {
		t.Errorf("after the embed: %+v", m)
	}
	if err := s.AddReaction(w.channel.ID, w.message.ID, w.user.UserID, "📌"); err != nil {
		t.Fatal(err)
	}
	if f := g.mustRead(); f.T != "MESSAGE_REACTION_ADD" {
		t.Errorf("without GUILD_MESSAGES got %s, want MESSAGE_REACTION_ADD", f.T)
	}

	// Reactions survive an edit; removing every attachment is an edit.
	m, err = s.EditMessage(w.channel.ID, w.message.ID, discordtest.MessageEdit{Attachments: &[]discordtest.Attachment{}})
	if err != nil {
		t.Fatal(err)
	}
	if m.EditedAt.IsZero() || len(m.Attachments) != 0 || len(m.Reactions) != 1 {
		t.Errorf("after removing the attachments: %+v", m)
	}

	for _, tc := range []struct {
		name             string
		channel, message snowflake.ID
		edit             discordtest.MessageEdit
		want             error
	}{
		{"unknown channel", 77, w.message.ID, discordtest.MessageEdit{Content: ptr("x")}, discordtest.ErrUnknownChannel},
		{"unknown message", w.channel.ID, 77, discordtest.MessageEdit{Content: ptr("x")}, discordtest.ErrUnknownMessage},
		{"no field", w.channel.ID, w.message.ID, discordtest.MessageEdit{}, discordtest.ErrInvalid},
		{"attachment the message lacks", w.channel.ID, w.message.ID, discordtest.MessageEdit{Attachments: &[]discordtest.Attachment{{ID: 77}}}, discordtest.ErrInvalid},
		{"empty message", w.channel.ID, w.message.ID, discordtest.MessageEdit{Content: ptr(""), Embeds: &[]discord.Embed{}}, discordtest.ErrInvalid},
	} {
		if _, err := s.EditMessage(tc.channel, tc.message, tc.edit); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if got, _ := s.Message(w.message.ID); got.Content != "look at this" || len(got.Embeds) != 1 {
		t.Errorf("refused edits changed the message: %+v", got)
	}
}
