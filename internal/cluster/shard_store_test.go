package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/partition"
)

// The first member to ask stores Discord's recommendation; later members
// use the stored count without asking; a configured count wins.
func TestShardCount(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	cli := etcd.Client()
	keys := partition.NewKeys("/test/shardcount/")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	asked := 0
	recommend := func(n int) func(context.Context) (int, error) {
		return func(context.Context) (int, error) { asked++; return n, nil }
	}
	if n, err := ShardCount(ctx, cli, keys, 0, recommend(3)); err != nil || n != 3 {
		t.Fatalf("first member: ShardCount = %d, %v, want 3", n, err)
	}
	if n, err := ShardCount(ctx, cli, keys, 0, recommend(5)); err != nil || n != 3 || asked != 1 {
		t.Fatalf("second member: ShardCount = %d, %v after %d questions, want the stored 3 without asking", n, err, asked)
	}
	if n, err := ShardCount(ctx, cli, keys, 7, recommend(5)); err != nil || n != 7 || asked != 1 {
		t.Fatalf("configured: ShardCount = %d, %v, want 7", n, err)
	}
	if _, err := ShardCount(ctx, cli, partition.NewKeys("/test/other/"), 0, func(context.Context) (int, error) {
		return 0, errors.New("discord down")
	}); err == nil {
		t.Fatal("ShardCount with Discord down and nothing stored succeeded")
	}
}

// A stored session is taken once.
func TestShardSessions(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	ss := NewShardSessions(etcd.Client(), partition.NewKeys("/test/sessions/"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, ok, err := ss.Take(ctx, 1); ok || err != nil {
		t.Fatalf("Take of nothing = %v, %v", ok, err)
	}
	want := ShardSession{SessionID: "s1", Sequence: 42, ResumeURL: "wss://resume.example"}
	if err := ss.Put(ctx, 1, want); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := ss.Take(ctx, 1); !ok || err != nil || got != want {
		t.Fatalf("Take = %+v, %v, %v, want %+v", got, ok, err, want)
	}
	if _, ok, _ := ss.Take(ctx, 1); ok {
		t.Fatal("a session was taken twice")
	}
}

// Two members' limiters: IDENTIFYs of one bucket are at least the window
// apart across members (the second Wait returns no sooner than the
// window after the first Unlock), those of another bucket are not held up.
func TestIdentifyLimiterAcrossMembers(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	keys := partition.NewKeys("/test/identify/")
	a := NewIdentifyLimiter(etcd.Client(), keys, 2, "a", nil, zerolog.Nop())
	b := NewIdentifyLimiter(etcd.Client(), keys, 2, "b", nil, zerolog.Nop())
	defer a.Close(context.Background())
	defer b.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if err := a.Wait(ctx, 0); err != nil {
		t.Fatal(err)
	}
	// A waiter for a's bucket stops with its context.
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	if err := b.Wait(short, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait past its context = %v", err)
	}
	// Shard 1 is bucket 1: free at once, even for the other member.
	if err := b.Wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	b.Unlock(1)

	var (
		wg       sync.WaitGroup
		returned time.Time
		werr     error
	)
	wg.Go(func() {
		// Shard 2 is bucket 0, a's.
		werr = b.Wait(ctx, 2)
		returned = time.Now()
	})
	unlocked := time.Now()
	a.Unlock(0)
	wg.Wait()
	if werr != nil {
		t.Fatal(werr)
	}
	if gap := returned.Sub(unlocked); gap < IdentifyWindow {
		t.Errorf("b identified in bucket 0 %v after a's unlock, want at least %v", gap, IdentifyWindow)
	}
	b.Unlock(2)
}
