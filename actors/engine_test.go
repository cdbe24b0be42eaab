package actors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/badgerstore"
	"github.com/pinbot/pinbot/persistence/persistencetest"
	"github.com/rs/zerolog"
)

type engineFixture struct {
	t     *testing.T
	clock *ManualClock
	mem   *persistencetest.MemStore
	store *persistencetest.FaultStore
	eng   *Engine
	ctx   context.Context
	stops chan string
	// parked receives each account that parked (Engine.onParked).
	parked chan string
	logTo  io.Writer // the engine's log; nil: none
}

func testConfig(clock Clock) Config {
	cfg := DefaultConfig()
	cfg.Clock = clock
	// The tests' stores expire state by the same clock (their "wall").
	cfg.Wall = clock.Now
	cfg.Recover = false
	return cfg
}

func newFixture(t *testing.T, mutate ...func(*Config)) *engineFixture {
	t.Helper()
	f := &engineFixture{t: t, clock: NewManualClock(monday), ctx: context.Background()}
	f.mem = persistencetest.NewMemStore(f.clock.Now)
	f.store = persistencetest.NewFaultStore(f.mem)
	f.start(mutate...)
	return f
}

// start (re)starts the engine over the fixture's store.
func (f *engineFixture) start(mutate ...func(*Config)) {
	f.t.Helper()
	cfg := testConfig(f.clock)
	for _, m := range mutate {
		m(&cfg)
	}
	log := zerolog.Nop()
	if f.logTo != nil {
		log = zerolog.New(f.logTo)
	}
	eng, err := New(cfg, f.store, log)
	if err != nil {
		f.t.Fatalf("New: %v", err)
	}
	stops := make(chan string, 1024)
	f.stops = stops
	eng.onStopped = func(a string) { stops <- a }
	parked := make(chan string, 1024)
	f.parked = parked
	eng.onParked = func(a string) { parked <- a }
	f.eng = eng
	f.t.Cleanup(func() { _ = eng.Close(context.Background()) })
}

func (f *engineFixture) restart(mutate ...func(*Config)) {
	f.t.Helper()
	if err := f.eng.Close(f.ctx); err != nil {
		f.t.Fatalf("Close: %v", err)
	}
	f.start(mutate...)
}

func (f *engineFixture) reserve(account string, n int) Grant {
	f.t.Helper()
	g, err := f.eng.Reserve(f.ctx, account, n)
	if err != nil {
		f.t.Fatalf("Reserve(%s, %d): %v", account, n, err)
	}
	return g
}

// fill makes account use n slots with pins committed at the clock's time.
func (f *engineFixture) fill(account string, n int) {
	f.t.Helper()
	for n > 0 {
		g := f.reserve(account, min(n, MaxBatch))
		if g.Granted == 0 {
			f.t.Fatalf("fill: account %s full with %d left", account, n)
		}
		for _, r := range g.Reservations() {
			if _, err := f.eng.Commit(f.ctx, r, f.eng.Now()); err != nil {
				f.t.Fatalf("Commit: %v", err)
			}
		}
		n -= g.Granted
	}
}

func (f *engineFixture) status(account string) Status {
	f.t.Helper()
	st, err := f.eng.Status(f.ctx, account)
	if err != nil {
		f.t.Fatalf("Status(%s): %v", account, err)
	}
	return st
}

