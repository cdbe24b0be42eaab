package actors

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/badgerstore"
)

// countObserver counts every report of an engine.
type countObserver struct {
	granted, committed, released, expired atomic.Int64
	refused                               [RefusedQueue + 1]atomic.Int64
	loaded, snapshotted                   atomic.Int64

	mu            sync.Mutex
	batches       int
	batchWrites   int
	batchFailures int
}

func (o *countObserver) Granted(n int)        { o.granted.Add(int64(n)) }
func (o *countObserver) Refused(why Refusal)  { o.refused[why].Add(1) }
func (o *countObserver) Committed()           { o.committed.Add(1) }
func (o *countObserver) Released()            { o.released.Add(1) }
func (o *countObserver) LeaseExpired(n int)   { o.expired.Add(int64(n)) }
func (o *countObserver) Loaded(time.Duration) { o.loaded.Add(1) }
func (o *countObserver) Snapshotted(d time.Duration) {
	if d < 0 {
		panic("negative snapshot time")
	}
	o.snapshotted.Add(1)
}
func (o *countObserver) JournalBatch(writes int, _ time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.batches++
	o.batchWrites += writes
	if err != nil {
		o.batchFailures++
	}
}

var _ Observer = (*countObserver)(nil)

// counts is what a countObserver has counted, for comparisons.
type counts struct {
	granted, committed, released, expired int64
	limit, held, queue                    int64
	loaded                                int64
}

func (o *countObserver) counts() counts {
	return counts{
		granted: o.granted.Load(), committed: o.committed.Load(), released: o.released.Load(), expired: o.expired.Load(),
		limit: o.refused[RefusedLimit].Load(), held: o.refused[RefusedHeld].Load(), queue: o.refused[RefusedQueue].Load(),
		loaded: o.loaded.Load(),
	}
}

