package actors

import (
	"errors"
	"testing"
	"time"
)

// TestLedgerCommitClamp: a commit's pin time is its `at` clamped to
// [reservation time, now], checked against values worked out here (the
// property test's model takes the pin time from the ledger itself).
func TestLedgerCommitClamp(t *testing.T) {
	const width, lease = 1000, 100
	for _, tc := range []struct {
		name    string
		at      int64 // offset from the reservation
		now     int64 // offset from the reservation
		wantOff int64
	}{
		{"before the reservation", -50, 40, 0},
		{"inside", 20, 40, 20},
		{"after now", 90, 40, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLedger(1, width*time.Millisecond, lease*time.Millisecond)
			r0 := ms(monday)
			first, g := l.reserve(r0, 1)
			if g != 1 {
				t.Fatalf("granted %d", g)
			}
			got, _, ok := l.commit(r0+tc.now, first, r0+tc.at)
			if !ok || got != r0+tc.wantOff {
				t.Fatalf("commit(at=r0%+d, now=r0%+d) = r0%+d, %v; want r0%+d", tc.at, tc.now, got-r0, ok, tc.wantOff)
			}
			// The pin blocks the (limit 1) account until exactly width after it.
			end := r0 + tc.wantOff + width
			l.expire(end - 1)
			if n := l.used(end - 1); n != 1 {
				t.Errorf("used at pin+width-1ms = %d, want 1", n)
			}
		})
	}
}

// TestReleaseAfterLease: a reservation whose lease ran out counts as a
// pin made at its deadline. A Release after that (the caller knows nothing
// was sent) gives the slot back, once; a Release after the pin stopped
// counting finds nothing.
func TestReleaseAfterLease(t *testing.T) {
	f := newFixture(t)
	g := f.reserve("a", 2)
	rs := g.Reservations()
	f.clock.Advance(DefaultConfig().Lease)
	if st := f.status("a"); st.Used != 2 || st.Pending != 0 {
		t.Fatalf("after the lease: %+v, want both slots used as pins", st)
	}
	st, err := f.eng.Release(f.ctx, rs[0])
	if err != nil || st.Used != 1 {
		t.Fatalf("Release after the lease = %+v, %v; want the slot given back", st, err)
	}
	if _, err := f.eng.Release(f.ctx, rs[0]); !errors.Is(err, ErrUnknownReservation) {
		t.Fatalf("second Release: %v, want ErrUnknownReservation", err)
	}
	f.clock.Advance(DefaultWindow)
	if _, err := f.eng.Release(f.ctx, rs[1]); !errors.Is(err, ErrUnknownReservation) {
		t.Fatalf("Release a window after the lease: %v, want ErrUnknownReservation", err)
	}
}