func TestEngineReserveCommitRelease(t *testing.T) {
	f := newFixture(t)
	g := f.reserve("acct", 3)
	if g.Granted != 3 || g.Used != 3 || g.Pending != 3 || g.Limit != 100 {
		t.Fatalf("grant = %+v", g)
	}
	rs := g.Reservations()
	st, err := f.eng.Commit(f.ctx, rs[0], f.eng.Now())
	if err != nil || st.Used != 3 || st.Pending != 2 {
		t.Fatalf("Commit = %+v, %v", st, err)
	}
	st, err = f.eng.Release(f.ctx, rs[1])
	if err != nil || st.Used != 2 || st.Pending != 1 {
		t.Fatalf("Release = %+v, %v", st, err)
	}
	if _, err := f.eng.Release(f.ctx, rs[1]); !errors.Is(err, ErrUnknownReservation) {
		t.Fatalf("second Release: %v, want ErrUnknownReservation", err)
	}
	if _, err := f.eng.Commit(f.ctx, Reservation{Account: "acct", ID: 12345}, f.eng.Now()); !errors.Is(err, ErrUnknownReservation) {
		t.Fatalf("Commit of unknown: %v", err)
	}
	if !rs[2].Deadline.Equal(monday.Add(5 * time.Minute)) {
		t.Fatalf("reservation deadline %v, want the lease's end %v", rs[2].Deadline, monday.Add(5*time.Minute))
	}
	// The lease runs out: the last one becomes a pin at the deadline.
	f.clock.Advance(5 * time.Minute)
	st = f.status("acct")
	if st.Used != 2 || st.Pending != 0 {
		t.Fatalf("after lease: %+v", st)
	}
	// Its Commit comes a minute late: the pin moves forward to then (a
	// Commit's at in the future is clamped to now), and cannot be
	// released or committed again.
	f.clock.Advance(time.Minute)
	st, err = f.eng.Commit(f.ctx, rs[2], f.eng.Now().Add(time.Hour))
	if err != nil || st.Used != 2 || st.Pending != 0 {
		t.Fatalf("Commit after lease = %+v, %v; want it taken", st, err)
	}
	if _, err := f.eng.Release(f.ctx, rs[2]); !errors.Is(err, ErrUnknownReservation) {
		t.Fatalf("Release after a late Commit: %v, want ErrUnknownReservation", err)
	}
	if _, err := f.eng.Commit(f.ctx, rs[2], f.eng.Now()); !errors.Is(err, ErrUnknownReservation) {
		t.Fatalf("second late Commit: %v, want ErrUnknownReservation", err)
	}
	// 12h after the committed pin, one slot; the late one counts until
	// 12h after its Commit, not after its deadline.
	f.clock.Set(monday.Add(12 * time.Hour))
	if st := f.status("acct"); st.Used != 1 {
		t.Fatalf("at +12h used %d want 1", st.Used)
	}
	f.clock.Set(monday.Add(12*time.Hour + 6*time.Minute - time.Millisecond))
	if st := f.status("acct"); st.Used != 1 {
		t.Fatalf("at +12h06 - 1ms used %d want 1", st.Used)
	}
	f.clock.Set(monday.Add(12*time.Hour + 6*time.Minute))
	if st := f.status("acct"); st.Used != 0 {
		t.Fatalf("at +12h06 used %d want 0", st.Used)
	}
}

// TestEngineLateCommitSurvivesRestart: a reservation lapses, the account
// is snapshotted (it passivates), and a Commit comes late after a restart:
// the lapsed reservation was stored, and its pin moves forward.
func TestEngineLateCommitSurvivesRestart(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Limit = 2 })
	g := f.reserve("acct", 2)
	rs := g.Reservations()
	if _, err := f.eng.Commit(f.ctx, rs[0], f.eng.Now()); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(10 * time.Minute) // rs[1] lapsed at +5m
	if _, err := f.eng.call(f.ctx, "acct", request{op: opStop}); err != nil {
		t.Fatal(err)
	}
	f.restart()
	st, err := f.eng.Commit(f.ctx, rs[1], f.eng.Now())
	if err != nil || st.Used != 2 {
		t.Fatalf("late Commit after a restart = %+v, %v", st, err)
	}
	f.restart()
	// The second pin counts until 12h after the late Commit (+10m).
	for _, c := range []struct {
		at   time.Duration
		used int
	}{
		{12*time.Hour - time.Millisecond, 2},
		{12*time.Hour + 5*time.Minute, 1},
		{12*time.Hour + 10*time.Minute - time.Millisecond, 1},
		{12*time.Hour + 10*time.Minute, 0},
	} {
		f.clock.Set(monday.Add(c.at))
		if st := f.status("acct"); st.Used != c.used {
			t.Fatalf("at +%v: used %d want %d", c.at, st.Used, c.used)
		}
	}
	// Long after its window, a Commit of it changes nothing.
	if _, err := f.eng.Commit(f.ctx, rs[1], f.eng.Now()); !errors.Is(err, ErrUnknownReservation) {
		t.Fatalf("Commit a window after the lease: %v, want ErrUnknownReservation", err)
	}
}

func TestEngineBadInput(t *testing.T) {
	f := newFixture(t)
	for _, n := range []int{0, -1, MaxBatch + 1} {
		if _, err := f.eng.Reserve(f.ctx, "a", n); !errors.Is(err, ErrInvalidCount) {
			t.Errorf("Reserve(n=%d): %v want ErrInvalidCount", n, err)
		}
	}
	for _, acc := range []string{"", "a\x00b", string(make([]byte, 200))} {
		if _, err := f.eng.Reserve(f.ctx, acc, 1); !errors.Is(err, ErrInvalidAccount) {
			t.Errorf("Reserve(%q): %v want ErrInvalidAccount", acc, err)
		}
	}
}

