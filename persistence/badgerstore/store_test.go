package badgerstore

import (
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// testOptions are small enough that many stores can be open in one test
// binary, and make a transaction overflow after about 1,600 entries.
func testOptions() Options {
	return Options{MemTableSize: 1 << 20, BlockCacheSize: 1 << 20, JournalSegmentSize: 1 << 20}
}

func openStore(t *testing.T, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts, zerolog.Nop())
	if err != nil {
		t.Fatalf("Open(%q): %v", dir, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newTestStore opens an in-memory store with testOptions.
func newTestStore(t *testing.T) *Store {
	t.Helper()
	opts := testOptions()
	opts.InMemory = true
	return openStore(t, "", opts)
}

// storedSeqs returns the journal seqs the WAL index keeps for account,
// including those a snapshot hides from Load.
func storedSeqs(s persistence.Store, account string) []uint64 {
	bs := s.(*Store)
	bs.rlockIndex()
	defer bs.walMu.RUnlock()
	var seqs []uint64
	for _, te := range bs.wal.get(account) {
		seqs = append(seqs, te.Seq)
	}
	return seqs
}

// TestStoreConformance runs persistencetest's suite against the store in
// memory and on disk.
func TestStoreConformance(t *testing.T) {
	t.Run("InMemory", func(t *testing.T) {
		persistencetest.TestStore(t, func(t *testing.T) persistence.Store { return newTestStore(t) }, storedSeqs)
	})
	t.Run("OnDisk", func(t *testing.T) {
		persistencetest.TestStore(t, func(t *testing.T) persistence.Store {
			opts := testOptions()
			opts.Durable = true
			return openStore(t, t.TempDir(), opts)
		}, storedSeqs)
	})
}

// The shared helpers of the store tests (persistencetest), under the short
// names these tests use.
const (
	t0 = persistencetest.T0
	t1 = persistencetest.T1
	t2 = persistencetest.T2
	t3 = persistencetest.T3
)

var (
	reserve       = persistencetest.Reserve
	commit        = persistencetest.Commit
	release       = persistencetest.Release
	mustWrite     = persistencetest.MustWrite
	mustLoad      = persistencetest.MustLoad
	checkLoaded   = persistencetest.CheckLoaded
	equalSnapshot = persistencetest.EqualSnapshot
	equalLoaded   = persistencetest.EqualLoaded
	accounts      = persistencetest.Accounts
)

func rawSet(t *testing.T, s *Store, key, value []byte) {
	t.Helper()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.walMu.Lock()
	defer s.walMu.Unlock()
	s.settleLocked()
	txn := s.db.NewTransactionAt(math.MaxUint64, true)
	defer txn.Discard()
	if err := txn.Set(key, value); err != nil {
		t.Fatalf("raw set %q: %v", key, err)
	}
	ts := s.nextVersion()
	if err := txn.CommitAt(ts, nil); err != nil {
		t.Fatalf("raw set %q: %v", key, err)
	}
	s.committed(ts)
}

func journaled(t *testing.T, s persistence.Store) []string {
	t.Helper()
	var got []string
	if err := s.Journaled(t.Context(), func(a string) error {
		got = append(got, a)
		return nil
	}); err != nil {
		t.Fatalf("Journaled: %v", err)
	}
	return got
}

// reopen closes s and opens its directory again, as after a restart.
func reopen(t *testing.T, s *Store, dir string) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openStore(t, dir, testOptions())
}

func reopenWith(t *testing.T, s *Store, dir string, opts Options) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openStore(t, dir, opts)
}

// walSeqs returns the seqs of the journal records that hold live events
// (those whose segments the store keeps), ascending.
func walSeqs(t *testing.T, s *Store) []uint64 {
	t.Helper()
	s.rlockIndex()
	defer s.walMu.RUnlock()
	return slices.Sorted(maps.Keys(s.wal.live))
}
