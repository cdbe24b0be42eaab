package actors

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
)

// observe records pins made elsewhere at the given offsets from the
// engine's now.
func (f *engineFixture) observe(account string, ago ...time.Duration) Status {
	f.t.Helper()
	now := f.eng.Now()
	pins := make([]time.Time, len(ago))
	for i, d := range ago {
		pins[i] = now.Add(-d)
	}
	st, err := f.eng.Observe(f.ctx, account, pins)
	if err != nil {
		f.t.Fatalf("Observe(%s): %v", account, err)
	}
	return st
}

// TestObserveCounts: pins made elsewhere count as pinbot's own: Status
// and Reserve see them, and a slot frees when the oldest that counts
// leaves the window, not before.
func TestObserveCounts(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Limit = 5; c.Window = time.Hour })
	f.fill("a", 2)
	st := f.observe("a", 50*time.Minute, 10*time.Minute)
	if st.Used != 4 || st.Pending != 0 {
		t.Fatalf("status after Observe = %+v, want 4 used", st)
	}
	if g := f.reserve("a", 3); g.Granted != 1 {
		t.Fatalf("granted %d, want the 1 slot the pins made elsewhere leave", g.Granted)
	}
	// Full: the oldest pin counting is the one made elsewhere 50 minutes
	// ago; its slot frees 10 minutes from now.
	if st := f.status("a"); st.Free() != 0 || !st.NextFree.Equal(f.eng.Now().Add(10*time.Minute)) {
		t.Fatalf("status when full = %+v, want next free in 10 min", st)
	}
	f.clock.Advance(10*time.Minute - time.Millisecond)
	if g := f.reserve("a", 1); g.Granted != 0 {
		t.Fatalf("granted %d a millisecond before the pin made elsewhere leaves the window", g.Granted)
	}
	f.clock.Advance(time.Millisecond)
	if g := f.reserve("a", 1); g.Granted != 1 {
		t.Fatalf("granted %d once it left, want 1", g.Granted)
	}
}

// TestObserveTimes: a pin made a window ago or earlier is ignored; one
// stamped after now (Pinterest's clock ahead) counts from now; an empty
// call changes nothing and writes nothing.
func TestObserveTimes(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Limit = 3; c.Window = time.Hour })
	writes := f.store.Counts().Writes
	if st := f.observe("a", time.Hour, 2*time.Hour); st.Used != 0 {
		t.Fatalf("pins a window old or older counted: %+v", st)
	}
	if st := f.observe("a"); st.Used != 0 {
		t.Fatalf("an empty Observe counted: %+v", st)
	}
	if got := f.store.Counts().Writes; got != writes {
		t.Fatalf("%d writes for pins that do not count, want none", got-writes)
	}
	now := f.eng.Now()
	st := f.observe("a", time.Hour-time.Millisecond, -5*time.Minute)
	if st.Used != 2 {
		t.Fatalf("Used = %d, want 2", st.Used)
	}
	loaded, err := f.mem.Load(f.ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	var at []int64
	for _, e := range loaded.Events {
		if e.Kind != persistence.EventCommit || e.ID != ObservedID {
			t.Fatalf("journaled %+v, want commits of ID %d", e, ObservedID)
		}
		at = append(at, e.At)
	}
	if want := []int64{now.Add(-time.Hour + time.Millisecond).UnixMilli(), now.UnixMilli()}; !slices.Equal(at, want) {
		t.Fatalf("journaled pins at %v, want %v (the future one at now)", at, want)
	}
}

// TestObserveFullWindowKeepsNewest: more pins than the limit keep the
// newest as many as the window holds, and the account stays full until
// the limit-th newest leaves, exactly as Pinterest's ledger says.
func TestObserveFullWindowKeepsNewest(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Limit = 3; c.Window = time.Hour })
	f.fill("a", 3)
	// Five pins elsewhere, the newest 20 minutes ago: the account holds 8
	// pins; it frees a slot when the third newest (pinbot's own, now)
	// leaves, an hour from now.
	st := f.observe("a", 40*time.Minute, 20*time.Minute, 50*time.Minute, 30*time.Minute, 45*time.Minute)
	if st.Used != 3 || !st.NextFree.Equal(f.eng.Now().Add(time.Hour)) {
		t.Fatalf("status = %+v, want 3 used, next free in an hour", st)
	}
	f.clock.Advance(time.Hour - time.Millisecond)
	if g := f.reserve("a", 1); g.Granted != 0 {
		t.Fatalf("granted %d before pinbot's pins left", g.Granted)
	}
	f.clock.Advance(time.Millisecond)
	if g := f.reserve("a", 3); g.Granted != 3 {
		t.Fatalf("granted %d once they left, want 3", g.Granted)
	}
}