func TestEngineLimitAndNextFree(t *testing.T) {
	f := newFixture(t)
	f.fill("acct", 95)
	f.clock.Advance(time.Hour)
	g := f.reserve("acct", 10)
	if g.Granted != 5 || g.Used != 100 {
		t.Fatalf("at 95/100 Reserve(10) = %+v, want 5 granted", g)
	}
	if want := monday.Add(12 * time.Hour); !g.NextFree.Equal(want) {
		t.Fatalf("NextFree = %v want %v", g.NextFree.UTC(), want)
	}
	g = f.reserve("acct", 1)
	if g.Granted != 0 || g.Free() != 0 {
		t.Fatalf("at the limit: %+v", g)
	}
}

func TestEngineConcurrentReserve(t *testing.T) {
	f := newFixture(t)
	f.fill("acct", 95)
	var granted atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			g, err := f.eng.Reserve(f.ctx, "acct", 1+i%3)
			if err != nil {
				t.Errorf("Reserve: %v", err)
				return
			}
			granted.Add(int64(g.Granted))
		}()
	}
	close(start)
	wg.Wait()
	if got := granted.Load(); got != 5 {
		t.Fatalf("50 concurrent reservers got %d slots, want exactly 5", got)
	}
	if st := f.status("acct"); st.Used != 100 {
		t.Fatalf("used %d want 100", st.Used)
	}
}

func TestEngineRestartKeepsState(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.SnapshotEvery = 7 })
	f.fill("a", 40)
	g := f.reserve("a", 4) // left pending across the restart
	f.fill("b", 3)
	before := f.status("a")
	f.restart(func(c *Config) { c.SnapshotEvery = 7 })
	after := f.status("a")
	if after.Used != before.Used || after.Pending != before.Pending || !after.NextFree.Equal(before.NextFree) {
		t.Fatalf("after restart %+v, before %+v", after, before)
	}
	// The pending reservations survive and can be resolved.
	for _, r := range g.Reservations() {
		if _, err := f.eng.Commit(f.ctx, r, f.eng.Now()); err != nil {
			t.Fatalf("Commit after restart: %v", err)
		}
	}
	if st := f.status("b"); st.Used != 3 {
		t.Fatalf("b used %d want 3", st.Used)
	}
	// New reservation IDs never repeat old ones.
	if g2 := f.reserve("a", 1); g2.First <= g.First+3 {
		t.Fatalf("new ID %d not after old %d", g2.First, g.First+3)
	}
}

