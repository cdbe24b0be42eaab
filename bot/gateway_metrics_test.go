//go:build !race

// Like gateway_test.go, these tests open disgo's own gateway and are left
// out of -race builds; `make gateway` runs them.

package bot

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/disgo/sharding"
)

// readyObserver passes every report on and hands each ShardReady to a
// channel.
type readyObserver struct {
	Observer
	ready chan [3]int // shard, resumed, again
}

func (o readyObserver) ShardReady(shard int, resumed, again bool) {
	o.Observer.ShardReady(shard, resumed, again)
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	o.ready <- [3]int{shard, b(resumed), b(again)}
}

// TestDisgoGatewayShardMetrics opens two shards through disgo: both count
// as connected; a RECONNECT from Discord makes shard 0 resume (a reconnect
// and a resume); a close with 4004, after which disgo does not reconnect,
// leaves shard 1 down, and Shards and the gauge say so; Close leaves none.
func TestDisgoGatewayShardMetrics(t *testing.T) {
	w := newWorld(t, worldOptions{gateway: true, shards: 2})
	ready := make(chan [3]int, 16)
	w.bot.cfg.Observer = readyObserver{Observer: w.bot.cfg.Observer, ready: ready}
	closed := make(chan int, 4)
	w.bot.shardOpts = []sharding.ConfigOpt{
		sharding.WithIdentifyRateLimiter(gateway.NewNoopIdentifyRateLimiter()),
		// The bot's own close handler, telling the test when it ran.
		sharding.WithCloseHandler(func(g gateway.Gateway, err error, reconnect bool) {
			w.bot.shardClosed(g.ShardID(), err, reconnect)
			closed <- g.ShardID()
		}),
	}
	if w.bot.Shards() != nil {
		t.Fatalf("Shards before Start = %v, want nil", w.bot.Shards())
	}
	if err := w.bot.Start(w.ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	wait := func(what string) [3]int {
		t.Helper()
		select {
		case r := <-ready:
			return r
		case <-w.ctx.Done():
			t.Fatalf("waiting for %s: %v", what, w.ctx.Err())
			return [3]int{}
		}
	}
	var first []int
	for range 2 {
		r := wait("the first READYs")
		if r[1] != 0 || r[2] != 0 {
			t.Fatalf("first ready of shard %d: resumed %d, again %d; want neither", r[0], r[1], r[2])
		}
		first = append(first, r[0])
	}
	slices.Sort(first)
	if !slices.Equal(first, []int{0, 1}) {
		t.Fatalf("first READYs of shards %v, want 0 and 1", first)
	}
	if got, want := w.bot.Shards(), []ShardState{{0, true}, {1, true}}; !slices.Equal(got, want) {
		t.Fatalf("Shards = %v, want %v", got, want)
	}
	w.checkMetrics("two shards ready",
		metric{"pinbot_gateway_shards_connected", nil, 2},
		metric{"pinbot_gateway_reconnects_total", nil, 0},
		metric{"pinbot_gateway_resumes_total", nil, 0},
	)

	// Discord asks shard 0 to reconnect: disgo resumes its session.
	if err := w.dc.Reconnect(0); err != nil {
		t.Fatal(err)
	}
	if r := wait("the resume"); r != [3]int{0, 1, 1} {
		t.Fatalf("after RECONNECT: ShardReady%v, want shard 0 resumed again", r)
	}
	w.checkMetrics("shard 0 resumed",
		metric{"pinbot_gateway_shards_connected", nil, 2},
		metric{"pinbot_gateway_reconnects_total", nil, 1},
		metric{"pinbot_gateway_resumes_total", nil, 1},
	)

	// 4004 (authentication failed): disgo gives the shard up.
	if err := w.dc.Disconnect(1, 4004); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-closed:
		if id != 1 {
			t.Fatalf("shard %d closed, want 1", id)
		}
	case <-w.ctx.Done():
		t.Fatal("shard 1 never closed")
	}
	if got, want := w.bot.Shards(), []ShardState{{0, true}, {1, false}}; !slices.Equal(got, want) {
		t.Fatalf("Shards after shard 1 closed = %v, want %v", got, want)
	}
	w.checkMetrics("shard 1 down",
		metric{"pinbot_gateway_shards_connected", nil, 1},
	)
	if !strings.Contains(w.logs.String(), "gateway shard closed and will not reconnect") {
		t.Error("no error logged for the shard that stays down")
	}

	if err := w.bot.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.checkMetrics("closed",
		metric{"pinbot_gateway_shards_connected", nil, 0},
	)
}
