//go:build !race

// These tests open disgo's own gateway. disgo v0.19.6's Gateway.CloseWithCode
// races with its heartbeat goroutine (upstream), so they are left out of
// -race builds; `make gateway` runs them without -race.

package bot

import (
	"fmt"
	"slices"
	"testing"

	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/disgo/sharding"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// TestDisgoGatewayStartPinClose runs the bot as in production: Start
// syncs the commands with one bulk overwrite and opens two shards through
// disgo's sharding package (the count Discord recommends); /pin from a
// guild on each shard is answered; Close drains and closes the gateway.
func TestDisgoGatewayStartPinClose(t *testing.T) {
	w := newWorld(t, worldOptions{gateway: true, shards: 2})
	w.bot.shardOpts = []sharding.ConfigOpt{sharding.WithIdentifyRateLimiter(gateway.NewNoopIdentifyRateLimiter())}
	if err := w.bot.Start(w.ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	for shard := range 2 {
		if _, err := w.dc.WaitShardReady(w.ctx, shard); err != nil {
			t.Fatalf("shard %d: %v", shard, err)
		}
	}
	syncs := w.dc.CommandSyncs()
	if len(syncs) != 1 || syncs[0].GuildID != 0 {
		t.Fatalf("command syncs %+v, want one global bulk overwrite", syncs)
	}
	want := []string{cmdPin, cmdPinMessage, cmdSettings, cmdLink, cmdUnlink, cmdQueue, cmdServer, cmdAutopin}
	if !slices.Equal(syncs[0].Names, want) {
		t.Fatalf("synced %v, want %v", syncs[0].Names, want)
	}

	for shard := range 2 {
		// A guild ID whose shard is (id >> 22) % 2.
		g, err := w.dc.AddGuild(discordtest.Guild{ID: snowflake.ID(uint64(10*2+shard)<<22 | 1)})
		if err != nil {
			t.Fatal(err)
		}
		gotShard := int((uint64(g.ID) >> 22) % 2)
		ch, err := w.dc.AddChannel(discordtest.Channel{GuildID: g.ID, Name: "pins"})
		if err != nil {
			t.Fatal(err)
		}
		m, err := w.dc.AddMember(discordtest.Member{GuildID: g.ID, Username: fmt.Sprintf("user%d", shard)})
		if err != nil {
			t.Fatal(err)
		}
		w.link(m.UserID, fmt.Sprintf("10%d", shard), fmt.Sprintf("pinner%d", shard))
		msg := w.addImages(ch.ID, 1, "")
		in := w.interact(discordtest.Invocation{ChannelID: ch.ID, UserID: m.UserID,
			Data: discordtest.ChatInput{Name: cmdPin, Options: []discordtest.CommandOption{{Name: optMessages, Value: msg.ID.String()}}}})
		if in.ShardID != gotShard {
			t.Fatalf("interaction went to shard %d, want %d", in.ShardID, gotShard)
		}
		w.waitDone(in)
		must(t, w.text(in), "1 pinned.", "12-hour pin count: 1/100")
	}
	if err := w.bot.Close(w.ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := w.dc.DuplicateAcks(); n != 0 {
		t.Fatalf("%d duplicate acknowledgements", n)
	}
}