// TestEngineReplayWithoutSnapshot checks that the journal alone (the state
// a crash leaves) replays to the live state.
func TestEngineReplayWithoutSnapshot(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.SnapshotEvery = 1000 })
	f.fill("a", 30)
	g := f.reserve("a", 3)
	if _, err := f.eng.Release(f.ctx, g.Reservations()[0]); err != nil {
		t.Fatal(err)
	}
	live := f.status("a")
	if err := f.eng.journal.Flush(f.ctx); err != nil {
		t.Fatal(err)
	}
	// A second engine over the same store, as after a crash: the first
	// never wrote its shutdown snapshot.
	loaded, err := f.mem.Load(t.Context(), "a")
	if err != nil || loaded.Snapshot.Seq != 0 || len(loaded.Events) == 0 {
		t.Fatalf("expected journal only, got snapshot seq %d, %d events, %v", loaded.Snapshot.Seq, len(loaded.Events), err)
	}
	eng2, err := New(testConfig(f.clock), f.mem, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng2.Close(f.ctx)
	got, err := eng2.Status(f.ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Used != live.Used || got.Pending != live.Pending || !got.NextFree.Equal(live.NextFree) {
		t.Fatalf("replayed %+v, live %+v", got, live)
	}
}

func TestEnginePassivation(t *testing.T) {
	f := newFixture(t)
	f.fill("a", 12)
	g := f.reserve("a", 2)
	if f.eng.Resident() != 1 {
		t.Fatalf("resident = %d", f.eng.Resident())
	}
	if _, err := f.eng.call(f.ctx, "a", request{op: opStop}); err != nil {
		t.Fatal(err)
	}
	if got := <-f.stops; got != "a" {
		t.Fatalf("stopped %q", got)
	}
	if f.eng.Resident() != 0 {
		t.Fatalf("resident after passivation = %d", f.eng.Resident())
	}
	// The snapshot is written: the journal is folded into it.
	if l, err := f.mem.Load(t.Context(), "a"); err != nil || len(l.Events) != 0 || len(l.Snapshot.Committed) != 12 || len(l.Snapshot.Pending) != 2 {
		t.Fatalf("stored after passivation: %+v, %v", l, err)
	}
	st := f.status("a")
	if st.Used != 14 || st.Pending != 2 {
		t.Fatalf("reactivated: %+v", st)
	}
	if _, err := f.eng.Commit(f.ctx, g.Reservations()[1], f.eng.Now()); err != nil {
		t.Fatalf("Commit after reactivation: %v", err)
	}
}

func TestEngineIdleTimeoutPassivates(t *testing.T) {
	// A long IdleTimeout keeps the background sweeps out of the way; the
	// test runs the sweeps itself and moves the engine clock.
	f := newFixture(t, func(c *Config) { c.IdleTimeout = time.Hour })
	f.fill("a", 3)
	f.fill("b", 1)
	f.eng.reg.sweepIdle() // both were used during this epoch: not asked
	if n := f.eng.reg.sweepIdle(); n != 2 {
		t.Fatalf("second sweep asked %d actors, want 2", n)
	}
	if f.eng.Resident() != 2 {
		t.Fatalf("resident = %d before the idle timeout, want 2", f.eng.Resident())
	}
	// b is used again just before a's idle timeout; only a goes.
	f.clock.Advance(time.Hour - time.Minute)
	f.status("b")
	f.clock.Advance(time.Minute)
	f.eng.reg.sweepIdle()
	f.eng.reg.sweepIdle()
	if got := <-f.stops; got != "a" {
		t.Fatalf("stopped %q, want a", got)
	}
	if st := f.status("a"); st.Used != 3 {
		t.Fatalf("after idle passivation used %d", st.Used)
	}
	f.status("b") // served after b's idle check, in mailbox order
	select {
	case got := <-f.stops:
		t.Fatalf("%q stopped, but it was used %v ago", got, time.Minute)
	default:
	}
	if f.eng.Resident() != 2 {
		t.Fatalf("resident = %d, want 2 (b kept, a reloaded)", f.eng.Resident())
	}
}

func TestEngineSupervisionRestartKeepsState(t *testing.T) {
	f := newFixture(t)
	f.fill("a", 20)
	_, err := f.eng.call(f.ctx, "a", request{op: opPanic})
	if !errors.Is(err, ErrActorFailed) {
		t.Fatalf("panic request: %v", err)
	}
	if st := f.status("a"); st.Used != 20 {
		t.Fatalf("after restart used %d want 20", st.Used)
	}
	f.fill("a", 1)
	if st := f.status("a"); st.Used != 21 {
		t.Fatalf("used %d want 21", st.Used)
	}
}

func TestEngineFailClosed(t *testing.T) {
	f := newFixture(t)
	f.fill("a", 10)
	enospc := fmt.Errorf("disk: %w", syscall.ENOSPC)
	f.store.FailWrites(enospc)
	g, err := f.eng.Reserve(f.ctx, "a", 5)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, syscall.ENOSPC) || g.Granted != 0 {
		t.Fatalf("Reserve with failing store = %+v, %v; want ErrUnavailable, nothing granted", g, err)
	}
	// Reads go on; the failed grant is rolled back.
	st := f.status("a")
	if st.Used != 10 || st.Pending != 0 {
		t.Fatalf("status while failing: %+v", st)
	}
	// Another account, never loaded before, fails closed too.
	if _, err := f.eng.Reserve(f.ctx, "b", 1); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Reserve b: %v", err)
	}
	f.store.FailWrites(nil)
	g = f.reserve("a", 5)
	if g.Granted != 5 || g.Used != 15 {
		t.Fatalf("after recovery: %+v", g)
	}
}

// A write that lands but reports failure: the caller is told nothing was
// granted, so no pin follows, and the slots are given back.
func TestEngineAmbiguousWriteRollsBack(t *testing.T) {
	f := newFixture(t)
	f.fill("a", 2)
	f.store.FailWritesAfterApply(errors.New("fsync: input/output error"))
	if g, err := f.eng.Reserve(f.ctx, "a", 3); !errors.Is(err, ErrUnavailable) || g.Granted != 0 {
		t.Fatalf("Reserve = %+v, %v", g, err)
	}
	if st := f.status("a"); st.Used != 2 || st.Pending != 0 {
		t.Fatalf("after failed grant: %+v", st)
	}
	f.store.FailWritesAfterApply(nil)
	f.restart()
	if st := f.status("a"); st.Used != 2 || st.Pending != 0 {
		t.Fatalf("after restart: %+v", st)
	}
}

func TestEngineUnreadableAccount(t *testing.T) {
	f := newFixture(t)
	f.fill("good", 2)
	f.fill("bad", 2)
	if _, err := f.eng.call(f.ctx, "bad", request{op: opStop}); err != nil {
		t.Fatal(err)
	}
	<-f.stops
	f.store.FailLoad("bad", fmt.Errorf("%w: bad checksum", persistence.ErrCorrupt))
	_, err := f.eng.Reserve(f.ctx, "bad", 1)
	if !errors.Is(err, ErrAccountState) || !errors.Is(err, persistence.ErrCorrupt) {
		t.Fatalf("Reserve on corrupt account: %v", err)
	}
	if want := `"bad"`; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name the account", err)
	}
	if st := f.status("good"); st.Used != 2 {
		t.Fatalf("good account: %+v", st)
	}
	f.store.FailLoad("bad", nil)
	// The broken incarnation stops by itself; the next request reloads.
	<-f.stops
	if st := f.status("bad"); st.Used != 2 {
		t.Fatalf("bad account after repair: %+v", st)
	}
}

