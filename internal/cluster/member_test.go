package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/partition"
)

// Leases in these tests: etcd's shortest with etcdtest's timing is a
// second; two leave keep-alives room on a loaded machine.
const testTTL = 2 * time.Second

func TestConfigValidate(t *testing.T) {
	good := Config{
		Client: &clientv3.Client{}, Keys: partition.NewKeys("/x"), Member: "a", Partitions: 4,
		Acquired: func(partition.ID, partition.Fence) error { return nil },
		Lost:     func(partition.ID) {},
		Release:  func(context.Context, partition.ID) error { return nil },
	}
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	for name, change := range map[string]func(*Config){
		"Client":     func(c *Config) { c.Client = nil },
		"Prefix":     func(c *Config) { c.Keys = partition.Keys{Prefix: "/x"} },
		"Member":     func(c *Config) { c.Member = "a/b" },
		"Partitions": func(c *Config) { c.Partitions = 0 },
		"LeaseTTL":   func(c *Config) { c.LeaseTTL = -time.Second },
		"Margin":     func(c *Config) { c.Margin = 2 * time.Second },
		"Acquired":   func(c *Config) { c.Acquired = nil },
		"Lost":       func(c *Config) { c.Lost = nil },
		"Release":    func(c *Config) { c.Release = nil },
	} {
		c := good
		change(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("with a bad %s: Validate() = %v", name, err)
		}
	}
}

func TestStartUnreachable(t *testing.T) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = Start(ctx, Config{
		Client: cli, Keys: partition.NewKeys("/x"), Member: "a", Partitions: 4, Log: zerolog.Nop(),
		Acquired: func(partition.ID, partition.Fence) error { return nil },
		Lost:     func(partition.ID) {},
		Release:  func(context.Context, partition.ID) error { return nil },
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start with etcd unreachable = %v, want the context's deadline", err)
	}
}

// A member acquires every partition, shares them by rendezvous when
// another joins (handover: Release before the key's deletion, the new
// owner's Acquired after), refuses what it does not hold, and hands
// everything back when closed.
func TestJoinHandoverAndClose(t *testing.T) { testJoinHandoverAndClose(t, etcdtest.Start) }

