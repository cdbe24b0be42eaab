package actors

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
	"github.com/rs/zerolog"
)

// gateStore wraps a Store; once armed, its next Write signals entered,
// waits for release, then fails with err without writing.
type gateStore struct {
	persistence.Store
	mu      sync.Mutex
	armed   bool
	err     error
	entered chan struct{}
	release chan struct{}
}

func (g *gateStore) arm(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.err = true, err
	g.entered = make(chan struct{})
	g.release = make(chan struct{})
}

func (g *gateStore) Write(ctx context.Context, b *persistence.Batch) error {
	g.mu.Lock()
	armed, err, entered, release := g.armed, g.err, g.entered, g.release
	g.armed = false
	g.mu.Unlock()
	if armed {
		close(entered)
		<-release
		return err
	}
	return g.Store.Write(ctx, b)
}

// signalWriter closes hit the first time a log line contains needle.
type signalWriter struct {
	needle []byte
	once   sync.Once
	hit    chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, w.needle) {
		w.once.Do(func() { close(w.hit) })
	}
	return len(p), nil
}

// userMessages returns how many user messages wait in pid's mailbox.
func userMessages(t *testing.T, e *Engine, pid *actor.PID) int {
	t.Helper()
	p, ok := e.system.ProcessRegistry.Get(pid)
	if !ok {
		t.Fatalf("no process for %v", pid)
	}
	ap, ok := p.(*actor.ActorProcess)
	if !ok {
		t.Fatalf("process %T", p)
	}
	v := reflect.ValueOf(ap).Elem().FieldByName("mailbox")
	mb := reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem().Interface().(actor.Mailbox)
	return mb.UserMessageCount()
}

