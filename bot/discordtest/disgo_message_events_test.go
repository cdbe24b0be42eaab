//go:build !race

package discordtest_test

import (
	"context"
	"testing"

	"github.com/disgoorg/disgo/bot"
	"github.com/disgoorg/disgo/events"
	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/disgo/handler"
	"github.com/disgoorg/disgo/sharding"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// receive returns the next value of ch, failing the test when ctx ends.
func receive[T any](ctx context.Context, t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		var zero T
		t.Fatalf("no %T received: %v", zero, ctx.Err())
		return zero
	}
}

// TestDisgoGatewayReactionsAndEdits has a disgo client, identified with
// the intents reactions and edits need, receive them as its events.
func TestDisgoGatewayReactionsAndEdits(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := newServer(t)
	w := addWorld(t, s, 0, 1, 1)
	adds := make(chan *events.GuildMessageReactionAdd, 4)
	removes := make(chan *events.GuildMessageReactionRemove, 4)
	updates := make(chan *events.GuildMessageUpdate, 4)
	newGatewayBot(t, s, handler.New(), gateway.CompressionZlibStream,
		bot.WithShardManagerConfigOpts(sharding.WithGatewayConfigOpts(gateway.WithIntents(
			gateway.IntentGuildMessages, gateway.IntentGuildMessageReactions, gateway.IntentMessageContent,
		))),
		bot.WithEventListenerFunc(func(e *events.GuildMessageReactionAdd) { adds <- e }),
		bot.WithEventListenerFunc(func(e *events.GuildMessageReactionRemove) { removes <- e }),
		bot.WithEventListenerFunc(func(e *events.GuildMessageUpdate) { updates <- e }),
	)
	if _, err := s.WaitShardReady(ctx, 0); err != nil {
		t.Fatal(err)
	}

	if err := s.AddReaction(w.channel.ID, w.message.ID, w.user.UserID, "📌"); err != nil {
		t.Fatal(err)
	}
	add := receive(ctx, t, adds)
	if add.UserID != w.user.UserID || add.ChannelID != w.channel.ID || add.MessageID != w.message.ID ||
		add.GuildID != w.guild.ID || add.Emoji.Reaction() != "📌" || add.Emoji.ID != nil ||
		add.Member.User.ID != w.user.UserID || add.Member.GuildID != w.guild.ID ||
		add.MessageAuthorID == nil || *add.MessageAuthorID != w.user.UserID || add.Burst {
		t.Errorf("GuildMessageReactionAdd = %+v %+v", add, add.GenericGuildMessageReaction)
	}

	if err := s.RemoveReaction(w.channel.ID, w.message.ID, w.user.UserID, "📌"); err != nil {
		t.Fatal(err)
	}
	rm := receive(ctx, t, removes)
	if rm.UserID != w.user.UserID || rm.MessageID != w.message.ID || rm.GuildID != w.guild.ID || rm.Emoji.Reaction() != "📌" {
		t.Errorf("GuildMessageReactionRemove = %+v", rm.GenericGuildMessageReaction)
	}

	content := "now with a dog"
	edited, err := s.EditMessage(w.channel.ID, w.message.ID, discordtest.MessageEdit{
		Content:     &content,
		Attachments: &[]discordtest.Attachment{{ID: w.message.Attachments[0].ID}, {Filename: "dog.png", ContentType: "image/png"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	up := receive(ctx, t, updates)
	if up.MessageID != w.message.ID || up.GuildID != w.guild.ID || up.Message.Content != content ||
		len(up.Message.Attachments) != 2 || up.Message.Attachments[1].ID != edited.Attachments[1].ID ||
		up.Message.EditedTimestamp == nil {
		t.Errorf("GuildMessageUpdate = %+v", up.Message)
	}
}