// TestObserveDurable: the pins survive a crash (journal replay) and a
// clean restart (snapshot). The window is full, so that replay must keep
// the newest pins as Observe kept them rather than grow as for a commit
// of a reservation it does not know.
func TestObserveDurable(t *testing.T) {
	cfg := func(c *Config) { c.Limit = 3; c.Window = time.Hour; c.SnapshotEvery = 1000 }
	f := newFixture(t, cfg)
	f.fill("a", 2)
	g := f.reserve("a", 1) // pending across the restarts
	f.clock.Advance(2 * time.Minute)
	// The window holds pinbot's 2 pins and 2 newer ones made elsewhere:
	// it keeps the newest 3. A slot frees when the pin made a minute ago
	// leaves.
	f.observe("a", time.Minute, 30*time.Second)
	live := f.status("a")
	if live.Used != 4 || live.Pending != 1 || !live.NextFree.Equal(f.eng.Now().Add(59*time.Minute)) {
		t.Fatalf("live %+v", live)
	}
	if err := f.eng.journal.Flush(f.ctx); err != nil {
		t.Fatal(err)
	}
	loaded, err := f.mem.Load(f.ctx, "a")
	if err != nil || loaded.Snapshot.Seq != 0 {
		t.Fatalf("want the journal alone: snapshot %d, %v", loaded.Snapshot.Seq, err)
	}
	c2 := testConfig(f.clock)
	cfg(&c2)
	eng2, err := New(c2, f.mem, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	replayed, err := eng2.Status(f.ctx, "a")
	_ = eng2.Close(f.ctx)
	if err != nil || replayed.Used != live.Used || replayed.Pending != live.Pending || !replayed.NextFree.Equal(live.NextFree) {
		t.Fatalf("replayed %+v, %v; live %+v", replayed, err, live)
	}

	f.restart(cfg)
	loaded, err = f.mem.Load(f.ctx, "a")
	if err != nil || loaded.Snapshot.Seq == 0 || len(loaded.Snapshot.Committed) != 3 {
		t.Fatalf("snapshot %+v, %v; want 3 pins", loaded.Snapshot, err)
	}
	if got := f.status("a"); got.Used != live.Used || got.Pending != live.Pending || !got.NextFree.Equal(live.NextFree) {
		t.Fatalf("after restart %+v, live %+v", got, live)
	}
	// The reservation is still pending, under its own ID.
	if _, err := f.eng.Commit(f.ctx, g.Reservations()[0], f.eng.Now()); err != nil {
		t.Fatalf("Commit after restart: %v", err)
	}
}

// TestLedgerObservedEventsNeverMatchReservations: replaying a commit of
// ID 0 records a pin made elsewhere and touches no reservation, whatever
// the reservation IDs; nor does it move the next ID.
func TestLedgerObservedEventsNeverMatchReservations(t *testing.T) {
	l := newLedger(10, time.Hour, 5*time.Minute)
	l.restore(persistence.Snapshot{NextID: 1, Pending: []persistence.Pending{{ID: 1, ReservedAt: 0, Deadline: 300_000}}})
	l.apply(persistence.Event{Kind: persistence.EventCommit, ID: ObservedID, At: 1000})
	if len(l.pending) != 1 || l.win.n != 1 || l.nextID != 2 {
		t.Fatalf("pending %v, %d pins, next ID %d; want the reservation pending, 1 pin, next ID 2", l.pending, l.win.n, l.nextID)
	}
	l.apply(persistence.Event{Kind: persistence.EventRelease, ID: ObservedID})
	if len(l.pending) != 1 || l.win.n != 1 || l.nextID != 2 {
		t.Fatalf("a release of ID 0 changed the ledger: pending %v, %d pins, next ID %d", l.pending, l.win.n, l.nextID)
	}
}

// TestObserveConcurrentWithReserve: Observe and Reserve on one account
// at once never grant past the limit, and every pin observed counts.
func TestObserveConcurrentWithReserve(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Limit = 50; c.Window = time.Hour })
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 8 {
		wg.Go(func() {
			for range 10 {
				g, err := f.eng.Reserve(f.ctx, "a", 1)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				granted += g.Granted
				mu.Unlock()
			}
		})
	}
	for i := range 4 {
		wg.Go(func() {
			for j := range 5 {
				if _, err := f.eng.Observe(f.ctx, "a", []time.Time{f.eng.Now().Add(-time.Duration(i*5+j) * time.Second)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	// Each grant found a slot free: the account ends full, with every pin
	// observed counted beside the grants.
	st := f.status("a")
	if granted < 30 || granted > 50 || st.Pending != granted || st.Used != granted+20 {
		t.Fatalf("granted %d, status %+v; want 30 to 50 granted, used = granted + the 20 pins made elsewhere", granted, st)
	}
}

// TestObserveWriteFails: a write that fails is reported as
// ErrUnavailable and the pins count in memory all the same; after a
// crash they are not stored, and observing them again counts them.
func TestObserveWriteFails(t *testing.T) {
	cfg := func(c *Config) { c.Limit = 3; c.Window = time.Hour }
	f := newFixture(t, cfg)
	f.store.FailWrites(fmt.Errorf("disk: %w", syscall.ENOSPC))
	now := f.eng.Now()
	pins := []time.Time{now.Add(-time.Minute), now.Add(-2 * time.Minute)}
	st, err := f.eng.Observe(f.ctx, "a", pins)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Observe with a failing store: %v, want ErrUnavailable", err)
	}
	if st.Used != 2 || f.status("a").Used != 2 {
		t.Fatalf("status %+v, want the pins counted in memory", st)
	}
	f.store.FailWrites(nil)

	// A crash: nothing of them was stored.
	c2 := testConfig(f.clock)
	cfg(&c2)
	eng2, err := New(c2, f.mem, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng2.Close(f.ctx)
	if st, err := eng2.Status(f.ctx, "a"); err != nil || st.Used != 0 {
		t.Fatalf("after a crash %+v, %v; want nothing stored", st, err)
	}
	if st, err := eng2.Observe(f.ctx, "a", pins); err != nil || st.Used != 2 {
		t.Fatalf("Observe again = %+v, %v; want 2 used", st, err)
	}
}
