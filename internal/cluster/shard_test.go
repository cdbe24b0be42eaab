package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pinbot/pinbot/internal/etcdtest"
)

// shardWorld records the members' tenures of gateway shards as a world
// records its partitions', under the world's lock and sequence.
type shardWorld struct {
	*world
	count   int
	tenures map[int][]*served
	// released counts each member's graceful releases, lost its losses.
	released, lost map[string]*atomic.Int64
}

func newShardWorld(w *world, count int) *shardWorld {
	return &shardWorld{world: w, count: count, tenures: make(map[int][]*served),
		released: make(map[string]*atomic.Int64), lost: make(map[string]*atomic.Int64)}
}

// config is the world's member configuration with shard callbacks that
// record their tenures.
func (sw *shardWorld) config(id string) Config {
	cfg := sw.world.config(id)
	sw.mu.Lock()
	rel, lost := &atomic.Int64{}, &atomic.Int64{}
	sw.released[id], sw.lost[id] = rel, lost
	sw.mu.Unlock()
	cfg.Shards = ShardConfig{
		Count: sw.count,
		Acquired: func(s int) error {
			sw.mu.Lock()
			sw.seq++
			sw.tenures[s] = append(sw.tenures[s], &served{member: id, start: sw.clock.Now(), end: forever, startSeq: sw.seq})
			sw.mu.Unlock()
			sw.notify()
			return nil
		},
		Lost: func(s int) {
			lost.Add(1)
			sw.end(id, s, "lost")
		},
		Release: func(ctx context.Context, s int) error {
			if sw.end(id, s, "release") == nil {
				sw.fail("%s: Release of shard %d it does not serve", id, s)
			}
			rel.Add(1)
			return nil
		},
	}
	return cfg
}

func (sw *shardWorld) end(id string, s int, how string) *served {
	now := sw.clock.Now()
	sw.mu.Lock()
	var found *served
	sw.seq++
	ts := sw.tenures[s]
	for i := len(ts) - 1; i >= 0; i-- {
		if t := ts[i]; t.member == id && t.end == forever {
			t.end, t.endSeq, t.how = now, sw.seq, how
			found = t
			break
		}
	}
	sw.mu.Unlock()
	sw.notify()
	return found
}

// settled reports whether every shard is held and served by exactly one of
// the members that run shards, its desired owner among them, and every
// member sees it so.
func (sw *shardWorld) settled(ms ...*Member) bool {
	var ids []string
	for _, m := range ms {
		if !m.Ready() || m.Status().Moving != 0 || m.Status().Members != len(ms) {
			return false
		}
		if m.cfg.Shards.Count > 0 {
			ids = append(ids, m.ID())
		}
	}
	holders := make(map[int][]string)
	for _, m := range ms {
		for _, s := range m.HeldShards() {
			holders[s] = append(holders[s], m.ID())
		}
	}
	for s := range sw.count {
		h := holders[s]
		if len(h) != 1 || h[0] != desiredShard(ids, s) {
			return false
		}
		for _, m := range ms {
			if owners := m.ShardOwners(); len(owners) > 0 && owners[s] != h[0] {
				return false
			}
		}
		sw.mu.Lock()
		ts := sw.tenures[s]
		open := len(ts) > 0 && ts[len(ts)-1].member == h[0] && ts[len(ts)-1].end == forever
		sw.mu.Unlock()
		if !open {
			return false
		}
	}
	return true
}

// check verifies that no shard was ever served by two members at once:
// each tenure ended (Release or Lost) before the next began, by the clock
// and by the order of callbacks.
func (sw *shardWorld) check() {
	sw.t.Helper()
	sw.world.check()
	sw.mu.Lock()
	defer sw.mu.Unlock()
	for s, ts := range sw.tenures {
		for i := 1; i < len(ts); i++ {
			a, b := ts[i-1], ts[i]
			if a.end > b.start || a.endSeq > b.startSeq {
				sw.t.Errorf("shard %d: %s served [%v, %v) and %s from %v: overlap", s, a.member, a.start, a.end, b.member, b.start)
			}
		}
	}
}

