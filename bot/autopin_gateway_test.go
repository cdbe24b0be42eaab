//go:build !race

// These tests open disgo's own gateway. disgo v0.19.6's Gateway.CloseWithCode
// races with its heartbeat goroutine (upstream), so they are left out of
// -race builds; `make gateway` runs them without -race.

package bot

import (
	"strings"
	"testing"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/disgo/sharding"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// TestDisgoGatewayAutopin runs the bot as in production: with auto-pin on,
// Start identifies with GUILD_MESSAGES beside the reactions' intent, and a
// picture posted in an auto-pin channel is queued through disgo's
// gateway; with it off, it asks for the reactions' intent alone.
func TestDisgoGatewayAutopin(t *testing.T) {
	for _, off := range []bool{false, true} {
		w := newWorld(t, worldOptions{gateway: true, jobs: true, bot: func(c *Config) { c.NoAutopin = off }})
		w.bot.shardOpts = []sharding.ConfigOpt{sharding.WithIdentifyRateLimiter(gateway.NewNoopIdentifyRateLimiter())}
		if err := w.bot.Start(w.ctx); err != nil {
			t.Fatalf("Start: %v", err)
		}
		s, err := w.dc.WaitShardReady(w.ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := discordtest.IntentGuildMessageReactions | discordtest.IntentGuildMessages
		if off {
			want = discordtest.IntentGuildMessageReactions
		}
		if s.Intents != want {
			t.Fatalf("auto-pin off %v: identified with intents %v, want %v", off, s.Intents, want)
		}
		if off {
			continue
		}
		mod := w.addMemberWith(w.guild.ID, "mod", discord.PermissionManageChannels)
		w.link(mod, "a1", "mod_art")
		inv := invocation{ctx: w.ctx, userID: mod, guildID: w.guild.ID, channelID: w.channel.ID, log: w.bot.log}
		ch := discord.ResolvedChannel{ID: w.channel.ID, Type: discord.ChannelTypeGuildText, Permissions: discord.PermissionManageChannels}
		if r := w.bot.autopinCommand(inv, subAutopinAdd, ch, "ba1"); !strings.Contains(r.content, "are queued") {
			t.Fatal(r.content)
		}
		done := w.watchAutopin()
		poster := w.addUser("poster")
		if _, err := w.dc.AddMessage(discordtest.Message{ChannelID: w.channel.ID, AuthorID: poster,
			Attachments: []discordtest.Attachment{{Filename: "cat.png", ContentType: "image/png"}}}); err != nil {
			t.Fatal(err)
		}
		if r := w.autopinResult(done); r != autopinQueued {
			t.Fatalf("result %q, want %q", r, autopinQueued)
		}
		w.nextJob()
		if n := len(w.ps.PinsFor("a1")); n != 1 {
			t.Fatalf("%d pins, want 1", n)
		}
	}
}
