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

// TestDisgoGatewayReactions: with OnReaction, the shard identifies with
// GUILD_MESSAGE_REACTIONS and hands each reaction added and taken off to
// it, in order; without, it identifies with no intent and the stand-in
// sends it no reaction.
func TestDisgoGatewayReactions(t *testing.T) {
	for _, on := range []bool{true, false} {
		dc := discordtest.NewServer()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		got := make(chan Reaction, 4)
		cfg := GatewayConfig{
			Token: dc.Token(), URL: dc.GatewayURL(), Shards: 1,
			Log:             slog.New(slog.NewTextHandler(io.Discard, nil)),
			IdentifyLimiter: gateway.NewNoopIdentifyRateLimiter(),
		}
		if on {
			cfg.OnReaction = func(r Reaction) { got <- r }
		}
		g := NewGateway(cfg)
		if err := g.Open(ctx); err != nil {
			t.Fatal(err)
		}
		sess, ok := dc.Session(0)
		want := discordtest.Intents(0)
		if on {
			want = discordtest.IntentGuildMessageReactions
		}
		if !ok || sess.Intents != want {
			t.Fatalf("reactions %v: session %+v, want intents %v", on, sess, want)
		}
		guild, err := dc.AddGuild(discordtest.Guild{})
		if err != nil {
			t.Fatal(err)
		}
		ch, _ := dc.AddChannel(discordtest.Channel{GuildID: guild.ID})
		alice, _ := dc.AddMember(discordtest.Member{GuildID: guild.ID, Username: "alice"})
		m, err := dc.AddMessage(discordtest.Message{ChannelID: ch.ID, Content: "cat"})
		if err != nil {
			t.Fatal(err)
		}
		if err := dc.AddReaction(ch.ID, m.ID, alice.UserID, "📌"); err != nil {
			t.Fatal(err)
		}
		if err := dc.RemoveReaction(ch.ID, m.ID, alice.UserID, "📌"); err != nil {
			t.Fatal(err)
		}
		if on {
			for _, added := range []bool{true, false} {
				select {
				case r := <-got:
					want := Reaction{Added: added, UserID: alice.UserID, ChannelID: ch.ID, MessageID: m.ID, GuildID: guild.ID, Emoji: "📌"}
					if r != want {
						t.Fatalf("reaction %+v, want %+v", r, want)
					}
				case <-ctx.Done():
					t.Fatal("no reaction handed on")
				}
			}
		}
		g.Close(ctx)
		cancel()
		dc.Close()
	}
}
