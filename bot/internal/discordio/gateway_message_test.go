//go:build !race

// This test opens disgo's own gateway, whose CloseWithCode races with its
// heartbeat goroutine (upstream): it is left out of -race builds, and
// `make gateway` runs it.

package discordio

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/disgoorg/disgo/gateway"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// TestDisgoGatewayMessages: with OnMessage, the shard identifies with
// GUILD_MESSAGES and hands each guild message to it, in order, its
// attachments hidden without the message content intent, a bot's marked,
// then an edit and a delete;
// without, it identifies with no intent and gets no message.
func TestDisgoGatewayMessages(t *testing.T) {
	for _, on := range []bool{true, false} {
		dc := discordtest.NewServer()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		got := make(chan Message, 4)
		cfg := GatewayConfig{
			Token: dc.Token(), URL: dc.GatewayURL(), Shards: 1,
			Log:             slog.New(slog.NewTextHandler(io.Discard, nil)),
			IdentifyLimiter: gateway.NewNoopIdentifyRateLimiter(),
		}
		if on {
			cfg.OnMessage = func(m Message) { got <- m }
		}
		g := NewGateway(cfg)
		if err := g.Open(ctx); err != nil {
			t.Fatal(err)
		}
		sess, ok := dc.Session(0)
		want := discordtest.Intents(0)
		if on {
			want = discordtest.IntentGuildMessages
		}
		if !ok || sess.Intents != want {
			t.Fatalf("messages %v: session %+v, want intents %v", on, sess, want)
		}
		guild, err := dc.AddGuild(discordtest.Guild{})
		if err != nil {
			t.Fatal(err)
		}
		ch, _ := dc.AddChannel(discordtest.Channel{GuildID: guild.ID})
		alice, _ := dc.AddMember(discordtest.Member{GuildID: guild.ID, Username: "alice"})
		robot, _ := dc.AddMember(discordtest.Member{GuildID: guild.ID, Username: "robot", Bot: true})
		pic := []discordtest.Attachment{{Filename: "cat.png", ContentType: "image/png"}}
		m1, err := dc.AddMessage(discordtest.Message{ChannelID: ch.ID, AuthorID: alice.UserID, Attachments: pic})
		if err != nil {
			t.Fatal(err)
		}
		m2, err := dc.AddMessage(discordtest.Message{ChannelID: ch.ID, AuthorID: robot.UserID, Content: "beep"})
		if err != nil {
			t.Fatal(err)
		}
		if on {
			for _, want := range []Message{
				{GuildID: guild.ID, ChannelID: ch.ID, MessageID: m1.ID, AuthorID: alice.UserID},
				{GuildID: guild.ID, ChannelID: ch.ID, MessageID: m2.ID, AuthorID: robot.UserID, Bot: true},
			} {
				select {
				case m := <-got:
					if m != want {
						t.Fatalf("message %+v, want %+v", m, want)
					}
				case <-ctx.Done():
					t.Fatal("no message handed on")
				}
			}
			// An edit and a delete follow, in order.
			text := "edited"
			if _, err := dc.EditMessage(ch.ID, m1.ID, discordtest.MessageEdit{Content: &text}); err != nil {
				t.Fatal(err)
			}
			if err := dc.DeleteMessage(m1.ID); err != nil {
				t.Fatal(err)
			}
			for _, want := range []Message{
				{Kind: MessageUpdated, GuildID: guild.ID, ChannelID: ch.ID, MessageID: m1.ID, AuthorID: alice.UserID},
				{Kind: MessageDeleted, GuildID: guild.ID, ChannelID: ch.ID, MessageID: m1.ID},
			} {
				select {
				case m := <-got:
					if m != want {
						t.Fatalf("message %+v, want %+v", m, want)
					}
				case <-ctx.Done():
					t.Fatal("no message handed on")
				}
			}
		}
		g.Close(ctx)
		cancel()
		dc.Close()
	}
}
