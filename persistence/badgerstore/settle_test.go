package badgerstore

import (
	"errors"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
)

// isPending reports whether s has an index update left to settle.
func isPending(s *Store) bool {
	s.walMu.RLock()
	defer s.walMu.RUnlock()
	return s.pending != nil
}

// TestWriteReturnsAtCommit: Write returns once its transaction has
// committed, durable, leaving the index update pending; Settle applies
// it, and a store closed without it opens with the write there.
func TestWriteReturnsAtCommit(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	opts.Durable = true
	s, err := Open(dir, opts, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	snap := persistence.Snapshot{Seq: 1, NextID: 2}
	mustWrite(t, s, &persistence.Batch{HighWater: t0, Accounts: []persistence.AccountWrite{
		{Account: "a", Events: []persistence.Event{reserve(2, 2, t0)}, Snapshot: &snap},
	}})
	if !isPending(s) {
		t.Fatal("the index update was applied before Write returned")
	}
	// The transaction has committed: its snapshot reads back at its
	// version, which reads do not use yet.
	s.walMu.RLock()
	ts, readTs := s.pendingTs, s.readTs
	s.walMu.RUnlock()
	if readTs >= ts {
		t.Errorf("reads at version %d before the write at %d settled", readTs, ts)
	}
	txn := s.db.NewTransactionAt(ts, false)
	got, found, err := s.readSnapshot(txn, "a")
	txn.Discard()
	if err != nil || !found || got.Seq != snap.Seq {
		t.Errorf("snapshot at the write's version: found %v, seq %d, %v", found, got.Seq, err)
	}
	if hw, _ := s.HighWater(t.Context()); hw != t0 {
		t.Errorf("HighWater = %d, want %d", hw, t0)
	}
	s.Settle()
	if isPending(s) {
		t.Error("Settle left the update pending")
	}
	checkLoaded(t, s, "a", persistence.Loaded{Snapshot: snap, Events: []persistence.Event{reserve(2, 2, t0)}})

	// Closed with an update pending: what Write returned for is on disk.
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "b", Events: []persistence.Event{reserve(1, 1, t1)}}}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.Settle() // does nothing once closed
	if err := s.Write(t.Context(), &persistence.Batch{HighWater: t1}); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	s = openStore(t, dir, opts)
	checkLoaded(t, s, "a", persistence.Loaded{Snapshot: snap, Events: []persistence.Event{reserve(2, 2, t0)}})
	checkLoaded(t, s, "b", persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t1)}})
}

// TestCallsSettleFirst: every call that reads the index or moves the
// read version applies the update a Write left pending before anything
// else, so a call that starts after a Write returned sees that write.
func TestCallsSettleFirst(t *testing.T) {
	calls := []struct {
		name string
		call func(t *testing.T, s *Store)
	}{
		{"Load", func(t *testing.T, s *Store) {
			checkLoaded(t, s, "new", persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t1)}})
		}},
		{"Accounts", func(t *testing.T, s *Store) {
			if got := accounts(t, s); !slices.Equal(got, []string{"new", "old"}) {
				t.Errorf("Accounts = %q, want [new old]", got)
			}
		}},
		{"Journaled", func(t *testing.T, s *Store) {
			if got := journaled(t, s); !slices.Equal(got, []string{"new"}) {
				t.Errorf("Journaled = %q, want [new]", got)
			}
		}},
		{"Records", func(t *testing.T, s *Store) {
			if n := s.Records(); n != 1 {
				t.Errorf("Records = %d, want 1 (the new account's)", n)
			}
		}},
		{"Stale", func(t *testing.T, s *Store) {
			var got []string
			if err := s.Stale(0, func(a string) error { got = append(got, a); return nil }); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, []string{"new"}) {
				t.Errorf("Stale(0) = %q, want [new]", got)
			}
		}},
		{"SetAnchor", func(t *testing.T, s *Store) {
			if err := s.SetAnchor(t.Context(), persistence.ClockAnchor{BootID: "b", Uptime: 1, Engine: t1}); err != nil {
				t.Fatal(err)
			}
		}},
		{"Write", func(t *testing.T, s *Store) {
			mustWrite(t, s, &persistence.Batch{HighWater: t2})
		}},
		{"Backup", func(t *testing.T, s *Store) {
			checkLoaded(t, restoreCopy(t, s), "new", persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t1)}})
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			s := newTestStore(t)
			// "old" has a snapshot that covers its event; the second write
			// leaves "new"'s event pending, and the record of "old"'s event
			// spent.
			mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "old", Events: []persistence.Event{reserve(1, 1, t0)}}}})
			mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
				{Account: "old", Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2}},
				{Account: "new", Events: []persistence.Event{reserve(1, 1, t1)}},
			}})
			if !isPending(s) {
				t.Fatal("nothing pending after Write")
			}
			c.call(t, s)
			if c.name != "Write" && isPending(s) {
				t.Errorf("%s left the update pending", c.name)
			}
			s.Settle()
			checkLoaded(t, s, "old", persistence.Loaded{Snapshot: persistence.Snapshot{Seq: 1, NextID: 2}})
			checkLoaded(t, s, "new", persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t1)}})
			if got := walSeqs(t, s); len(got) != s.Records() {
				t.Errorf("%d WAL records on disk, %d live in the index", len(got), s.Records())
			}
		})
	}
}