func TestEngineClockBehindStore(t *testing.T) {
	f := newFixture(t)
	f.fill("a", 1)
	pinned := f.eng.Now()
	f.restart()
	// The wall clock is set back a day while the bot is down.
	f.clock.Advance(-24 * time.Hour)
	f.restart()
	if now := f.eng.Now(); now.Before(pinned) {
		t.Fatalf("engine clock %v before stored pin %v", now, pinned)
	}
	st := f.status("a")
	if st.Used != 1 || !st.NextFree.Equal(st.At) {
		t.Fatalf("status %+v", st)
	}
	// The pin still frees exactly 12h after it, on the engine clock.
	f.clock.Advance(12*time.Hour - time.Second)
	if st := f.status("a"); st.Used != 1 {
		t.Fatalf("pin freed early: %+v", st)
	}
}

func TestEngineTTLCleanup(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.TTLMargin = time.Hour })
	f.fill("a", 2)
	f.restart(func(c *Config) { c.TTLMargin = time.Hour })
	// Still stored until the window plus margin has passed...
	f.clock.Set(monday.Add(13*time.Hour - time.Second))
	if l, err := f.mem.Load(t.Context(), "a"); err != nil || len(l.Snapshot.Committed) != 2 {
		t.Fatalf("state gone before expiry: %+v %v", l, err)
	}
	// ...and gone after.
	f.clock.Set(monday.Add(13*time.Hour + time.Second))
	if l, err := f.mem.Load(t.Context(), "a"); err != nil || len(l.Snapshot.Committed) != 0 || len(l.Events) != 0 {
		t.Fatalf("state kept after expiry: %+v %v", l, err)
	}
}

func TestEngineStatusMany(t *testing.T) {
	f := newFixture(t)
	f.fill("a", 3)
	f.fill("b", 7)
	sts, err := f.eng.StatusMany(f.ctx, []string{"a", "b", "c", ""})
	if !errors.Is(err, ErrInvalidAccount) {
		t.Fatalf("err = %v", err)
	}
	if sts[0].Used != 3 || sts[1].Used != 7 || sts[2].Used != 0 || sts[2].Limit != 100 || sts[3].Account != "" {
		t.Fatalf("statuses %+v", sts)
	}
}

func TestEngineClose(t *testing.T) {
	f := newFixture(t)
	f.fill("a", 1)
	if err := f.eng.Close(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.Reserve(f.ctx, "a", 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Reserve after Close: %v", err)
	}
	if l, err := f.mem.Load(t.Context(), "a"); err != nil || len(l.Events) != 0 || len(l.Snapshot.Committed) != 1 {
		t.Fatalf("after Close stored %+v, %v", l, err)
	}
}

func TestEngineRecoverCompactsJournal(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.SnapshotEvery = 1000 })
	f.fill("a", 5)
	f.fill("b", 5)
	if err := f.eng.journal.Flush(f.ctx); err != nil {
		t.Fatal(err)
	}
	eng2, err := New(testConfig(f.clock), f.mem, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng2.Close(f.ctx)
	stops := make(chan string, 10)
	eng2.onStopped = func(a string) { stops <- a }
	if err := eng2.Recover(f.ctx); err != nil {
		t.Fatal(err)
	}
	<-stops
	<-stops
	for _, acc := range []string{"a", "b"} {
		l, err := f.mem.Load(t.Context(), acc)
		if err != nil || len(l.Events) != 0 || len(l.Snapshot.Committed) != 5 {
			t.Fatalf("%s after Recover: %+v %v", acc, l, err)
		}
	}
	if eng2.Resident() != 0 {
		t.Fatalf("recovery left %d actors resident", eng2.Resident())
	}
}