func testJoinHandoverAndClose(t *testing.T, startEtcd etcdtest.Starter) {
	w := newWorld(t, startEtcd, 1, 16, testTTL)
	a := w.start(w.config("a"))
	w.waitFor("a to hold every partition", func() bool { return w.settled(a) })

	// One duplicate id is refused while a lives.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := Start(ctx, w.config("a")); !errors.Is(err, ErrMemberExists) {
		t.Fatalf("second Start of a = %v, want ErrMemberExists", err)
	}

	// A member with another partition count is refused before it
	// registers: a never sees it.
	other := w.config("x")
	other.Partitions = 8
	if _, err := Start(ctx, other); err == nil || !strings.Contains(err.Error(), "runs 16 partitions") {
		t.Fatalf("Start with 8 partitions in a cluster of 16 = %v", err)
	}
	if got := a.Members(); len(got) != 1 {
		t.Fatalf("a sees %+v", got)
	}

	// While a hands a partition over, requests for it get ErrMoved there.
	var once sync.Once
	moved := make(chan error, 1)
	w.mu.Lock()
	w.releaseFn["a"] = func(_ context.Context, p partition.ID) error {
		once.Do(func() {
			_, err := a.Serving(w.accountOf(p))
			moved <- err
		})
		return nil
	}
	// b's first load of one partition fails: it gives the partition back
	// and takes it again later.
	var failOnce sync.Once
	failed := make(chan partition.ID, 1)
	w.acquireFn["b"] = func(p partition.ID, _ partition.Fence) (err error) {
		failOnce.Do(func() {
			err = errors.New("state unreadable")
			failed <- p
		})
		return err
	}
	w.mu.Unlock()

	b := w.start(w.config("b"))
	w.waitFor("a and b to share the partitions", func() bool { return w.settled(a, b) })
	if err := <-moved; !errors.Is(err, ErrMoved) {
		t.Errorf("Serving during the handover = %v, want ErrMoved", err)
	}
	select {
	case p := <-failed:
		if ts := w.tenuresOf(p); len(ts) == 0 || ts[len(ts)-1].member != "b" {
			t.Errorf("partition %d, whose first load failed, is not b's: %+v", p, ts)
		}
	default:
		t.Error("b never failed a load")
	}
	if len(a.Held()) == 0 || len(b.Held()) == 0 {
		t.Fatalf("a holds %v, b %v: one holds nothing", a.Held(), b.Held())
	}
	// a handed over each of b's partitions once; b failed to load one.
	if ca, cb := w.counted("a"), w.counted("b"); ca.handedOver.Load() != int64(len(b.Held())) || cb.acquired.Load() != int64(len(b.Held())) || ca.lost.Load() != 0 {
		t.Errorf("a handed over %d and lost %d, b acquired %d; b holds %d",
			ca.handedOver.Load(), ca.lost.Load(), cb.acquired.Load(), len(b.Held()))
	}
	for p := range partition.ID(w.partitions) {
		account := w.accountOf(p)
		holder, other := a, b
		if desired([]string{"a", "b"}, p) == "b" {
			holder, other = b, a
		}
		f, err := holder.Serving(account)
		if err != nil || f.Partition != p {
			t.Errorf("%s.Serving(partition %d) = %v, %v", holder.ID(), p, f, err)
		}
		if g, ok := holder.Fence(p); !ok || g != f {
			t.Errorf("%s.Fence(%d) = %v, %v, want %v", holder.ID(), p, g, ok, f)
		}
		if _, err := other.Serving(account); !errors.Is(err, ErrNotOwner) {
			t.Errorf("%s.Serving(partition %d) = %v, want ErrNotOwner", other.ID(), p, err)
		}
		if _, ok := other.Fence(p); ok {
			t.Errorf("%s.Fence(%d) held", other.ID(), p)
		}
		for _, m := range []*Member{a, b} {
			if info, ok := m.OwnerOf(account); !ok || info.ID != holder.ID() || info.Addr != holder.ID()+".test:80" {
				t.Errorf("%s.OwnerOf(partition %d) = %+v, %v, want %s", m.ID(), p, info, ok, holder.ID())
			}
		}
	}
	// Every partition b holds came from a by a handover.
	for _, p := range b.Held() {
		ts := w.tenuresOf(p)
		if len(ts) < 2 || ts[0].member != "a" || ts[0].how != "release" {
			t.Errorf("partition %d reached b without a's release: %+v", p, ts)
		}
	}
	if got := a.Members(); len(got) != 2 || got[0].ID != "a" || got[1].ID != "b" || got[1].Partitions != w.partitions {
		t.Errorf("Members() = %+v", got)
	}

	// b leaves: everything it held goes back to a by handover.
	bHeld := b.Held()
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.Close(ctx); err != nil {
		t.Fatalf("b.Close: %v", err)
	}
	if got := b.Held(); len(got) != 0 || b.Ready() {
		t.Errorf("after Close b holds %v, ready %v", got, b.Ready())
	}
	w.waitFor("a to hold everything again", func() bool { return w.settled(a) })
	if got := w.counted("b").handedOver.Load(); got != int64(len(bHeld)) {
		t.Errorf("b handed over %d partitions, want %d", got, len(bHeld))
	}
	for _, p := range bHeld {
		ts := w.tenuresOf(p)
		if len(ts) < 2 || ts[len(ts)-2].member != "b" || ts[len(ts)-2].how != "release" || ts[len(ts)-1].member != "a" {
			t.Errorf("partition %d after b closed: %+v, want b's release then a", p, ts)
		}
	}
	resp, err := w.cli.Get(ctx, w.keys.Member("b"))
	if err != nil || len(resp.Kvs) != 0 {
		t.Errorf("b's member key after Close: %v, %v", resp, err)
	}
	w.check()
}

func (w *world) tenuresOf(p partition.ID) []served {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []served
	for _, s := range w.tenures[p] {
		out = append(out, *s)
	}
	return out
}

// A member whose keep-alives stop (a stopped process) stops serving at
// its deadline, by its clock, while etcd still answers; its partitions'
// new owners begin only once its lease can have expired. Resumed, it
// finds its lease gone, joins again and gets its partitions back.
func TestStalledMemberStopsAtDeadline(t *testing.T) {
	testStalledMemberStopsAtDeadline(t, etcdtest.Start)
}

