package badgerstore

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
)

// TestStaleDeletesExpiredRecordOnDisk: events whose expiry has passed are
// hidden by Load and Journaled, so no engine can load and cover them.
// Stale must not name their account (each checkpoint would spawn, load and
// passivate it again), and the record they kept alive is deleted from the
// database, not only from the in-memory index that Records() reads.
func TestStaleDeletesExpiredRecordOnDisk(t *testing.T) {
	s, err := Open("", Options{InMemory: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(t.Context(), &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "gone",
		Events: []persistence.Event{{Seq: 1, Kind: persistence.EventCommit, ID: 1, At: 1000}}, ExpiresAt: 2000}}}); err != nil {
		t.Fatal(err)
	}
	if got := walSeqs(t, s); len(got) != 1 {
		t.Fatalf("WAL records before Stale = %v, want one", got)
	}
	if got := journaled(t, s); len(got) != 0 {
		t.Errorf("Journaled = %q, want none: the account's only events expired", got)
	}
	var stale []string
	if err := s.Stale(0, func(a string) error { stale = append(stale, a); return nil }); err != nil {
		t.Fatalf("Stale: %v", err)
	}
	if len(stale) != 0 || s.Records() != 0 {
		t.Errorf("Stale(0) = %v, Records() = %d; want none and 0", stale, s.Records())
	}
	if got := walSeqs(t, s); len(got) != 0 {
		t.Errorf("WAL records in the database after Stale = %v, want none (deleted as spent)", got)
	}
}

// TestStaleAcrossChunks: with more accounts than one chunk of the scans,
// Stale still names every account, and only those, with events in the
// stale records, and drops every expired event, whatever chunk it is in.
func TestStaleAcrossChunks(t *testing.T) {
	s, err := Open("", Options{InMemory: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 2*scanChunk + scanChunk/2
	event := []persistence.Event{{Seq: 1, Kind: persistence.EventCommit, ID: 1, At: 1000}}
	var old, first []persistence.AccountWrite
	var want []string
	for i := range n {
		a := fmt.Sprintf("old-%05d", i)
		want = append(want, a)
		old = append(old, persistence.AccountWrite{Account: a, Events: event})
		// Expired long ago: dropped, never named.
		first = append(first, persistence.AccountWrite{Account: fmt.Sprintf("exp-%05d", i), Events: event, ExpiresAt: 2000})
	}
	first = append(first, old...)
	if err := s.Write(t.Context(), &persistence.Batch{Accounts: first}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(t.Context(), &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "new", Events: event}}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := s.Stale(1, func(a string) error { got = append(got, a); return nil }); err != nil {
		t.Fatalf("Stale: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Stale(1) named %d accounts (first %q), want the %d old ones", len(got), got[:min(3, len(got))], len(want))
	}
	s.rlockIndex()
	indexed := len(s.wal.indexed())
	s.walMu.RUnlock()
	if indexed != n+1 {
		t.Errorf("%d accounts in the index after Stale, want %d: the expired ones dropped", indexed, n+1)
	}
}

// TestJournalCheckpointDeletesSegments: a checkpoint deletes the oldest
// segments once their events are all superseded, and an event no
// snapshot covers keeps its segment, and every later one.
func TestJournalCheckpointDeletesSegments(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	opts.JournalSegmentSize = 512
	s := openStore(t, dir, opts)
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "pinned", Events: []persistence.Event{reserve(1, 1, t0)}}}})
	const n = 60
	for seq := uint64(1); seq <= n; seq++ {
		aw := persistence.AccountWrite{Account: "x", Events: []persistence.Event{reserve(seq, seq, t0+int64(seq))}}
		if seq > 1 {
			aw.Snapshot = &persistence.Snapshot{Seq: seq - 1, NextID: seq}
		}
		mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{aw}})
	}
	segs := len(s.journal.Segments())
	if segs < 4 {
		t.Fatalf("%d segments, want several", segs)
	}
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if got := len(s.journal.Segments()); got != segs {
		t.Errorf("%d segments after a checkpoint, want all %d: the first holds pinned's event", got, segs)
	}
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "pinned", Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2}}}})
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	left := s.journal.Segments()
	if len(left) > 2 {
		t.Errorf("%d segments after the last events were snapshotted and a checkpoint, want at most 2: %v", len(left), left)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, journalDir, "*.seg")); len(files) != len(left) {
		t.Errorf("%d segment files, %d segments", len(files), len(left))
	}
	for range 2 {
		s = reopenWith(t, s, dir, opts)
		checkLoaded(t, s, "x", persistence.Loaded{Snapshot: persistence.Snapshot{Seq: n - 1, NextID: n}, Events: []persistence.Event{reserve(n, n, t0+n)}})
		checkLoaded(t, s, "pinned", persistence.Loaded{Snapshot: persistence.Snapshot{Seq: 1, NextID: 2}})
	}
}

// TestStaleShrinksIndex: once snapshots cover the events of most of the
// accounts the index held at its peak, a checkpoint remakes the index's
// map at its present size (a Go map keeps its peak's room, which the
// collector walks), and the accounts left keep their events.
func TestStaleShrinksIndex(t *testing.T) {
	s, err := Open("", Options{InMemory: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 2 * shrinkFloor
	event := []persistence.Event{{Seq: 1, Kind: persistence.EventCommit, ID: 1, At: 1000}}
	var all, covered []persistence.AccountWrite
	for i := range n {
		a := fmt.Sprintf("acct-%05d", i)
		all = append(all, persistence.AccountWrite{Account: a, Events: event})
		if i%8 != 0 {
			covered = append(covered, persistence.AccountWrite{Account: a, Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2}})
		}
	}
	mustWrite(t, s, &persistence.Batch{Accounts: all})
	stale := func() {
		t.Helper()
		if err := s.Stale(0, func(string) error { return nil }); err != nil {
			t.Fatalf("Stale: %v", err)
		}
	}
	stale()
	if s.wal.peak != n {
		t.Fatalf("peak %d after a checkpoint with every account's events live, want %d (not remade)", s.wal.peak, n)
	}
	mustWrite(t, s, &persistence.Batch{Accounts: covered})
	stale()
	s.rlockIndex()
	left, peak := len(s.wal.tails), s.wal.peak
	s.walMu.RUnlock()
	if left != n/8 || peak != left {
		t.Fatalf("%d accounts in the index at peak %d, want %d and the map remade at that size", left, peak, n/8)
	}
	if got := s.wal.get("acct-00008"); len(got) != 1 {
		t.Fatalf("an account not covered has %d events after the remake, want 1", len(got))
	}
	if got := s.wal.get("acct-00001"); len(got) != 0 {
		t.Fatalf("a covered account has %d events, want 0", len(got))
	}
}