// TestEngineHold: Pinterest's own rate limit (a 429 with a reset time)
// parks an account until then, through restarts and crashes.
func TestEngineHold(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.SnapshotEvery = 1000 })
	f.fill("a", 10)
	until := f.eng.Now().Add(30 * time.Minute)
	st, err := f.eng.Hold(f.ctx, "a", until)
	if err != nil {
		t.Fatalf("Hold: %v", err)
	}
	if !st.NextFree.Equal(until) || st.Used != 10 {
		t.Fatalf("status after Hold = %+v, want NextFree %v and 10 used", st, until)
	}
	if g := f.reserve("a", 3); g.Granted != 0 || !g.NextFree.Equal(until) {
		t.Fatalf("Reserve while held = %+v, want nothing granted until %v", g, until)
	}
	// A shorter hold changes nothing; other accounts are not held.
	if st, _ := f.eng.Hold(f.ctx, "a", until.Add(-time.Minute)); !st.NextFree.Equal(until) {
		t.Fatalf("a shorter hold moved NextFree to %v", st.NextFree)
	}
	if g := f.reserve("b", 1); g.Granted != 1 {
		t.Fatalf("b granted %d while a is held", g.Granted)
	}

	// The hold survives a crash (journal only) and a clean restart
	// (snapshot).
	if err := f.eng.journal.Flush(f.ctx); err != nil {
		t.Fatal(err)
	}
	eng2, err := New(testConfig(f.clock), f.mem, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if g, err := eng2.Reserve(f.ctx, "a", 1); err != nil || g.Granted != 0 {
		t.Fatalf("after a crash, Reserve while held = %+v, %v", g, err)
	}
	_ = eng2.Close(f.ctx)
	f.restart()
	if g := f.reserve("a", 1); g.Granted != 0 || !g.NextFree.Equal(until) {
		t.Fatalf("after restart, Reserve while held = %+v", g)
	}

	// At the instant the hold ends, slots are granted again.
	f.clock.Set(until.Add(-time.Millisecond))
	if g := f.reserve("a", 1); g.Granted != 0 {
		t.Fatalf("granted %d a millisecond before the hold ends", g.Granted)
	}
	f.clock.Set(until)
	if g := f.reserve("a", 2); g.Granted != 2 {
		t.Fatalf("granted %d when the hold ended, want 2", g.Granted)
	}

	// A hold that cannot be stored is in force and reported.
	f.store.FailWrites(fmt.Errorf("disk: %w", syscall.ENOSPC))
	later := f.eng.Now().Add(time.Hour)
	if _, err := f.eng.Hold(f.ctx, "b", later); !errors.Is(err, ErrUnavailable) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Hold with a failing store: %v, want ErrUnavailable", err)
	}
	f.store.FailWrites(nil)
	if g := f.reserve("b", 1); g.Granted != 0 {
		t.Fatalf("b granted %d after an unstored hold", g.Granted)
	}
}

