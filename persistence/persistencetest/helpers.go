package persistencetest

import (
	"slices"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

// Fixed engine instants (Unix ms) the tests of stores use as event times.
const (
	T0 = int64(1_700_000_000_000)
	T1 = T0 + 60_000
	T2 = T0 + 120_000
	T3 = T0 + 180_000
)

// Reserve is the event of reservation id granted at at, with a 30 s lease.
func Reserve(seq, id uint64, at int64) persistence.Event {
	return persistence.Event{Seq: seq, Kind: persistence.EventReserve, ID: id, Count: 1, At: at, Deadline: at + 30_000}
}

// Commit is the event of reservation id becoming a pin at at.
func Commit(seq, id uint64, at int64) persistence.Event {
	return persistence.Event{Seq: seq, Kind: persistence.EventCommit, ID: id, At: at}
}

// Release is the event of reservation id released.
func Release(seq, id uint64) persistence.Event {
	return persistence.Event{Seq: seq, Kind: persistence.EventRelease, ID: id}
}

// MustWrite writes b to s, failing the test on an error.
func MustWrite(t *testing.T, s persistence.Store, b *persistence.Batch) {
	t.Helper()
	if err := s.Write(t.Context(), b); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

// MustLoad loads account from s, failing the test on an error.
func MustLoad(t *testing.T, s persistence.Store, account string) persistence.Loaded {
	t.Helper()
	l, err := s.Load(t.Context(), account)
	if err != nil {
		t.Fatalf("Load(%q): %v", account, err)
	}
	return l
}

// CheckLoaded checks that account loads from s as want.
func CheckLoaded(t *testing.T, s persistence.Store, account string, want persistence.Loaded) {
	t.Helper()
	got := MustLoad(t, s, account)
	if !EqualLoaded(got, want) {
		t.Errorf("Load(%q) =\n  %+v\nwant\n  %+v", account, got, want)
	}
}

// EqualSnapshot reports whether a and b hold the same state.
func EqualSnapshot(a, b persistence.Snapshot) bool {
	return a.Seq == b.Seq && a.NextID == b.NextID && a.HoldUntil == b.HoldUntil && a.Rebuilt == b.Rebuilt &&
		slices.Equal(a.Committed, b.Committed) && slices.Equal(a.Pending, b.Pending) && slices.Equal(a.Lapsed, b.Lapsed)
}

// EqualLoaded reports whether a and b hold the same state and events.
func EqualLoaded(a, b persistence.Loaded) bool {
	return EqualSnapshot(a.Snapshot, b.Snapshot) && slices.Equal(a.Events, b.Events)
}

// Accounts lists the accounts s holds, in key order.
func Accounts(t *testing.T, s persistence.Store) []string {
	t.Helper()
	var got []string
	if err := s.Accounts(t.Context(), func(a string) error {
		got = append(got, a)
		return nil
	}); err != nil {
		t.Fatalf("Accounts: %v", err)
	}
	return got
}