// TestEngineObserver drives one engine through every outcome its
// Observer reports, step by step on a manual clock, and checks the counts
// after each step.
func TestEngineObserver(t *testing.T) {
	obs := &countObserver{}
	ran := make(chan Job, 10)
	f := newFixture(t, func(c *Config) {
		c.Limit = 3
		c.Observer = obs
		c.OnJob = func(j Job) { ran <- j }
	})
	var want counts
	step := 0
	check := func(what string) {
		t.Helper()
		step++
		if got := obs.counts(); got != want {
			t.Fatalf("step %d (%s): counts %+v, want %+v", step, what, got, want)
		}
	}

	g := f.reserve("a", 2)
	rs := g.Reservations()
	want.granted, want.loaded = 2, 1
	check("two slots granted")
	if _, err := f.eng.Commit(f.ctx, rs[0], f.eng.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.Release(f.ctx, rs[1]); err != nil {
		t.Fatal(err)
	}
	want.committed, want.released = 1, 1
	check("one committed, one released")
	if _, err := f.eng.Release(f.ctx, rs[1]); !errors.Is(err, ErrUnknownReservation) {
		t.Fatalf("second Release: %v", err)
	}
	check("a second release of the same slot counts nothing")

	if g := f.reserve("a", 5); g.Granted != 2 {
		t.Fatalf("Reserve at 1/3: granted %d, want 2", g.Granted)
	}
	want.granted = 4
	check("the two slots left granted")
	if g := f.reserve("a", 1); g.Granted != 0 {
		t.Fatalf("Reserve at the limit granted %d", g.Granted)
	}
	want.limit = 1
	check("refused at the limit")

	f.clock.Advance(5 * time.Minute)
	f.status("a")
	want.expired = 2
	check("both pending leases expired")
	f.status("a")
	check("an expiry is reported once")

	if _, err := f.eng.Hold(f.ctx, "b", f.eng.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	want.loaded = 2
	if g := f.reserve("b", 1); g.Granted != 0 {
		t.Fatalf("Reserve while held granted %d", g.Granted)
	}
	want.held = 1
	check("refused while held")

	// A job that could not start goes back to wait a minute: the free
	// slot is its, not a caller's.
	f.fill("c", 2)
	want.granted, want.committed, want.loaded = 6, 3, 3
	check("c at 2/3")
	if q, err := f.eng.Enqueue(f.ctx, "c", [][]byte{[]byte("job")}); err != nil || len(q.Jobs) != 1 {
		t.Fatalf("Enqueue = %+v, %v", q, err)
	}
	j := <-ran
	want.granted = 7
	check("the job started in the free slot")
	if _, err := f.eng.Finish(f.ctx, j, Outcome{Retry: true, RetryAfter: time.Minute}); err != nil {
		t.Fatal(err)
	}
	want.released = 2
	check("the job's slot released for a retry")
	if g := f.reserve("c", 1); g.Granted != 0 {
		t.Fatalf("Reserve of the slot a job waits for granted %d", g.Granted)
	}
	want.queue = 1
	check("refused for the queue")
	f.clock.Advance(time.Minute)
	f.status("c")
	j = <-ran
	want.granted = 8
	check("the job started again")
	if _, err := f.eng.Finish(f.ctx, j, Outcome{Done: true, At: f.eng.Now()}); err != nil {
		t.Fatal(err)
	}
	want.committed = 4
	check("the job pinned")
	if g := f.reserve("c", 1); g.Granted != 0 {
		t.Fatalf("Reserve at the limit granted %d", g.Granted)
	}
	want.limit = 2
	check("refused at the limit")

	// Every grant, commit and release above was journaled by the group
	// commit, and nothing failed.
	obs.mu.Lock()
	batches, writes, failures := obs.batches, obs.batchWrites, obs.batchFailures
	obs.mu.Unlock()
	if batches == 0 || writes == 0 || failures != 0 {
		t.Errorf("journal batches %d carrying %d writes, %d failed; want some, none failed", batches, writes, failures)
	}

	// A grant whose write fails is not reported, and the batch's failure is.
	f.store.FailWrites(errors.New("disk error"))
	if _, err := f.eng.Reserve(f.ctx, "d", 1); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Reserve on a failing store: %v", err)
	}
	want.loaded = 4
	check("a failed grant is no grant")
	obs.mu.Lock()
	failures = obs.batchFailures
	obs.mu.Unlock()
	if failures == 0 {
		t.Error("the failed journal write was not reported")
	}
	f.store.FailWrites(nil)

	// Closing passivates every account: each with events not yet in a
	// snapshot writes one.
	if err := f.eng.Close(f.ctx); err != nil {
		t.Fatal(err)
	}
	if n := obs.snapshotted.Load(); n < 3 {
		t.Errorf("%d final snapshots reported at Close, want one per account written since its last (at least 3)", n)
	}
}

// TestEngineProbe: Probe succeeds while the store takes writes, and fails
// with the store's error when it does not: a failing disk, a closed
// store, a closed engine.
func TestEngineProbe(t *testing.T) {
	f := newFixture(t)
	if err := f.eng.Probe(f.ctx); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	before := f.store.Counts().Writes
	f.clock.Advance(time.Millisecond)
	if err := f.eng.Probe(f.ctx); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if n := f.store.Counts().Writes - before; n != 1 {
		t.Errorf("Probe made %d store writes, want 1", n)
	}
	errDisk := errors.New("disk error")
	f.store.FailWrites(errDisk)
	if err := f.eng.Probe(f.ctx); !errors.Is(err, errDisk) {
		t.Errorf("Probe on a failing store: %v, want the store's error", err)
	}
	f.store.FailWrites(nil)
	if err := f.eng.Probe(f.ctx); err != nil {
		t.Errorf("Probe once the store recovered: %v", err)
	}
	if err := f.eng.Close(f.ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.eng.Probe(f.ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Probe after Close: %v, want ErrClosed", err)
	}

	// A durable store closed under the engine.
	store, err := badgerstore.Open(t.TempDir(), badgerstore.Options{Durable: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	clock := NewManualClock(monday)
	eng, err := New(testConfig(clock), store, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	if err := eng.Probe(context.Background()); err != nil {
		t.Fatalf("Probe on an open Badger store: %v", err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Millisecond)
	if err := eng.Probe(context.Background()); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("Probe on a closed Badger store: %v, want persistence.ErrClosed", err)
	}
}
