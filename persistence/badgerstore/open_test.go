package badgerstore

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

func TestBadgerDurableReopen(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	opts.Durable = true
	s, err := Open(dir, opts, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	snap := &persistence.Snapshot{Seq: 2, NextID: 3, Committed: []int64{t0, t1}, Pending: []persistence.Pending{{ID: 2, ReservedAt: t1, Deadline: t2}},
		Lapsed: []persistence.Lapsed{{ID: 1, Deadline: t1}}}
	anchor := persistence.ClockAnchor{BootID: "boot-1", Uptime: 5_000, Engine: t2}
	if a, err := s.Anchor(t.Context()); err != nil || a != (persistence.ClockAnchor{}) {
		t.Fatalf("Anchor of a new store = %+v, %v; want none", a, err)
	}
	if err := s.SetAnchor(t.Context(), anchor); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, &persistence.Batch{HighWater: t2, Accounts: []persistence.AccountWrite{
		{Account: "a", Events: []persistence.Event{reserve(1, 1, t0), commit(2, 1, t0), reserve(3, 3, t2)}, Snapshot: snap,
			ExpiresAt: time.Now().Add(time.Hour).UnixMilli()},
		{Account: "b", Events: []persistence.Event{reserve(1, 1, t1)}},
	}})
	mustWrite(t, s, &persistence.Batch{HighWater: t1})
	want := map[string]persistence.Loaded{
		"a": mustLoad(t, s, "a"),
		"b": mustLoad(t, s, "b"),
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir, opts)
	for a, w := range want {
		checkLoaded(t, s, a, w)
	}
	if hw, err := s.HighWater(t.Context()); hw != t2 || err != nil {
		t.Errorf("HighWater after reopen = %d, %v want %d", hw, err, t2)
	}
	if a, err := s.Anchor(t.Context()); a != anchor || err != nil {
		t.Errorf("Anchor after reopen = %+v, %v want %+v", a, err, anchor)
	}
	if got := accounts(t, s); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Accounts after reopen = %q", got)
	}
}

// TestBadgerOpensUnmanagedStore: a store last written by Badger's own
// timestamps (as before the store chose them itself) is opened and
// written on; the new writes are newer than every stored version.
func TestBadgerOpensUnmanagedStore(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	db, err := badger.Open(opts.badger(dir, zerolog.Nop()))
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 20; seq++ {
		v := codec.AppendSnapshot(nil, &persistence.Snapshot{Seq: seq, NextID: seq + 1})
		if err := db.Update(func(txn *badger.Txn) error { return txn.Set(appendSnapshotKey(nil, "x"), v) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, testOptions())
	if l := mustLoad(t, s, "x"); l.Snapshot.Seq != 20 {
		t.Fatalf("Load = snapshot %d, want the last one written, 20", l.Snapshot.Seq)
	}
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "x", Snapshot: &persistence.Snapshot{Seq: 21, NextID: 22}}}})
	if l := mustLoad(t, s, "x"); l.Snapshot.Seq != 21 {
		t.Fatalf("after a write, Load = snapshot %d, want 21", l.Snapshot.Seq)
	}
	s = reopen(t, s, dir)
	if l := mustLoad(t, s, "x"); l.Snapshot.Seq != 21 {
		t.Fatalf("after reopening, Load = snapshot %d, want 21", l.Snapshot.Seq)
	}
}

// TestOpenAfterInterruptedOpen: a process killed while Badger created its
// new value log at open leaves an empty .vlog file, which Badger itself
// then refuses to open; Open removes it and opens, with every write still
// there. The soak found it: a kill just after start.
func TestOpenAfterInterruptedOpen(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Events: []persistence.Event{reserve(1, 1, t0)}}}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// What the kill left: the next value log, created and still empty.
	names, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if err != nil || len(names) == 0 {
		t.Fatalf("value logs in %s: %v, %v", dir, names, err)
	}
	empty := filepath.Join(dir, "000999.vlog")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	// Badger alone cannot open the directory (if a release fixes that,
	// RemoveEmptyLogs can go).
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err == nil {
		db.Close()
		t.Fatal("badger opened the directory with an empty value log; RemoveEmptyLogs is no longer needed")
	}
	if !strings.Contains(err.Error(), "Create a new file") {
		t.Fatalf("badger.Open: %v, want its \"Create a new file\" error", err)
	}
	// Badger's failed open set the file up; make it empty again.
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir, testOptions())
	checkLoaded(t, s, "a", persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t0)}})
	if _, err := os.Stat(empty); !os.IsNotExist(err) {
		t.Fatalf("the empty value log is still there: %v", err)
	}
}

// TestOpenAfterKillDuringMemtableDelete: Badger deletes the file of a
// flushed memtable by truncating it to zero bytes, then removing it (and
// creates a memtable's file empty, then sizes it); a process killed in
// between leaves an empty .mem file, which Badger itself then refuses to
// open ("while opening fid: ... Create a new file"). Open removes it and
// opens, with the clock anchor and every write still there. The soak
// found it: a kill while a memtable was being deleted.
func TestOpenAfterKillDuringMemtableDelete(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	anchor := persistence.ClockAnchor{BootID: "boot", Uptime: 5, Engine: t1}
	if err := s.SetAnchor(t.Context(), anchor); err != nil {
		t.Fatal(err)
	}
	snap := &persistence.Snapshot{Seq: 1, NextID: 2, Committed: []int64{t0}}
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Snapshot: snap, Events: []persistence.Event{reserve(1, 1, t0)}}}})
	// Close flushes the memtable to a table and deletes its file.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// What the kill left: a memtable file truncated to zero bytes.
	empty := filepath.Join(dir, "00099.mem")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	// Badger alone cannot open the directory (if a release fixes that,
	// RemoveEmptyLogs need not look at memtable files).
	db, err := badger.OpenManaged(badger.DefaultOptions(dir).WithLogger(nil))
	if err == nil {
		db.Close()
		t.Fatal("badger opened the directory with an empty memtable file; RemoveEmptyLogs need not remove them")
	}
	if !strings.Contains(err.Error(), "Create a new file") {
		t.Fatalf("badger.Open: %v, want its \"Create a new file\" error", err)
	}
	// Badger's failed open set the file up; make it empty again.
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir, testOptions())
	checkLoaded(t, s, "a", persistence.Loaded{Snapshot: *snap})
	if got, err := s.Anchor(t.Context()); err != nil || got != anchor {
		t.Errorf("Anchor = %+v, %v; want %+v", got, err, anchor)
	}
	if _, err := os.Stat(empty); !os.IsNotExist(err) {
		t.Fatalf("the empty memtable file is still there: %v", err)
	}
}

func TestBadgerCorruptHighWater(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, testOptions(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	bad := codec.AppendHighWater(nil, t0)
	bad[len(bad)-1] ^= 1 // the checksum no longer matches
	rawSet(t, s, highWaterKey, bad)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the failed open releases the directory
		if _, err := Open(dir, testOptions(), zerolog.Nop()); !errors.Is(err, persistence.ErrCorrupt) {
			t.Fatalf("open with corrupt high water = %v, want ErrCorrupt", err)
		}
	}
}
