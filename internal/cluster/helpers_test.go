package cluster

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/logtest"
	"github.com/pinbot/pinbot/internal/partition"
)

// manualClock is a Clock that moves only when told.
type manualClock struct {
	mu      sync.Mutex
	now     time.Duration
	waiters []manualWaiter
}

type manualWaiter struct {
	at time.Duration
	ch chan struct{}
}

func (c *manualClock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Wake(at time.Duration) (<-chan struct{}, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	if at <= c.now {
		close(ch)
		return ch, func() {}
	}
	c.waiters = append(c.waiters, manualWaiter{at, ch})
	return ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.waiters = slices.DeleteFunc(c.waiters, func(w manualWaiter) bool { return w.ch == ch })
	}
}

// Set moves the clock to t, waking the waits due.
func (c *manualClock) Set(t time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	c.waiters = slices.DeleteFunc(c.waiters, func(w manualWaiter) bool {
		if w.at <= t {
			close(w.ch)
			return true
		}
		return false
	})
}

const forever = time.Duration(math.MaxInt64)

// world is a cluster under test: an etcd cluster, members started on it
// with callbacks that record what each member serves, on one clock.
type world struct {
	t          *testing.T
	etcd       *etcdtest.Cluster
	cli        *clientv3.Client
	keys       partition.Keys
	partitions int
	ttl        time.Duration
	clock      Clock
	logs       *logtest.Buffer

	mu        sync.Mutex
	seq       int
	tenures   map[partition.ID][]*served // in order of fence
	changed   chan struct{}              // closed and replaced at every change
	errs      []string                   // what a callback found wrong
	members   map[string]*Member
	acquireFn map[string]func(partition.ID, partition.Fence) error
	releaseFn map[string]func(context.Context, partition.ID) error
	accounts  []string // one of each partition
	counts    map[string]*counts
}

// counts is an Observer that counts.
type counts struct {
	acquired, lost, handedOver, lapsed, expired atomic.Int64
}

func (c *counts) Acquired(partition.ID)   { c.acquired.Add(1) }
func (c *counts) Lost(partition.ID)       { c.lost.Add(1) }
func (c *counts) HandedOver(partition.ID) { c.handedOver.Add(1) }
func (c *counts) Lapsed()                 { c.lapsed.Add(1) }
func (c *counts) LeaseExpired()           { c.expired.Add(1) }

// counted returns member id's counts.
func (w *world) counted(id string) *counts {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.counts[id]
	if c == nil {
		c = &counts{}
		w.counts[id] = c
	}
	return c
}

// served is one member's tenure of a partition as its callbacks saw it:
// from Acquired to Release or Lost, by the shared clock and by the order
// of callbacks.
type served struct {
	member     string
	fence      partition.Fence
	start, end time.Duration // end is forever while open
	startSeq   int
	endSeq     int
	how        string // "release" or "lost" once ended
}

// newWorld returns a world over an etcd cluster of etcdMembers, of
// startEtcd's.
func newWorld(t *testing.T, startEtcd etcdtest.Starter, etcdMembers, partitions int, ttl time.Duration) *world {
	t.Helper()
	w := &world{
		t:          t,
		etcd:       startEtcd(t, etcdMembers),
		keys:       partition.NewKeys("/test/" + t.Name()),
		partitions: partitions,
		ttl:        ttl,
		clock:      SystemClock(),
		logs:       &logtest.Buffer{},
		tenures:    make(map[partition.ID][]*served),
		changed:    make(chan struct{}),
		members:    make(map[string]*Member),
		acquireFn:  make(map[string]func(partition.ID, partition.Fence) error),
		releaseFn:  make(map[string]func(context.Context, partition.ID) error),
		counts:     make(map[string]*counts),
	}
	w.cli = w.etcd.Client()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("members' log:\n%s", w.logs.String())
		}
	})
	return w
}

func (w *world) notify() {
	w.mu.Lock()
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
}

func (w *world) fail(format string, args ...any) {
	w.mu.Lock()
	w.errs = append(w.errs, fmt.Sprintf(format, args...))
	w.mu.Unlock()
	w.notify()
}

// config returns a member's configuration whose callbacks record its
// tenures.
func (w *world) config(id string) Config {
	return Config{
		Client:     w.cli,
		Keys:       w.keys,
		Member:     id,
		Addr:       id + ".test:80",
		Partitions: w.partitions,
		LeaseTTL:   w.ttl,
		Clock:      w.clock,
		Log:        zerolog.New(w.logs).With().Timestamp().Logger(),
		Observer:   w.counted(id),
		Acquired: func(p partition.ID, f partition.Fence) error {
			if f.Partition != p || f.Revision <= 0 {
				w.fail("%s: Acquired(%d, %+v)", id, p, f)
			}
			w.mu.Lock()
			fn := w.acquireFn[id]
			w.mu.Unlock()
			if fn != nil {
				if err := fn(p, f); err != nil {
					return err
				}
			}
			w.mu.Lock()
			w.seq++
			w.tenures[p] = append(w.tenures[p], &served{member: id, fence: f, start: w.clock.Now(), end: forever, startSeq: w.seq})
			w.mu.Unlock()
			w.notify()
			return nil
		},
		Lost: func(p partition.ID) { w.end(id, p, "lost") },
		Release: func(ctx context.Context, p partition.ID) error {
			s := w.end(id, p, "release")
			if s == nil {
				w.fail("%s: Release(%d) of a partition it does not serve", id, p)
				return nil
			}
			// The key is still this tenure's while Release runs.
			resp, err := w.cli.Get(ctx, w.keys.Owner(p))
			if err != nil {
				return err
			}
			if len(resp.Kvs) != 1 || resp.Kvs[0].CreateRevision != s.fence.Revision {
				w.fail("%s: Release(%d) called after its key (fence %d) was gone: %v", id, p, s.fence.Revision, resp.Kvs)
			}
			w.mu.Lock()
			fn := w.releaseFn[id]
			w.mu.Unlock()
			if fn != nil {
				return fn(ctx, p)
			}
			return nil
		},
		hooks: hooks{changed: w.notify},
	}
}

