package badgerstore

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
)

// memtableFiles returns the names of the memtable log files in dir, sorted.
func memtableFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.mem"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	slices.Sort(names)
	return names
}

// writeUntilNewMemtable writes snapshots of fresh accounts until Badger
// starts a memtable log file that is not in have, and returns the files
// then present. Badger creates the file in the write that finds the
// memtable full, so it is there when that Write returns.
func writeUntilNewMemtable(t *testing.T, s *Store, dir string, have []string, next *int) []string {
	t.Helper()
	committed := make([]int64, 100)
	for i := range committed {
		committed[i] = t0 + int64(i)
	}
	for range 10_000 {
		var b persistence.Batch
		for range 20 {
			*next++
			b.Accounts = append(b.Accounts, persistence.AccountWrite{Account: fmt.Sprintf("fill-%d", *next),
				Snapshot: &persistence.Snapshot{Seq: 100, NextID: 101, Committed: committed}})
		}
		mustWrite(t, s, &b)
		now := memtableFiles(t, dir)
		for _, f := range now {
			if !slices.Contains(have, f) {
				return now
			}
		}
	}
	t.Fatal("no new memtable after 200,000 snapshots")
	return nil
}

// level0Tables returns how many tables Badger has at level 0.
func level0Tables(s *Store) int {
	n := 0
	for _, ti := range s.db.Tables() {
		if ti.Level == 0 {
			n++
		}
	}
	return n
}

// TestBadgerHoldDefersMemtableDeletion: a memtable Badger flushed is not
// deleted by Badger's flusher (which would do it under the database lock
// every write waits for) while the hold references it, and the hold's next
// refresh deletes it.
func TestBadgerHoldDefersMemtableDeletion(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	opts.MinFreeBytes = -1
	s := openStore(t, dir, opts)
	s.writeMu.Lock()
	s.holdEvery = math.MaxInt64 // only this test refreshes the hold
	s.writeMu.Unlock()
	s.hold.refresh()

	first := memtableFiles(t, dir)
	if len(first) != 1 {
		t.Fatalf("memtable files at open: %v, want one", first)
	}
	held := first[0]
	next := 0
	second := writeUntilNewMemtable(t, s, dir, first, &next)
	writeUntilNewMemtable(t, s, dir, second, &next)

	// Badger flushes one memtable at a time: once the second table is at
	// level 0 (too few tables for a compaction to move them), the flusher
	// is done with the first memtable, including dropping its reference.
	// It runs on a goroutine of Badger's that reports nothing else, hence
	// the wait.
	deadline := time.Now().Add(30 * time.Second)
	for level0Tables(s) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("Badger flushed %d memtables in 30 s, want 2", level0Tables(s))
		}
		runtime.Gosched()
	}
	if !slices.Contains(memtableFiles(t, dir), held) {
		t.Fatalf("%s deleted while the hold referenced it; files: %v", held, memtableFiles(t, dir))
	}
	s.hold.refresh()
	if files := memtableFiles(t, dir); slices.Contains(files, held) {
		t.Fatalf("%s still there after the hold let go of it; files: %v", held, files)
	}
	if l := mustLoad(t, s, "fill-1"); l.Snapshot.Seq != 100 {
		t.Fatalf("Load(fill-1) = %+v after the flushes, want its snapshot", l)
	}
}

// TestBadgerWritesRefreshTheHold: Write asks for a refresh of the hold
// every holdEvery bytes, and Close lets the refresh asked for last finish
// before it closes the database, then leaves nothing held.
func TestBadgerWritesRefreshTheHold(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	opts.MinFreeBytes = -1
	s, err := Open(dir, opts, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.hold.refreshes.Load(); got != 1 {
		t.Fatalf("%d refreshes at open, want 1", got)
	}
	s.writeMu.Lock()
	s.holdEvery = 2 * entryOverhead
	s.writeMu.Unlock()
	for i := range 5 {
		mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: fmt.Sprintf("a%d", i),
			Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2, Committed: []int64{t0}}}}})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Each write of one snapshot counts more than entryOverhead bytes,
	// so five pass holdEvery at least twice. A wake-up that comes while
	// one is pending is merged with it, so there may be fewer refreshes
	// than that, but at least one; they run on their own goroutine, which
	// Close waits for.
	if got := s.hold.refreshes.Load(); got < 2 {
		t.Errorf("%d refreshes after writing more than holdEvery bytes, want at least 2", got)
	}
	if s.hold.it != nil || s.hold.txn != nil {
		t.Error("the hold still references memtables after Close")
	}
	s2 := openStore(t, dir, opts)
	if l := mustLoad(t, s2, "a3"); l.Snapshot.Seq != 1 {
		t.Errorf("Load(a3) after reopening = %+v, want its snapshot", l)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}

// TestBadgerInMemoryHasNoHold: an in-memory store has no memtable files,
// so no hold and no goroutine for it.
func TestBadgerInMemoryHasNoHold(t *testing.T) {
	s := newTestStore(t)
	if s.hold != nil || s.holdWake != nil {
		t.Fatal("in-memory store has a memtable hold")
	}
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2}}}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