// serving reports whether member id's tenure is the open last one of
// each of shards.
func (sw *shardWorld) serving(id string, shards []int) bool {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	for _, s := range shards {
		ts := sw.tenures[s]
		if len(ts) == 0 || ts[len(ts)-1].member != id || ts[len(ts)-1].end != forever {
			return false
		}
	}
	return true
}

func (sw *shardWorld) shardTenures(s int) []served {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	var out []served
	for _, t := range sw.tenures[s] {
		out = append(out, *t)
	}
	return out
}

func TestShardConfigValidate(t *testing.T) {
	w := newWorld(t, etcdtest.Start, 1, 4, testTTL)
	sw := newShardWorld(w, 3)
	good := sw.config("a")
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	for name, change := range map[string]func(*ShardConfig){
		"Shards.Count":    func(c *ShardConfig) { c.Count = -1 },
		"Shards.Acquired": func(c *ShardConfig) { c.Acquired = nil },
		"Shards.Lost":     func(c *ShardConfig) { c.Lost = nil },
		"Shards.Release":  func(c *ShardConfig) { c.Release = nil },
	} {
		c := good
		change(&c.Shards)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("with a bad %s: Validate() = %v", name, err)
		}
	}
	// No shards, no callbacks needed.
	c := good
	c.Shards = ShardConfig{}
	if err := c.Validate(); err != nil {
		t.Errorf("without shards: Validate() = %v", err)
	}
}