// end closes member id's open tenure of p, if any, and returns it.
func (w *world) end(id string, p partition.ID, how string) *served {
	now := w.clock.Now()
	w.mu.Lock()
	var found *served
	w.seq++
	ts := w.tenures[p]
	for i := len(ts) - 1; i >= 0; i-- {
		if s := ts[i]; s.member == id && s.end == forever {
			s.end, s.endSeq, s.how = now, w.seq, how
			found = s
			break
		}
	}
	w.mu.Unlock()
	w.notify()
	return found
}

// start starts member id with cfg, closed when the test ends.
func (w *world) start(cfg Config) *Member {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := Start(ctx, cfg)
	if err != nil {
		w.t.Fatalf("Start(%s): %v", cfg.Member, err)
	}
	w.mu.Lock()
	w.members[cfg.Member] = m
	w.mu.Unlock()
	w.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		m.Close(ctx)
	})
	return m
}

// waitFor waits until cond holds, looking again at every change of the
// members' state, for at most 30 seconds.
func (w *world) waitFor(what string, cond func() bool) {
	w.t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		w.mu.Lock()
		ch := w.changed
		errs := w.errs
		w.mu.Unlock()
		if len(errs) > 0 {
			w.t.Fatalf("while waiting for %s: %v", what, errs)
		}
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-timeout.C:
			w.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// settled reports whether every partition is held by exactly one of ms,
// its desired owner among them, every one of them ready and serving it.
func (w *world) settled(ms ...*Member) bool {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID()
		if !m.Ready() {
			return false
		}
		if st := m.Status(); st.Members != len(ms) || st.Moving != 0 {
			return false
		}
	}
	holders := make(map[partition.ID][]string)
	for _, m := range ms {
		for _, p := range m.Held() {
			holders[p] = append(holders[p], m.ID())
		}
	}
	for p := range partition.ID(w.partitions) {
		h := holders[p]
		if len(h) != 1 || h[0] != desired(ids, p) {
			return false
		}
		// Every member sees the holder as the owner.
		for _, m := range ms {
			if info, ok := m.OwnerOf(w.accountOf(p)); !ok || info.ID != h[0] {
				return false
			}
		}
	}
	return true
}

// check verifies what the callbacks recorded: per partition, tenures
// follow one another, each ending (Release or Lost) before the next one
// starts, by the clock and by the order of callbacks, with growing fences.
func (w *world) check() {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.errs {
		w.t.Error(e)
	}
	for p, ts := range w.tenures {
		for i := 1; i < len(ts); i++ {
			a, b := ts[i-1], ts[i]
			if b.fence.Revision <= a.fence.Revision {
				w.t.Errorf("partition %d: fence %d of %s after fence %d of %s", p, b.fence.Revision, b.member, a.fence.Revision, a.member)
			}
			if a.end > b.start || a.endSeq > b.startSeq {
				w.t.Errorf("partition %d: %s served [%v, %v) and %s from %v: overlap", p, a.member, a.start, a.end, b.member, b.start)
			}
		}
	}
}

// accountOf returns an account of partition p.
func (w *world) accountOf(p partition.ID) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.accounts == nil {
		w.accounts = make([]string, w.partitions)
		for i, left := 0, w.partitions; left > 0; i++ {
			a := fmt.Sprintf("account-%d", i)
			if q := partition.Of(a, w.partitions); w.accounts[q] == "" {
				w.accounts[q] = a
				left--
			}
		}
	}
	return w.accounts[p]
}

// stall is a keep-alive hook that blocks the member's keep-alives while
// on, as if the process were stopped.
type stall struct {
	clock Clock
	mu    sync.Mutex
	ch    chan struct{} // nil: not stalled
	last  time.Duration // when a keep-alive was last let through
}

func (s *stall) hook(ctx context.Context) {
	s.mu.Lock()
	ch := s.ch
	s.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
	s.mu.Lock()
	s.last = s.clock.Now()
	s.mu.Unlock()
}

// lastSent returns when the last keep-alive let through was, at the
// latest, sent.
func (s *stall) lastSent() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *stall) set(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case on && s.ch == nil:
		s.ch = make(chan struct{})
	case !on && s.ch != nil:
		close(s.ch)
		s.ch = nil
	}
}
