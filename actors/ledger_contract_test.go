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
// pin made at its deadline; like Commit (checked in
// TestEngineReserveCommitRelease), a late Release must be refused and must
// not free the slot. The property test never resolves an expired ID.
func TestReleaseAfterLease(t *testing.T) {
	f := newFixture(t)
	g := f.reserve("a", 1)
	f.clock.Advance(DefaultConfig().Lease)
	if _, err := f.eng.Release(f.ctx, g.Reservations()[0]); !errors.Is(err, ErrUnknownReservation) {
		t.Fatalf("Release after the lease: %v, want ErrUnknownReservation", err)
	}
	if st := f.status("a"); st.Used != 1 || st.Pending != 0 {
		t.Fatalf("after a late Release: %+v, want the expired slot still used", st)
	}
}