// TestRollbackStaysWithItsIncarnation: a grant whose journal write fails is
// rolled back by a message to the actor's PID. When the actor is restarted
// meanwhile (its Restarting flush waits for exactly that failing write),
// the message lands in the next incarnation's mailbox. That incarnation
// loads in the same engine millisecond, so its reservation IDs start at the
// same now<<10 and the failed grant's IDs are handed out again, to another
// caller, durably. The rollback must not release that caller's
// acknowledged reservation (the engine would forget a granted slot, and the
// Commit of the pin made with it would fail, leaving the pin uncounted).
func TestRollbackStaysWithItsIncarnation(t *testing.T) {
	clock := NewManualClock(monday)
	mem := persistencetest.NewMemStore(clock.Now)
	gs := &gateStore{Store: mem}
	sig := &signalWriter{needle: []byte("account actor failed"), hit: make(chan struct{})}
	cfg := testConfig(clock)
	cfg.Limit = 3
	eng, err := New(cfg, gs, zerolog.New(sig))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	ctx := context.Background()

	if _, err := eng.Status(ctx, "a"); err != nil { // spawn and load
		t.Fatal(err)
	}
	sh := eng.reg.shard("a")
	sh.mu.RLock()
	pid := sh.m["a"].pid
	sh.mu.RUnlock()

	// X asks for every slot; its journal write will fail.
	gs.arm(errors.New("write: input/output error"))
	xDone := make(chan error, 1)
	go func() {
		_, err := eng.Reserve(ctx, "a", 3)
		xDone <- err
	}()
	<-gs.entered

	// The actor fails; its Restarting handler flushes the journal, which
	// waits for X's write.
	pDone := make(chan error, 1)
	go func() {
		_, err := eng.call(ctx, "a", request{op: opPanic})
		pDone <- err
	}()
	<-sig.hit

	// Y asks while the actor restarts: Y is served by the next incarnation.
	type res struct {
		g   Grant
		err error
	}
	yDone := make(chan res, 1)
	go func() {
		g, err := eng.Reserve(ctx, "a", 1)
		yDone <- res{g, err}
	}()
	for userMessages(t, eng, pid) < 1 {
		runtime.Gosched()
	}
	close(gs.release) // X's write fails now; the later writes succeed

	if err := <-xDone; !errors.Is(err, ErrUnavailable) {
		t.Fatalf("X: %v, want ErrUnavailable", err)
	}
	y := <-yDone
	if y.err != nil || y.g.Granted != 1 {
		t.Fatalf("Y: %+v, %v", y.g, y.err)
	}
	if err := <-pDone; !errors.Is(err, ErrActorFailed) {
		t.Fatalf("panic request: %v", err)
	}
	// Y holds an acknowledged, durable reservation: it must count.
	st, err := eng.Status(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if st.Used != 1 || st.Pending != 1 {
		t.Errorf("after Y's grant %d (reused ID, X's failed grant started at %d): used %d pending %d, want 1 and 1",
			y.g.First, uint64(monday.UnixMilli())<<10, st.Used, st.Pending)
	}
	if _, err := eng.Commit(ctx, y.g.Reservations()[0], eng.Now()); err != nil {
		t.Errorf("Commit of Y's acknowledged reservation: %v (the pin goes uncounted)", err)
	}
	// Three more slots are granted although Y's pin was made: 4 > limit 3.
	g, err := eng.Reserve(ctx, "a", 3)
	if err != nil {
		t.Fatalf("Reserve after Y's pin: %v", err)
	}
	if g.Granted+1 > cfg.Limit {
		t.Errorf("granted %d more after Y's pin: %d pins allowed with limit %d", g.Granted, g.Granted+1, cfg.Limit)
	}
}

// TestTTLFollowsTheWallClockAheadOfTheEngine: the engine clock starts at the
// stored high-water mark when the wall clock is behind it at start (set
// back while the bot was down). If the wall clock is corrected later (NTP),
// the engine clock, which ignores wall-clock jumps, lags it by the
// downtime, while the store's TTL (Badger's, here MemStore's, which follows
// the same rule) measures ExpiresAt against the wall clock. Written in
// engine time, every snapshot from then on would already be expired, and a
// passivated account would reload empty and get its whole limit again
// while its pins still count.
func TestTTLFollowsTheWallClockAheadOfTheEngine(t *testing.T) {
	var wallMu sync.Mutex
	wall := monday.UnixMilli()
	setWall := func(t time.Time) { wallMu.Lock(); wall = t.UnixMilli(); wallMu.Unlock() }
	mem := persistencetest.NewMemStore(func() int64 { wallMu.Lock(); defer wallMu.Unlock(); return wall })
	ctx := context.Background()

	// First run: one pin, then a clean shutdown.
	clock := NewManualClock(monday)
	eng, err := New(testConfig(clock), mem, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	g, err := eng.Reserve(ctx, "a", 1)
	if err != nil || g.Granted != 1 {
		t.Fatalf("Reserve: %+v %v", g, err)
	}
	if _, err := eng.Commit(ctx, g.Reservations()[0], eng.Now()); err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// Down for two days; the machine comes back with its clock an hour
	// before the stored high-water mark: the engine clock starts at the mark.
	startWall := monday.Add(-time.Hour)
	setWall(startWall)
	clock2 := NewManualClock(startWall) // RunningClock: wall at start, then monotonic
	cfg2 := testConfig(clock2)
	cfg2.Wall = func() int64 { wallMu.Lock(); defer wallMu.Unlock(); return wall }
	eng2, err := New(cfg2, mem, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng2.Close(ctx)
	stopped := make(chan string, 16)
	eng2.onStopped = func(a string) { stopped <- a }
	for n := 99; n > 0; {
		g, err := eng2.Reserve(ctx, "a", min(n, MaxBatch))
		if err != nil || g.Granted == 0 {
			t.Fatalf("fill: %+v %v", g, err)
		}
		for _, r := range g.Reservations() {
			if _, err := eng2.Commit(ctx, r, eng2.Now()); err != nil {
				t.Fatal(err)
			}
		}
		n -= g.Granted
	}
	// NTP corrects the wall clock to the real time (two days after the
	// crash); one real minute later the account passivates.
	clock2.Advance(time.Minute)
	setWall(monday.Add(48*time.Hour + time.Minute))
	if _, err := eng2.call(ctx, "a", request{op: opStop}); err != nil {
		t.Fatal(err)
	}
	<-stopped // the snapshot is written; the next request reloads
	g, err = eng2.Reserve(ctx, "a", MaxBatch)
	if err != nil {
		t.Fatal(err)
	}
	if g.Granted != 0 {
		t.Errorf("granted %d slots one minute after 100 pins (engine time %v): state expired by the wall-clock TTL",
			g.Granted, eng2.Now())
	}
}

// slowLoadStore blocks Load of one account until released.
type slowLoadStore struct {
	persistence.Store
	account string
	entered chan struct{}
	release chan struct{}
}

func (s *slowLoadStore) Load(ctx context.Context, account string) (persistence.Loaded, error) {
	if account == s.account {
		close(s.entered)
		<-s.release
	}
	return s.Store.Load(ctx, account)
}

// TestSlowLoadLeavesItsShardOpen: an account actor loads its state in its
// Started handler, which the synchronized dispatcher runs inline in
// SpawnNamed. The registry must not hold the shard's lock while it spawns,
// or one slow (or stuck) Load would block every request to the ~1/64 of
// all accounts that share the shard.
func TestSlowLoadLeavesItsShardOpen(t *testing.T) {
	clock := NewManualClock(monday)
	st := &slowLoadStore{Store: persistencetest.NewMemStore(clock.Now), account: "slow",
		entered: make(chan struct{}), release: make(chan struct{})}
	eng, err := New(testConfig(clock), st, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := eng.Status(context.Background(), "slow")
		done <- err
	}()
	<-st.entered
	sh := eng.reg.shard("slow")
	locked := !sh.mu.TryRLock()
	if !locked {
		sh.mu.RUnlock()
	}
	close(st.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if locked {
		t.Errorf("the shard's lock is held for writing while account \"slow\" loads: every account of the shard waits for that Load")
	}
}

// TestPassivationRollsBackFailedGrant: a grant whose journal write fails
// while the actor is being passivated is rolled back before the snapshot
// at stop (its rollback message may be queued behind the stop, never to be
// served): the snapshot must not keep the failed grant as a reservation,
// which would count as a pin for a whole window.
func TestPassivationRollsBackFailedGrant(t *testing.T) {
	eng, gs, stopped := gatedEngine(t)
	ctx := context.Background()
	xDone := reserveFailing(eng, gs, 3)
	if _, err := eng.call(ctx, "a", request{op: opStop}); err != nil {
		t.Fatal(err)
	}
	sh := eng.reg.shard("a")
	for {
		sh.mu.RLock()
		e := sh.m["a"]
		passivating := e == nil || e.passivating
		sh.mu.RUnlock()
		if passivating {
			break
		}
		runtime.Gosched()
	}
	failAndReload(t, eng, gs, xDone, stopped, "the failed grant and a passivation", "")
}

// failAndReload makes the gated grant X fail, waits for the actor of
// account "a" to stop, and checks that its next incarnation, loaded from
// the store, counts nothing: after says what happened, hint (may be
// empty) why it matters.
func failAndReload(t *testing.T, eng *Engine, gs *gateStore, xDone <-chan error, stopped <-chan string, after, hint string) {
	t.Helper()
	close(gs.release) // X's write fails now
	if err := <-xDone; !errors.Is(err, ErrUnavailable) {
		t.Fatalf("X: %v, want ErrUnavailable", err)
	}
	<-stopped
	st, err := eng.Status(context.Background(), "a") // a new incarnation, from the store
	if err != nil {
		t.Fatal(err)
	}
	if st.Used != 0 || st.Pending != 0 {
		t.Fatalf("after %s: used %d, pending %d; want 0 and 0%s", after, st.Used, st.Pending, hint)
	}
}

// TestActorRestartsWithoutLimit: an actor that fails over and over is
// restarted in place each time, never stopped. protoactor's default
// supervision stops an actor after ten failures in ten seconds, and the
// requests then waiting in its mailbox are never answered.
func TestActorRestartsWithoutLimit(t *testing.T) {
	f := newFixture(t)
	var stops atomic.Int32
	f.eng.onStopped = func(string) { stops.Add(1) }
	f.fill("a", 2)
	for i := range 15 {
		if _, err := f.eng.call(f.ctx, "a", request{op: opPanic}); !errors.Is(err, ErrActorFailed) {
			t.Fatalf("failure %d: %v, want ErrActorFailed", i+1, err)
		}
	}
	st, err := f.eng.Status(f.ctx, "a")
	if err != nil || st.Used != 2 {
		t.Fatalf("after 15 failures: %+v, %v; want the account answering, with its 2 pins", st, err)
	}
	if n := stops.Load(); n != 0 {
		t.Fatalf("the actor was stopped %d times by its supervisor; want it restarted in place", n)
	}
}

// TestSeqsNeverRepeatAfterExpiry: once an account's whole stored state has
// expired, its next events must not restart at Seq 1. Should the expired
// snapshot reappear (a wall clock set back before its expiry, the key not
// yet compacted away), events numbered below its Seq would be hidden
// behind it: the pins they record would go uncounted.
func TestSeqsNeverRepeatAfterExpiry(t *testing.T) {
	f := newFixture(t)
	f.fill("a", 3)
	f.restart() // snapshots "a"
	old, err := f.mem.Load(t.Context(), "a")
	if err != nil || old.Snapshot.Seq == 0 {
		t.Fatalf("stored before expiry: %+v, %v", old, err)
	}
	f.clock.Advance(72 * time.Hour) // window and TTL margin long past
	if l, err := f.mem.Load(t.Context(), "a"); err != nil || l.Snapshot.Seq != 0 || len(l.Events) != 0 {
		t.Fatalf("stored after expiry: %+v, %v; want nothing", l, err)
	}
	f.fill("a", 2) // a new incarnation, from nothing
	l, err := f.mem.Load(t.Context(), "a")
	if err != nil || len(l.Events) == 0 {
		t.Fatalf("stored after the new pins: %+v, %v", l, err)
	}
	for _, ev := range l.Events {
		if ev.Seq <= old.Snapshot.Seq {
			t.Fatalf("event %+v numbered at or below the expired snapshot's Seq %d: it would hide behind it", ev, old.Snapshot.Seq)
		}
	}
}

// gatedEngine starts an engine over a gateStore around a MemStore, with
// account "a" loaded; stopped receives each account whose actor stopped.
func gatedEngine(t *testing.T) (*Engine, *gateStore, chan string) {
	t.Helper()
	clock := NewManualClock(monday)
	gs := &gateStore{Store: persistencetest.NewMemStore(clock.Now)}
	eng, err := New(testConfig(clock), gs, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(context.Background()) })
	stopped := make(chan string, 4)
	eng.onStopped = func(a string) { stopped <- a }
	if _, err := eng.Status(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	return eng, gs, stopped
}

// reserveFailing reserves n slots of "a" while gs fails the write, and
// returns once that write has begun; the Reserve's error arrives on the
// channel once gs.release is closed.
func reserveFailing(eng *Engine, gs *gateStore, n int) <-chan error {
	gs.arm(errors.New("write: input/output error"))
	done := make(chan error, 1)
	go func() {
		_, err := eng.Reserve(context.Background(), "a", n)
		done <- err
	}()
	<-gs.entered
	return done
}
