//go:build !race

// These tests open disgo's own gateway, whose v0.19.6 CloseWithCode races
// with its heartbeat goroutine (upstream): they are left out of -race
// builds, and `make gateway` runs them.

package app

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/cluster"
	"github.com/pinbot/pinbot/internal/etcdtest"
)

// connectedShards returns the shards a's bot holds, and whether every one
// is connected.
func connectedShards(a *App) ([]int, bool) {
	var ids []int
	all := true
	for _, s := range a.Bot.Shards() {
		ids = append(ids, s.ID)
		all = all && s.Connected
	}
	return ids, all
}

// TestDisgoGatewayClusterShards: in a cluster the gateway's shards are
// leased among the members. The first member takes Discord's recommended
// count for the cluster and opens every shard, one IDENTIFY per five
// seconds (max_concurrency 1); a member that joins takes its shards over
// by a graceful move, resuming their sessions (RESUME, not IDENTIFY); a
// member that leaves hands its shards back the same way. Each member's
// bot reports the shards it holds, and no shard is held by both.
func TestDisgoGatewayClusterShards(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	dc, ps := discordtest.NewServer(discordtest.WithShardCount(2)), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	build := func(member string) *App {
		cfg := clusterConfig(t, dc, ps, etcd.Endpoints(), member)
		cfg.Bot.Shards = 0 // Discord's recommendation
		a, err := Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return a
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond) // shards move through etcd's watches and the gateway
		}
	}

	a1 := build("m1")
	defer a1.Close(context.Background())
	waitFor("m1 to hold both shards, connected", func() bool {
		ids, ok := connectedShards(a1)
		return ok && slices.Equal(ids, []int{0, 1})
	})
	if a1.shards.count != 2 {
		t.Fatalf("cluster shard count %d, want Discord's 2", a1.shards.count)
	}
	s0, _ := dc.Session(0)
	s1, _ := dc.Session(1)
	gap := s1.IdentifiedAt.Sub(s0.IdentifiedAt).Abs()
	if gap < cluster.IdentifyWindow {
		t.Errorf("the two IDENTIFYs of bucket 0 came %v apart, want at least %v", gap, cluster.IdentifyWindow)
	}

	a2 := build("m2")
	var moved int
	waitFor("the shards to be shared", func() bool {
		ids1, ok1 := connectedShards(a1)
		ids2, ok2 := connectedShards(a2)
		if !ok1 || !ok2 || len(ids1) != 1 || len(ids2) != 1 || ids1[0] == ids2[0] {
			return false
		}
		moved = ids2[0]
		return true
	})
	if dc.Resumes(moved) != 1 || dc.Identifies(moved) != 1 {
		t.Errorf("shard %d moved to m2 with %d resumes, %d identifies; want a resume of its session", moved, dc.Resumes(moved), dc.Identifies(moved))
	}
	if got := a2.node.Member.HeldShards(); !slices.Equal(got, []int{moved}) {
		t.Errorf("m2's membership holds shards %v, its bot %d", got, moved)
	}

	if err := a2.Close(ctx); err != nil {
		t.Fatalf("m2's Close: %v", err)
	}
	waitFor("m1 to hold both shards again", func() bool {
		ids, ok := connectedShards(a1)
		return ok && slices.Equal(ids, []int{0, 1})
	})
	if dc.Resumes(moved) != 2 || dc.Identifies(moved) != 1 {
		t.Errorf("shard %d back on m1 with %d resumes, %d identifies; want a second resume", moved, dc.Resumes(moved), dc.Identifies(moved))
	}
	if failing := a1.ready.check(ctx); len(failing) != 0 {
		t.Errorf("m1 not ready: %v", failing)
	}
}