// TestEngineCheckpointBoundsJournal: accounts that never reach
// SnapshotEvery would keep every journal record alive; a checkpoint
// snapshots them so the store deletes the old records, and nothing counted
// is lost.
func TestEngineCheckpointBoundsJournal(t *testing.T) {
	store, err := badgerstore.Open("", badgerstore.Options{InMemory: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	clock := NewManualClock(monday)
	cfg := testConfig(clock)
	cfg.SnapshotEvery = 1000
	cfg.CheckpointEvery = 0 // run by hand below
	cfg.CheckpointKeep = 3
	eng, err := New(cfg, store, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	ctx := context.Background()
	const accounts = 30
	for i := range accounts {
		// One at a time: each grant waits for its own group commit, so
		// each lands in its own record.
		if g, err := eng.Reserve(ctx, fmt.Sprintf("cp-%02d", i), 2); err != nil || g.Granted != 2 {
			t.Fatalf("Reserve: %+v, %v", g, err)
		}
	}
	if n := store.Records(); n < accounts {
		t.Fatalf("%d WAL records before the checkpoint, want at least %d", n, accounts)
	}
	n, err := eng.Checkpoint(ctx, store)
	if err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	if err := eng.journal.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := store.Records(); got > cfg.CheckpointKeep {
		t.Errorf("%d WAL records after checkpointing %d accounts, want at most %d", got, n, cfg.CheckpointKeep)
	}
	for i := range accounts {
		st, err := eng.Status(ctx, fmt.Sprintf("cp-%02d", i))
		if err != nil || st.Used != 2 || st.Pending != 2 {
			t.Fatalf("account %d after checkpoint: %+v, %v; want 2 pending", i, st, err)
		}
	}
}

// The Badger store's checkpoints are the engine's.
var _ Checkpointer = (*badgerstore.Store)(nil)

// staleList is a Checkpointer that calls fn for each of its accounts.
type staleList []string

func (l staleList) Stale(_ int, fn func(account string) error) error {
	for _, a := range l {
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

// TestEngineCheckpointSpread: the background checkpoint snapshots its
// stale accounts in rounds a pause apart, as many per round as it takes
// to be done within the spread, instead of all at once; a checkpoint by
// hand does not pause; the end of its context stops it between rounds.
func TestEngineCheckpointSpread(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.CheckpointEvery = 0 })
	var pauses []time.Duration
	f.eng.pause = func(ctx context.Context, d time.Duration) error {
		pauses = append(pauses, d)
		return ctx.Err()
	}
	var stale staleList
	for i := range 10 {
		acc := fmt.Sprintf("spread-%d", i)
		if g := f.reserve(acc, 1); g.Granted != 1 {
			t.Fatalf("%s granted %d", acc, g.Granted)
		}
		stale = append(stale, acc)
	}
	// Five rounds in 50 ms: two accounts each, four pauses between them.
	got, err := f.eng.checkpoint(f.ctx, stale, 5*checkpointRound)
	if err != nil || got != 10 {
		t.Fatalf("checkpoint: %d, %v; want 10", got, err)
	}
	if want := []time.Duration{checkpointRound, checkpointRound, checkpointRound, checkpointRound}; !slices.Equal(pauses, want) {
		t.Fatalf("pauses %v, want %v", pauses, want)
	}
	pauses = nil
	if got, err := f.eng.Checkpoint(f.ctx, stale); err != nil || got != 10 || len(pauses) != 0 {
		t.Fatalf("Checkpoint: %d, %v, %d pauses; want 10 at once", got, err, len(pauses))
	}
	// The engine closing during the first pause.
	ctx, cancel := context.WithCancel(f.ctx)
	f.eng.pause = func(ctx context.Context, _ time.Duration) error {
		cancel()
		return ctx.Err()
	}
	if got, err := f.eng.checkpoint(ctx, stale, 5*checkpointRound); !errors.Is(err, context.Canceled) || got != 2 {
		t.Fatalf("checkpoint with its context ended: %d, %v; want 2 (one round), context.Canceled", got, err)
	}
	for _, acc := range stale {
		if st := f.status(acc); st.Used != 1 {
			t.Fatalf("%s after the checkpoints: %+v, want 1 used", acc, st)
		}
	}
}

// TestEnginePassivationUnderLoad: actors passivate (asked to, and by the
// idle sweep) while many goroutines keep sending to them. With the
// synchronized dispatcher a sender runs the actor's turn itself, so this is
// where a message could reach a stopped actor and be lost: every request
// must be answered, and every granted slot counted exactly once.
func TestEnginePassivationUnderLoad(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.IdleTimeout = time.Millisecond; c.SnapshotEvery = 7 })
	const accounts, workers, rounds = 6, 24, 60
	ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer cancel()
	var granted [accounts]atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				a := (w + i) % accounts
				acc := fmt.Sprintf("load-%d", a)
				g, err := f.eng.Reserve(ctx, acc, 1)
				if err != nil {
					t.Errorf("Reserve(%s): %v", acc, err)
					return
				}
				granted[a].Add(int64(g.Granted))
				if g.Granted == 1 && i%2 == 0 {
					if _, err := f.eng.Commit(ctx, g.Reservations()[0], f.eng.Now()); err != nil {
						t.Errorf("Commit(%s): %v", acc, err)
						return
					}
				}
			}
		}()
	}
	stop := make(chan struct{})
	churned := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				churned <- n
				return
			default:
			}
			f.clock.Advance(time.Millisecond)
			f.eng.reg.sweepIdle()
			if _, err := f.eng.call(ctx, fmt.Sprintf("load-%d", n%accounts), request{op: opStop}); err != nil && ctx.Err() == nil {
				t.Errorf("stop: %v", err)
			}
			n++
		}
	}()
	wg.Wait()
	close(stop)
	if n := <-churned; n == 0 {
		t.Fatal("no passivation happened during the load")
	}
	if ctx.Err() != nil {
		t.Fatal("requests were left unanswered: a message was lost")
	}
	for a := range accounts {
		st := f.status(fmt.Sprintf("load-%d", a))
		if int64(st.Used) != granted[a].Load() {
			t.Errorf("load-%d: %d slots counted, %d granted", a, st.Used, granted[a].Load())
		}
	}
}

// runningEntry makes account's actor run (a Status) and returns its
// registry entry.
func runningEntry(t *testing.T, f *engineFixture, account string) *regEntry {
	t.Helper()
	if _, err := f.eng.Status(f.ctx, account); err != nil {
		t.Fatal(err)
	}
	sh := f.eng.reg.shard(account)
	sh.mu.RLock()
	e := sh.m[account]
	sh.mu.RUnlock()
	if e == nil || e.pid == nil {
		t.Fatalf("account %s has no running actor", account)
	}
	return e
}

// TestRegistryEntryDropsItsStartChannel: once an actor is running, its
// registry entry holds the shared closed channel, not a channel of its
// own (96 bytes per resident account).
func TestRegistryEntryDropsItsStartChannel(t *testing.T) {
	f := newFixture(t)
	e := runningEntry(t, f, "a")
	if e.started != closedChan {
		t.Error("the entry of a running actor keeps its own start channel")
	}
}

