package cluster

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/partition"
)

// A handover that does not end (a Release stuck) holds back neither the
// partitions a dead member leaves to this member nor the handed-over
// partition's next owner beyond the handover; once Release returns, the
// cluster settles.
func TestSlowHandoverDoesNotHoldAcquisitions(t *testing.T) {
	w := newWorld(t, etcdtest.Start, 1, 16, testTTL)
	a := w.start(w.config("a"))
	st := stall{clock: w.clock, last: w.clock.Now()}
	cb := w.config("b")
	cb.hooks.keepAlive = st.hook
	b := w.start(cb)
	w.waitFor("a and b to share the partitions", func() bool { return w.settled(a, b) })

	// a's Releases block until the test ends them.
	unblock := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(unblock) }) }
	defer release()
	releasing := make(chan partition.ID, 16)
	w.mu.Lock()
	w.releaseFn["a"] = func(_ context.Context, p partition.ID) error {
		releasing <- p
		<-unblock // not ctx: stuck past the handover's timeout
		return nil
	}
	w.mu.Unlock()
	c := w.start(w.config("c"))
	stuck := <-releasing

	// b dies: of its partitions, those a should own with b gone are a's
	// to acquire while its handover to c is stuck.
	var toA []partition.ID
	for _, p := range b.Held() {
		if desired([]string{"a", "c"}, p) == "a" {
			toA = append(toA, p)
		}
	}
	if len(toA) == 0 {
		t.Fatal("no partition of b goes to a with b gone: the test needs another layout")
	}
	st.set(true)
	w.waitFor("a to acquire b's partitions while its handover is stuck", func() bool {
		held := a.Held()
		for _, p := range toA {
			if !slices.Contains(held, p) {
				return false
			}
		}
		return true
	})
	if ts := w.tenuresOf(stuck); ts[len(ts)-1].member != "a" || ts[len(ts)-1].how != "release" {
		t.Fatalf("partition %d: %+v, want a's release still under way", stuck, ts)
	}

	release()
	w.mu.Lock()
	delete(w.releaseFn, "a")
	w.mu.Unlock()
	w.waitFor("a and c to share the partitions", func() bool { return w.settled(a, c) })
	w.check()
}

// A Release that does not end within the handover's timeout is cut
// short: the partition is lost (its actors stopped without writing) and
// its key deleted, and the next owner takes it at once.
func TestHandoverTimeout(t *testing.T) {
	w := newWorld(t, etcdtest.Start, 1, 4, testTTL)
	a := w.start(w.config("a"))
	w.waitFor("a to hold every partition", func() bool { return w.settled(a) })
	w.mu.Lock()
	w.releaseFn["a"] = func(ctx context.Context, _ partition.ID) error {
		<-ctx.Done()
		return ctx.Err()
	}
	w.mu.Unlock()
	lost0 := w.counted("a").lost.Load()
	b := w.start(w.config("b"))
	start := w.clock.Now()
	w.waitFor("a and b to share the partitions", func() bool { return w.settled(a, b) })
	took := w.clock.Now() - start
	w.mu.Lock()
	delete(w.releaseFn, "a")
	w.mu.Unlock()
	moved := int64(len(b.Held()))
	if moved == 0 {
		t.Fatal("b holds no partition")
	}
	if got := w.counted("a").lost.Load() - lost0; got != moved {
		t.Errorf("a lost %d partitions after its Releases timed out, want %d", got, moved)
	}
	if got := w.counted("a").handedOver.Load(); got != 0 {
		t.Errorf("a counted %d handovers done, want 0", got)
	}
	if limit := 2*a.handoverTimeout() + testTTL; took > limit {
		t.Errorf("b took %v to hold its partitions, want at most %v", took, limit)
	}
	for p := range partition.ID(4) {
		ts := w.tenuresOf(p)
		if last := ts[len(ts)-1]; last.member == "b" && (len(ts) < 2 || ts[len(ts)-2].how != "release") {
			t.Errorf("partition %d: %+v", p, ts)
		}
	}
	w.check()
}

// countKV counts the transactions begun through it.
type countKV struct {
	clientv3.KV
	n *atomic.Int64
}

func (k countKV) Txn(ctx context.Context) clientv3.Txn {
	k.n.Add(1)
	return k.KV.Txn(ctx)
}

// Members starting together settle with a bounded number of etcd
// transactions: an acquisition that finds the key taken, or a stale key
// deleted, is not tried again before the member's view has caught up
// with etcd's answer, and a round plans from every watch event already
// received, not from one at a time.
func TestStartTogetherTxns(t *testing.T) {
	const parts = 128
	w := newWorld(t, etcdtest.Start, 1, parts, testTTL)
	var txns atomic.Int64
	ids := []string{"a", "b", "c"}
	cfgs := make([]Config, len(ids))
	for i, id := range ids {
		cfgs[i] = w.config(id)
		cli := w.etcd.Client()
		cli.KV = countKV{KV: cli.KV, n: &txns}
		cfgs[i].Client = cli
		// Loaded processes: each round takes a while, and watch events
		// pile up meanwhile.
		cfgs[i].hooks.reconciling = func() { time.Sleep(5 * time.Millisecond) }
	}
	ms := make([]*Member, len(ids))
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() { ms[i] = w.start(cfgs[i]) })
	}
	wg.Wait()
	w.waitFor("the three to share the partitions", func() bool { return w.settled(ms...) })
	got := txns.Load()
	t.Logf("%d transactions for %d partitions", got, parts)
	// Each partition: an acquisition by its first taker, perhaps a
	// handover's delete and a second acquisition, a few refused attempts.
	if limit := int64(8 * parts); got > limit {
		t.Errorf("%d transactions to settle %d partitions among 3 members, want at most %d", got, parts, limit)
	}
	w.check()
}