func testStalledMemberStopsAtDeadline(t *testing.T, startEtcd etcdtest.Starter) {
	w := newWorld(t, startEtcd, 3, 12, testTTL)
	a := w.start(w.config("a"))
	// Before b's grant: its lease lives a TTL from later than that.
	st := stall{clock: w.clock, last: w.clock.Now()}
	cb := w.config("b")
	cb.hooks.keepAlive = st.hook
	b := w.start(cb)
	c := w.start(w.config("c"))
	w.waitFor("three members to share the partitions", func() bool { return w.settled(a, b, c) })

	// Stalled after a keep-alive was acknowledged: b's deadline is the
	// keep-alive's.
	d0 := b.Status().Deadline
	w.waitFor("a keep-alive of b", func() bool { return b.Status().Deadline > d0 })
	bHeld := b.Held()
	// A machine under load may have delayed b's keep-alives past its
	// deadline before (a lapse, as it should be): count from here.
	counts := w.counted("b")
	lapsed0, lost0, expired0 := counts.lapsed.Load(), counts.lost.Load(), counts.expired.Load()
	st.set(true)
	w.waitFor("b to stop serving", func() bool { return len(b.Held()) == 0 })
	bs := b.Status()
	deadline := bs.Deadline
	margin := DefaultMargin(bs.TTL)
	// b's lease lives at least until its last keep-alive's sending plus
	// the TTL, which is no earlier than expiry: b must have stopped
	// serving before.
	expiry := st.lastSent() + bs.TTL
	if deadline >= expiry {
		t.Errorf("b serves until %v, not before its lease can expire (%v)", deadline, expiry)
	}
	for _, p := range bHeld {
		if _, err := b.Serving(w.accountOf(p)); !errors.Is(err, ErrNotOwner) {
			t.Errorf("stalled b serves partition %d: %v", p, err)
		}
	}
	w.waitFor("a and c to take b's partitions", func() bool { return w.settled(a, c) })
	for _, p := range bHeld {
		ts := w.tenuresOf(p)
		old, next := ts[len(ts)-2], ts[len(ts)-1]
		if old.member != "b" || old.how != "lost" || old.end < deadline || old.end >= expiry {
			t.Errorf("partition %d: b's tenure %+v, want lost from its deadline %v, before its lease can expire (%v)", p, old, deadline, expiry)
		}
		// The lease lives until the last acknowledged keep-alive's
		// sending plus the TTL: the deadline plus the margin.
		if next.start < deadline+margin {
			t.Errorf("partition %d: %s began at %v, before b's lease could expire (%v)", p, next.member, next.start, deadline+margin)
		}
	}

	if cb := w.counted("b"); cb.lapsed.Load()-lapsed0 != 1 || cb.lost.Load()-lost0 != int64(len(bHeld)) {
		t.Errorf("stalled, b lapsed %d times and lost %d partitions, want 1 and %d", cb.lapsed.Load()-lapsed0, cb.lost.Load()-lost0, len(bHeld))
	}

	st.set(false)
	w.waitFor("b to be back with its partitions", func() bool { return w.settled(a, b, c) })
	if got := w.counted("b").expired.Load() - expired0; got != 1 {
		t.Errorf("after the stall, b found its lease expired %d times, want 1", got)
	}
	if got := b.Held(); !slices.Equal(got, bHeld) {
		t.Errorf("b holds %v again, want %v", got, bHeld)
	}
	w.check()
}

// The etcd leader stopped mid-run: ownership recovers, never doubled.
func TestLeaderLoss(t *testing.T) { testLeaderLoss(t, etcdtest.Start, (*etcdtest.Cluster).Stop) }

// testLeaderLoss runs TestLeaderLoss over startEtcd's cluster, whose
// leader stop ends.
func testLeaderLoss(t *testing.T, startEtcd etcdtest.Starter, stop func(c *etcdtest.Cluster, i int)) {
	w := newWorld(t, startEtcd, 3, 12, testTTL)
	a, b, c := w.start(w.config("a")), w.start(w.config("b")), w.start(w.config("c"))
	w.waitFor("three members to share the partitions", func() bool { return w.settled(a, b, c) })
	leader := w.etcd.Leader()
	if leader < 0 {
		t.Fatal("no etcd leader")
	}
	stop(w.etcd, leader)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := w.etcd.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	// Keep-alives sent after the new leader's election are acknowledged,
	// and the members still watch and hand over: a fourth joins.
	t0 := w.clock.Now()
	d := w.start(w.config("d"))
	w.waitFor("four members to share the partitions", func() bool {
		for _, m := range []*Member{a, b, c, d} {
			if s := m.Status(); s.Deadline < t0+s.TTL-DefaultMargin(s.TTL) {
				return false
			}
		}
		return w.settled(a, b, c, d)
	})
	w.check()
}

