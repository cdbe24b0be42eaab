package badgerstore

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/persistence"
)

// snapshotVersions counts the versions of account's snapshot key that
// Badger still holds, deleted and overwritten ones included.
func snapshotVersions(t *testing.T, s *Store, account string) int {
	t.Helper()
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		key := appendSnapshotKey(nil, account)
		it := txn.NewIterator(badger.IteratorOptions{AllVersions: true, Prefix: key})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if bytes.Equal(it.Item().Key(), key) {
				n++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("count versions: %v", err)
	}
	return n
}

// fillAndFlatten writes 40,000 snapshots of other accounts (named after
// round), enough to fill several 1 MiB memtables, and compacts the tree.
func fillAndFlatten(t *testing.T, s *Store, round int) {
	t.Helper()
	committed := make([]int64, 100)
	for i := range committed {
		committed[i] = t0 + int64(i)
	}
	for batch := range 400 {
		var b persistence.Batch
		for i := range 100 {
			b.Accounts = append(b.Accounts, persistence.AccountWrite{Account: fmt.Sprintf("fill-%d-%d-%d", round, batch, i),
				Snapshot: &persistence.Snapshot{Seq: 100, NextID: 101, Committed: committed}})
		}
		mustWrite(t, s, &b)
	}
	if err := s.db.Flatten(1); err != nil {
		t.Fatal(err)
	}
}

// TestBadgerDropsOldVersions: the store reads only the newest version of
// a key, and tells Badger so: compaction drops the overwritten versions
// instead of keeping them on disk for ever.
func TestBadgerDropsOldVersions(t *testing.T) {
	s := openStore(t, t.TempDir(), testOptions())
	for seq := uint64(1); seq <= 30; seq++ {
		mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "x", Snapshot: &persistence.Snapshot{Seq: seq, NextID: seq + 1}}}})
	}
	if n := snapshotVersions(t, s, "x"); n != 30 {
		t.Fatalf("%d versions before compaction, want 30 (the count is wrong)", n)
	}
	// Other accounts' snapshots fill several 1 MiB memtables, so that the
	// one holding x's versions is flushed to a table, and compaction has
	// tables to work on. Badger may move a table to another level without
	// rewriting it, so this goes on, a few rounds at most, until a
	// compaction rewrote x's table; without a discard timestamp no
	// compaction drops a version.
	n := 0
	for round := range 5 {
		fillAndFlatten(t, s, round)
		if n = snapshotVersions(t, s, "x"); n == 1 {
			break
		}
	}
	if n != 1 {
		t.Errorf("%d versions after compactions, want 1", n)
	}
	if l := mustLoad(t, s, "x"); l.Snapshot.Seq != 30 {
		t.Errorf("Load = snapshot %d, want 30", l.Snapshot.Seq)
	}
}

// TestBadgerLongReadKeepsItsVersions: a read that began before later
// writes and a compaction still sees the versions of its moment. Badger
// may drop a superseded version only below the oldest read in progress.
func TestBadgerLongReadKeepsItsVersions(t *testing.T) {
	s := openStore(t, t.TempDir(), testOptions())
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "x", Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2}}}})
	s.Settle() // view reads at the settled version
	err := s.view(func(txn *badger.Txn) error {
		// Overwrite x, then write and compact enough that the table
		// holding the first version is rewritten.
		mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "x", Snapshot: &persistence.Snapshot{Seq: 2, NextID: 3}}}})
		for round := range 3 {
			fillAndFlatten(t, s, round)
		}
		snap, found, err := s.readSnapshot(txn, "x")
		if err != nil || !found || snap.Seq != 1 {
			t.Errorf("the read sees snapshot %d (found %v, %v), want the one of its moment, 1", snap.Seq, found, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if l := mustLoad(t, s, "x"); l.Snapshot.Seq != 2 {
		t.Errorf("a new read sees snapshot %d, want 2", l.Snapshot.Seq)
	}
}