// TestRegistryEntryKeepsTheProcess: a running actor's entry holds its
// protoactor process, so that sends skip resolving the PID, and that
// process is the one protoactor has for the PID.
func TestRegistryEntryKeepsTheProcess(t *testing.T) {
	f := newFixture(t)
	e := runningEntry(t, f, "a")
	if e.proc == nil {
		t.Fatal("account a's entry has no actor process")
	}
	p, ok := f.eng.system.ProcessRegistry.Get(e.pid)
	if !ok || p != actor.Process(e.proc) {
		t.Fatalf("entry's process %p is not protoactor's %v for %v", e.proc, p, e.pid)
	}
	if _, err := f.eng.Status(f.ctx, "a"); err != nil {
		t.Fatal(err)
	}
}

// TestRegistryKeepsTheNameInItsEntry: an actor's name (the registry's
// key, the PID's ID) is held inside its registry entry when it fits, so
// it costs the collector no object of its own; a longer one is a string
// of its own, and either account is served and told apart.
func TestRegistryKeepsTheNameInItsEntry(t *testing.T) {
	f := newFixture(t)
	e := runningEntry(t, f, "1234567890123456789")
	if got := unsafe.StringData(e.pid.Id); got != &e.name[0] {
		t.Errorf("the actor's name %q is not held in its registry entry", e.pid.Id)
	}
	long := strings.Repeat("x", len(e.name)) // with the prefix, too long to fit
	el := runningEntry(t, f, long)
	if got, want := el.pid.Id, actorNamePrefix+long; got != want {
		t.Fatalf("long account's actor is named %q, want %q", got, want)
	}
	if unsafe.StringData(el.pid.Id) == &el.name[0] {
		t.Error("a name longer than the entry's room is held in it")
	}
	if _, err := f.eng.Reserve(f.ctx, long, 2); err != nil {
		t.Fatal(err)
	}
	st, err := f.eng.Status(f.ctx, "1234567890123456789")
	if err != nil || st.Used != 0 || st.Account != "1234567890123456789" {
		t.Fatalf("short account: %+v, %v; want nothing used", st, err)
	}
	if st, err := f.eng.Status(f.ctx, long); err != nil || st.Used != 2 || st.Account != long {
		t.Fatalf("long account: %+v, %v; want 2 used", st, err)
	}
}

// TestRegistryEntryHoldsTheMailbox: the mailbox protoactor runs an
// account's actor with is the one inside its registry entry (no object of
// its own), every one of many accounts spawned at once gets its own, and
// the hand-off is free once they are running.
func TestRegistryEntryHoldsTheMailbox(t *testing.T) {
	f := newFixture(t)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.eng.Reserve(f.ctx, fmt.Sprintf("m-%d", i), 1); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	seen := map[actor.MessageInvoker]string{}
	for i := range 64 {
		account := fmt.Sprintf("m-%d", i)
		e := runningEntry(t, f, account)
		if e.mailbox.invoker == nil || e.mailbox.throughput != dispatcherThroughput {
			t.Fatalf("%s: the entry's mailbox is not the actor's", account)
		}
		if other, ok := seen[e.mailbox.invoker]; ok {
			t.Fatalf("%s and %s share a mailbox", account, other)
		}
		seen[e.mailbox.invoker] = account
		if st, err := f.eng.Status(f.ctx, account); err != nil || st.Used != 1 {
			t.Fatalf("%s: %+v, %v; want 1 used", account, st, err)
		}
	}
	if f.eng.spawnMailbox.Load() != nil || !f.eng.spawnMu.TryLock() {
		t.Fatal("the mailbox hand-off is still held")
	}
	f.eng.spawnMu.Unlock()
}

// TestRegistryKeepsTheAccountIDOnce: the registry's key for a resident
// account is the account part of its actor's name, one string, not a copy
// of the caller's.
func TestRegistryKeepsTheAccountIDOnce(t *testing.T) {
	f := newFixture(t)
	account := strings.Clone("an-account")
	e := runningEntry(t, f, account)
	sh := f.eng.reg.shard(account)
	var key string
	sh.mu.RLock()
	for k, v := range sh.m {
		if v == e {
			key = k
		}
	}
	sh.mu.RUnlock()
	if unsafe.StringData(key) == unsafe.StringData(account) {
		t.Fatal("the registry keeps the caller's string as its key")
	}
	if unsafe.StringData(key) != unsafe.StringData(e.pid.Id[len(actorNamePrefix):]) {
		t.Errorf("the registry's key %q is not the account part of the actor's name %q", key, e.pid.Id)
	}
}
