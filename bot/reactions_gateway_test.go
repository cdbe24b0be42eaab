//go:build !race

// These tests open disgo's own gateway. disgo v0.19.6's Gateway.CloseWithCode
// races with its heartbeat goroutine (upstream), so they are left out of
// -race builds; `make gateway` runs them without -race.

package bot

import (
	"testing"

	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/disgo/sharding"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/internal/discordio"
)

// TestDisgoGatewayReactionIntents runs the bot as in production: with
// reactions on, Start identifies with GUILD_MESSAGE_REACTIONS alone and a
// 📌 pins through disgo's gateway; with them off, it identifies with no
// intent.
func TestDisgoGatewayReactionIntents(t *testing.T) {
	for _, off := range []bool{false, true} {
		// Auto-pin off: the reactions' intent alone (see TestDisgoGatewayAutopin).
		w := newWorld(t, worldOptions{gateway: true, bot: func(c *Config) { c.NoReactions, c.NoAutopin = off, true }})
		done := make(chan string, 4)
		w.bot.reactions.onDone = func(_ discordio.Reaction, result string) { done <- result }
		w.bot.shardOpts = []sharding.ConfigOpt{sharding.WithIdentifyRateLimiter(gateway.NewNoopIdentifyRateLimiter())}
		if err := w.bot.Start(w.ctx); err != nil {
			t.Fatalf("Start: %v", err)
		}
		s, err := w.dc.WaitShardReady(w.ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := discordtest.IntentGuildMessageReactions
		if off {
			want = 0
		}
		if s.Intents != want {
			t.Fatalf("reactions off %v: identified with intents %v, want %v", off, s.Intents, want)
		}
		if off {
			continue
		}
		alice := w.addUser("alice")
		w.link(alice, "a1", "alice_art")
		m := w.addImages(w.channel.ID, 1, "cat")
		if err := w.dc.AddReaction(m.ChannelID, m.ID, alice, "📌"); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			if r != reactionRan {
				t.Fatalf("result %q, want %q", r, reactionRan)
			}
		case <-w.ctx.Done():
			t.Fatal("the reaction was not handled")
		}
		if n := len(w.ps.PinsFor("a1")); n != 1 {
			t.Fatalf("%d pins, want 1", n)
		}
	}
}