// The serving deadline is kept by the member's own clock: with
// keep-alives stalled it serves until the last instant before it, and
// loses everything at it while etcd and its lease are fine. A keep-alive
// acknowledged again ends the lapse: the member takes its partitions
// again under new fences.
func TestDeadlineByClock(t *testing.T) { testDeadlineByClock(t, etcdtest.Start) }

func testDeadlineByClock(t *testing.T, startEtcd etcdtest.Starter) {
	w := newWorld(t, startEtcd, 1, 4, 10*time.Second)
	clock := &manualClock{}
	w.clock = clock
	st := stall{clock: clock}
	st.set(true)
	sw := newShardWorld(w, 2)
	cfg := sw.config("a")
	cfg.Margin = 2 * time.Second
	cfg.hooks.keepAlive = st.hook
	a := w.start(cfg)
	w.waitFor("a to hold every partition and shard", func() bool { return w.settled(a) && sw.settled(a) })
	fences := map[partition.ID]partition.Fence{}
	for p := range partition.ID(w.partitions) {
		fences[p], _ = a.Fence(p)
	}
	// The shards' tenures end at the same instant as the partitions'.
	tenures := map[int]int64{}
	for s := range sw.count {
		tenures[s], _ = a.ShardTenure(s)
	}
	if got := a.Status().Deadline; got != 8*time.Second {
		t.Fatalf("deadline %v, want the grant's sending (0) + TTL - margin", got)
	}

	clock.Set(8*time.Second - time.Millisecond)
	for p := range partition.ID(w.partitions) {
		if f, ok := a.Fence(p); !ok || f != fences[p] {
			t.Errorf("Fence(%d) = %v, %v just before the deadline", p, f, ok)
		}
	}
	for s, rev := range tenures {
		if got, ok := a.ShardTenure(s); !ok || got != rev {
			t.Errorf("ShardTenure(%d) = %d, %v just before the deadline, want %d", s, got, ok, rev)
		}
	}
	clock.Set(8 * time.Second)
	for s := range tenures {
		if _, ok := a.ShardTenure(s); ok {
			t.Errorf("ShardTenure(%d) held at the deadline", s)
		}
	}
	for p := range partition.ID(w.partitions) {
		if _, ok := a.Fence(p); ok {
			t.Errorf("Fence(%d) held at the deadline", p)
		}
		if _, err := a.Serving(w.accountOf(p)); !errors.Is(err, ErrNotOwner) {
			t.Errorf("Serving(partition %d) = %v at the deadline", p, err)
		}
	}
	// Held empties before the Lost callbacks that record the tenures'
	// ends have all run: wait for both.
	w.waitFor("every partition lost", func() bool {
		if len(a.Held()) != 0 || a.Ready() {
			return false
		}
		for p := range partition.ID(w.partitions) {
			if ts := w.tenuresOf(p); len(ts) != 1 || ts[0].how == "" {
				return false
			}
		}
		return true
	})
	for p := range partition.ID(w.partitions) {
		if ts := w.tenuresOf(p); len(ts) != 1 || ts[0].how != "lost" || ts[0].end != 8*time.Second {
			t.Errorf("partition %d: %+v, want lost at 8s", p, ts)
		}
	}

	// Keep-alives go through again (the lease lived): the member takes
	// every partition again, with new fences.
	st.set(false)
	w.waitFor("a to serve again", func() bool { return w.settled(a) })
	if got, want := a.Status().Deadline, 16*time.Second; got != want {
		t.Errorf("deadline %v, want the keep-alive's sending (8s) + TTL - margin", got)
	}
	for p := range partition.ID(w.partitions) {
		if f, ok := a.Fence(p); !ok || f.Revision <= fences[p].Revision {
			t.Errorf("Fence(%d) = %v, %v, want newer than %v", p, f, ok, fences[p])
		}
	}
	w.check()
}