// Shards are leased like partitions: the first member holds every one, a
// member that joins takes those it wins by a graceful handover (the old
// owner's Release before the new owner's Acquired), a member without
// shards takes none, a member with another shard count is refused, and a
// member that leaves hands its shards back.
func TestShardsJoinAndLeave(t *testing.T) {
	w := newWorld(t, etcdtest.Start, 1, 4, testTTL)
	sw := newShardWorld(w, 8)
	a := w.start(sw.config("a"))
	sw.waitFor("a to hold every shard", func() bool { return sw.settled(a) })
	if st := a.Status(); st.HeldShards != 8 || st.Shards != 8 || st.Held != 4 {
		t.Fatalf("a's status: %+v, want 8 of 8 shards and 4 partitions held", st)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	other := sw.config("x")
	other.Shards.Count = 5
	if _, err := Start(ctx, other); err == nil || !strings.Contains(err.Error(), "runs 8 gateway shards") {
		t.Fatalf("Start with 5 shards in a cluster of 8 = %v", err)
	}

	// c runs no shards: it takes partitions only.
	c := w.start(w.config("c"))
	b := w.start(sw.config("b"))
	sw.waitFor("a and b to share the shards", func() bool { return sw.settled(a, b, c) && w.settled(a, b, c) })
	if len(c.HeldShards()) != 0 {
		t.Errorf("c, without shards, holds shards %v", c.HeldShards())
	}
	if len(a.HeldShards()) == 0 || len(b.HeldShards()) == 0 {
		t.Fatalf("a holds shards %v, b %v: one holds none", a.HeldShards(), b.HeldShards())
	}
	for _, s := range b.HeldShards() {
		ts := sw.shardTenures(s)
		if len(ts) != 2 || ts[0].member != "a" || ts[0].how != "release" || ts[1].member != "b" {
			t.Errorf("shard %d reached b without a's release: %+v", s, ts)
		}
	}
	if got, want := sw.released["a"].Load(), int64(len(b.HeldShards())); got != want {
		t.Errorf("a released %d shards, want %d", got, want)
	}
	if got := w.counted("b").acquired.Load(); got != int64(len(b.Held())) {
		t.Errorf("b's observer saw %d partitions acquired, holds %d: shards counted as partitions?", got, len(b.Held()))
	}

	bHeld := b.HeldShards()
	if err := b.Close(ctx); err != nil {
		t.Fatalf("b.Close: %v", err)
	}
	sw.waitFor("a to hold every shard again", func() bool { return sw.settled(a, c) })
	for _, s := range bHeld {
		ts := sw.shardTenures(s)
		if n := len(ts); n < 3 || ts[n-2].member != "b" || ts[n-2].how != "release" || ts[n-1].member != "a" {
			t.Errorf("shard %d after b closed: %+v, want b's release then a", s, ts)
		}
	}
	if got := sw.lost["a"].Load() + sw.lost["b"].Load(); got != 0 {
		t.Errorf("%d shards lost in graceful moves", got)
	}
	sw.check()
}

// A member whose keep-alives stop loses its shards at its serving
// deadline, before its lease can expire; the survivor that should own
// them opens them only once the dead member's keys are gone.
func TestShardsOfDeadMember(t *testing.T) {
	w := newWorld(t, etcdtest.Start, 1, 4, testTTL)
	sw := newShardWorld(w, 6)
	a := w.start(sw.config("a"))
	st := stall{clock: w.clock, last: w.clock.Now()}
	cb := sw.config("b")
	cb.hooks.keepAlive = st.hook
	b := w.start(cb)
	sw.waitFor("a and b to share the shards", func() bool { return sw.settled(a, b) })
	bHeld := b.HeldShards()
	if len(bHeld) == 0 {
		t.Fatal("b holds no shard")
	}
	lost0 := sw.lost["b"].Load()
	// b checkpoints a session of one of its shards under its tenure.
	ss := NewShardSessions(w.etcd.Client(), w.keys)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s0 := bHeld[0]
	bRev, ok := b.ShardTenure(s0)
	if !ok {
		t.Fatalf("b holds shard %d but has no tenure of it", s0)
	}
	if _, ok := a.ShardTenure(s0); ok {
		t.Fatalf("a has a tenure of shard %d, which b holds", s0)
	}
	if done, err := ss.Checkpoint(ctx, s0, ShardSession{SessionID: "b", Sequence: 7}, bRev); !done || err != nil {
		t.Fatalf("b's checkpoint = %v, %v", done, err)
	}

	st.set(true)
	// Held counts a shard from its owner key on; its tenure is recorded
	// by Acquired, after.
	sw.waitFor("a to take b's shards", func() bool {
		return len(a.HeldShards()) == 6 && len(b.HeldShards()) == 0 && sw.serving("a", bHeld)
	})
	if got := sw.lost["b"].Load() - lost0; got < int64(len(bHeld)) {
		t.Errorf("b lost %d shards, held %d", got, len(bHeld))
	}
	expiry := st.lastSent() + b.Status().TTL
	for _, s := range bHeld {
		ts := sw.shardTenures(s)
		last := ts[len(ts)-1]
		if last.member != "a" || last.start < expiry {
			t.Errorf("shard %d: a took it at %v, before b's lease could expire (%v): %+v", s, last.start, expiry, ts)
		}
	}
	// The next holder takes b's last checkpoint; b, its lease gone, can
	// no longer overwrite what a stores.
	if got, ok, err := ss.Take(ctx, s0); !ok || err != nil || got.SessionID != "b" || got.Sequence != 7 {
		t.Fatalf("a took %+v, %v, %v, want b's checkpoint", got, ok, err)
	}
	if _, ok := b.ShardTenure(s0); ok {
		t.Errorf("b still has a tenure of shard %d after losing it", s0)
	}
	aRev, ok := a.ShardTenure(s0)
	if !ok || aRev == bRev {
		t.Fatalf("a's tenure of shard %d = %d, %v (b's was %d)", s0, aRev, ok, bRev)
	}
	if done, err := ss.Checkpoint(ctx, s0, ShardSession{SessionID: "b", Sequence: 9}, bRev); done || err != nil {
		t.Errorf("b's stale checkpoint = %v, %v, want refused", done, err)
	}
	if done, err := ss.Checkpoint(ctx, s0, ShardSession{SessionID: "a", Sequence: 3}, aRev); !done || err != nil {
		t.Errorf("a's checkpoint = %v, %v", done, err)
	}
	if got, ok, _ := ss.Take(ctx, s0); !ok || got.SessionID != "a" {
		t.Errorf("stored session %+v, %v, want a's", got, ok)
	}
	st.set(false)
	sw.waitFor("b back with its shards", func() bool { return sw.settled(a, b) })
	sw.check()
}

// A failed Acquired gives the shard back and it is taken again later; a
// failed Release is followed by Lost.
func TestShardCallbackErrors(t *testing.T) {
	w := newWorld(t, etcdtest.Start, 1, 2, testTTL)
	sw := newShardWorld(w, 2)
	cfg := sw.config("a")
	var fails atomic.Int64
	acquired := cfg.Shards.Acquired
	cfg.Shards.Acquired = func(s int) error {
		if s == 1 && fails.Add(1) == 1 {
			return errors.New("gateway not ready")
		}
		return acquired(s)
	}
	release := cfg.Shards.Release
	cfg.Shards.Release = func(ctx context.Context, s int) error {
		_ = release(ctx, s)
		return errors.New("session not stored")
	}
	a := w.start(cfg)
	sw.waitFor("a to hold both shards", func() bool { return sw.settled(a) })
	if fails.Load() < 2 {
		t.Errorf("shard 1 acquired %d times, want a failure then success", fails.Load())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Close(ctx); err == nil || !strings.Contains(err.Error(), "release shard") {
		t.Errorf("Close with failing releases = %v", err)
	}
	if got := sw.lost["a"].Load(); got != 2 {
		t.Errorf("a lost %d shards after failed releases, want 2", got)
	}
}

// LeaveShards hands a member's shards to the others by graceful release,
// keeps its partitions, and acquires no shard after; the last member
// running shards that leaves them releases them to nobody.
func TestLeaveShards(t *testing.T) {
	w := newWorld(t, etcdtest.Start, 1, 4, testTTL)
	sw := newShardWorld(w, 6)
	a := w.start(sw.config("a"))
	b := w.start(sw.config("b"))
	sw.waitFor("a and b to share the shards", func() bool { return sw.settled(a, b) && w.settled(a, b) })
	bShards, bParts := b.HeldShards(), b.Held()
	if len(bShards) == 0 || len(bParts) == 0 {
		t.Fatalf("b holds shards %v, partitions %v: want some of each", bShards, bParts)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.LeaveShards(ctx); err != nil {
		t.Fatalf("b.LeaveShards: %v", err)
	}
	if got := b.HeldShards(); len(got) != 0 {
		t.Fatalf("b holds shards %v after LeaveShards returned", got)
	}
	sw.waitFor("a to hold every shard", func() bool { return len(a.HeldShards()) == 6 && sw.serving("a", bShards) })
	for _, s := range bShards {
		ts := sw.shardTenures(s)
		if n := len(ts); n < 2 || ts[n-2].member != "b" || ts[n-2].how != "release" || ts[n-1].member != "a" {
			t.Errorf("shard %d after b left the shards: %+v, want b's release then a", s, ts)
		}
	}
	if got := b.Held(); !slices.Equal(got, bParts) {
		t.Errorf("b's partitions %v after LeaveShards, were %v", got, bParts)
	}
	if !b.Ready() {
		t.Error("b not ready after leaving its shards")
	}
	if got := sw.lost["a"].Load() + sw.lost["b"].Load(); got != 0 {
		t.Errorf("%d shards lost", got)
	}

	// A third member joins: b takes no shard back, c takes its share.
	c := w.start(sw.config("c"))
	sw.waitFor("a and c to share the shards", func() bool {
		return len(a.HeldShards())+len(c.HeldShards()) == 6 && len(c.HeldShards()) > 0 && w.settled(a, b, c)
	})
	if got := b.HeldShards(); len(got) != 0 {
		t.Errorf("b, having left the shards, holds %v", got)
	}

	// The last two leave: the shards are released and nobody holds them.
	for _, m := range []*Member{a, c} {
		if err := m.LeaveShards(ctx); err != nil {
			t.Fatalf("%s.LeaveShards: %v", m.ID(), err)
		}
	}
	for _, m := range []*Member{a, b, c} {
		if got := m.HeldShards(); len(got) != 0 {
			t.Errorf("%s holds shards %v after every member left them", m.ID(), got)
		}
	}
	sw.waitFor("every member to see no shard owner", func() bool {
		for _, m := range []*Member{a, b, c} {
			for _, o := range m.ShardOwners() {
				if o != "" {
					return false
				}
			}
		}
		return true
	})
	if got := sw.lost["a"].Load() + sw.lost["b"].Load() + sw.lost["c"].Load(); got != 0 {
		t.Errorf("%d shards lost", got)
	}
	sw.check()
}
