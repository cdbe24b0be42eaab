package actors

import (
	"context"
	"testing"
	"time"
)

// TestHoldSubMillisecond: a hold ending a fraction of a millisecond after
// the engine's now (the bot computes until = eng.Now() plus Pinterest's
// reset, to the nanosecond) is still in force: engine time is in whole
// milliseconds, so until is rounded up, not down to now and ignored.
func TestHoldSubMillisecond(t *testing.T) {
	f := newFixture(t)
	until := f.eng.Now().Add(500 * time.Microsecond)
	st, err := f.eng.Hold(f.ctx, "a", until)
	if err != nil {
		t.Fatalf("Hold: %v", err)
	}
	if st.NextFree.Before(until) {
		t.Errorf("after Hold(%v), NextFree = %v, before the hold ends", until.UTC(), st.NextFree.UTC())
	}
	g, err := f.eng.Reserve(context.Background(), "a", 1)
	if err != nil {
		t.Fatal(err)
	}
	if g.Granted != 0 && f.eng.Now().Before(until) {
		t.Errorf("granted %d at %v, before the hold until %v", g.Granted, f.eng.Now().UTC(), until.UTC())
	}
}

// TestClampReplayBoundary: Commit clamps `at` to [reservation, now]; a lease-expired
// reservation becomes a pin at its deadline; a journal-only replay
// (crash, no snapshot) restores exactly the same state; each pin stops
// counting at exactly T+12h and not a millisecond earlier.
func TestClampReplayBoundary(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Limit = 3; c.SnapshotEvery = 1000 })
	t0 := f.eng.Now()
	g := f.reserve("a", 3)
	rs := g.Reservations()
	f.clock.Advance(time.Minute)
	// Before the reservation: clamped up to t0.
	if _, err := f.eng.Commit(f.ctx, rs[0], t0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	// Far in the future: clamped down to now (t0+1m).
	if _, err := f.eng.Commit(f.ctx, rs[1], t0.Add(48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// rs[2] expires into a pin at t0+5m; a commit at the deadline keeps
	// it there.
	f.clock.Set(t0.Add(5 * time.Minute))
	if _, err := f.eng.Commit(f.ctx, rs[2], f.eng.Now()); err != nil {
		t.Fatalf("commit at the deadline: %v", err)
	}
	if _, err := f.eng.Commit(f.ctx, rs[0], f.eng.Now()); err == nil {
		t.Fatal("second commit accepted")
	}
	// Crash: a second engine replays the journal only.
	if err := f.eng.journal.Flush(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.restart()
	for _, c := range []struct {
		at   time.Duration
		used int
	}{
		{12*time.Hour - time.Millisecond, 3},
		{12 * time.Hour, 2},
		{12*time.Hour + time.Minute - time.Millisecond, 2},
		{12*time.Hour + time.Minute, 1},
		{12*time.Hour + 5*time.Minute - time.Millisecond, 1},
		{12*time.Hour + 5*time.Minute, 0},
	} {
		f.clock.Set(t0.Add(c.at))
		if st := f.status("a"); st.Used != c.used {
			t.Fatalf("at t0+%v: used %d want %d", c.at, st.Used, c.used)
		}
	}
}
