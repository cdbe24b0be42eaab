package badgerstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
	"github.com/pinbot/pinbot/persistence/seglog"
)

// crash closes s the way a killed process leaves it: no checkpoint, the
// log and Badger closed as they are.
func crash(t *testing.T, s *Store) {
	t.Helper()
	if !s.life.Close() {
		t.Fatal("crash: store already closed")
	}
	if s.hold != nil {
		close(s.holdWake)
		<-s.holdDone
		s.hold.release()
	}
	close(s.ckptWake)
	<-s.ckptDone
	if err := s.journal.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestJournalReplaysAfterCrashBeforeApply: a batch whose log record is
// durable but that Badger never got (a crash, or Badger failing, between
// the two) is applied when the store opens again; meanwhile the store
// refuses every write.
func TestJournalReplaysAfterCrashBeforeApply(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Events: []persistence.Event{reserve(1, 1, t0)}}}})
	snap := &persistence.Snapshot{Seq: 1, NextID: 2, Committed: []int64{t0}}
	s.testApply = func() error { return errors.New("badger: boom") }
	err := s.Write(t.Context(), &persistence.Batch{HighWater: t3, Accounts: []persistence.AccountWrite{
		{Account: "a", Snapshot: snap, Events: []persistence.Event{reserve(2, 2, t1)}},
		{Account: "b", Jobs: []persistence.Job{{ID: 1, State: persistence.JobWaiting, Enqueued: t1, Payload: []byte("p")}}},
	}})
	if !errors.Is(err, errBroken) {
		t.Fatalf("Write with Badger failing = %v, want errBroken", err)
	}
	s.testApply = nil
	if err := s.Write(t.Context(), &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "c", Events: []persistence.Event{reserve(1, 1, t2)}}}}); !errors.Is(err, errBroken) {
		t.Errorf("Write after a failed apply = %v, want errBroken", err)
	}
	if err := s.SetAnchor(t.Context(), persistence.ClockAnchor{Engine: t2}); !errors.Is(err, errBroken) {
		t.Errorf("SetAnchor after a failed apply = %v, want errBroken", err)
	}
	if err := s.Checkpoint(); !errors.Is(err, errBroken) {
		t.Errorf("Checkpoint after a failed apply = %v, want errBroken", err)
	}
	crash(t, s)

	s = openStore(t, dir, testOptions())
	checkLoaded(t, s, "a", persistence.Loaded{Snapshot: *snap, Events: []persistence.Event{reserve(2, 2, t1)}})
	checkLoaded(t, s, "c", persistence.Loaded{})
	if jobs, err := s.Jobs(t.Context(), "b"); err != nil || len(jobs) != 1 || string(jobs[0].Payload) != "p" {
		t.Errorf("Jobs(b) = %+v, %v; want the job the batch stored", jobs, err)
	}
	if hw, _ := s.HighWater(t.Context()); hw != t3 {
		t.Errorf("HighWater = %d, want %d", hw, t3)
	}
	// The open checkpointed: the next one finds nothing to replay.
	if mark, err := s.loadApplied(); err != nil || mark != s.journal.Next()-1 {
		t.Errorf("applied mark = %d, %v; want %d", mark, err, s.journal.Next()-1)
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

// writeThree writes three batches, one account each, and closes s; it
// returns the path of the log's only segment.
func writeThree(t *testing.T, dir string) string {
	t.Helper()
	s := openStore(t, dir, testOptions())
	for i, acct := range []string{"one", "two", "three"} {
		mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: acct, Events: []persistence.Event{reserve(1, uint64(i+1), t0)}}}})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, journalDir, "*.seg"))
	if err != nil || len(files) != 1 {
		t.Fatalf("segments %v, %v; want one", files, err)
	}
	return files[0]
}

// flipInRecord flips a byte of the payload of record n (from 1) of the
// segment at path.
func flipInRecord(t *testing.T, path string, n int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for range n - 1 {
		off += (16 + int(binary.LittleEndian.Uint32(b[off+4:])) + 7) &^ 7
	}
	b[off+16+2] ^= 0x40
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestJournalCorruptRecordRefused(t *testing.T) {
	dir := t.TempDir()
	flipInRecord(t, writeThree(t, dir), 2)
	_, err := Open(dir, testOptions(), zerolog.Nop())
	if !errors.Is(err, persistence.ErrCorrupt) || !errors.Is(err, seglog.ErrCorrupt) {
		t.Fatalf("Open with record 2 of 3 corrupt = %v, want ErrCorrupt", err)
	}
}

func TestJournalTornTailDropped(t *testing.T) {
	dir := t.TempDir()
	flipInRecord(t, writeThree(t, dir), 3)
	s := openStore(t, dir, testOptions())
	checkLoaded(t, s, "one", persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t0)}})
	checkLoaded(t, s, "two", persistence.Loaded{Events: []persistence.Event{reserve(1, 2, t0)}})
	checkLoaded(t, s, "three", persistence.Loaded{})
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "four", Events: []persistence.Event{reserve(1, 4, t0)}}}})
	s = reopen(t, s, dir)
	checkLoaded(t, s, "four", persistence.Loaded{Events: []persistence.Event{reserve(1, 4, t0)}})
}

// putLegacy stores a WAL record of the older format in s's Badger.
func putLegacy(t *testing.T, s *Store, seq uint64, entries []codec.WALEntry) {
	t.Helper()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.walMu.Lock()
	defer s.walMu.Unlock()
	s.settleLocked()
	ts := s.nextVersion()
	wb := s.db.NewWriteBatchAt(ts)
	defer wb.Cancel()
	if err := wb.Set(appendWALKey(nil, seq), codec.AppendWALRecord(nil, seq, entries)); err != nil {
		t.Fatal(err)
	}
	if err := wb.Flush(); err != nil {
		t.Fatal(err)
	}
	s.committed(ts)
}

func legacyKeys(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	err := s.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{walPrefix}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLegacyWALImported: WAL records of the older format, kept in Badger
// (a store written before the journal had its own log, or a backup), are
// imported into the log on open, their covered events left out; imported
// twice (a crash before their deletion), their events are not doubled.
func TestLegacyWALImported(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "old", Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2}}}})
	entries := []codec.WALEntry{
		{Account: "old", Events: []persistence.Event{reserve(1, 1, t0), reserve(2, 2, t1)}},
		{Account: "other", Events: []persistence.Event{reserve(1, 1, t2)}},
	}
	putLegacy(t, s, 7, entries)
	want := persistence.Loaded{Snapshot: persistence.Snapshot{Seq: 1, NextID: 2}, Events: []persistence.Event{reserve(2, 2, t1)}}
	for round := range 2 {
		s = reopen(t, s, dir)
		checkLoaded(t, s, "old", want)
		checkLoaded(t, s, "other", persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t2)}})
		if n := legacyKeys(t, s); n != 0 {
			t.Errorf("round %d: %d legacy WAL keys left after open", round, n)
		}
		putLegacy(t, s, 7, entries) // as if the deletion had been lost
	}
	s = reopen(t, s, dir)
	if got := walSeqs(t, s); !slices.Equal(got, []uint64{2}) {
		t.Errorf("journal records with live events = %v, want the first import's only", got)
	}
	for _, acct := range []string{"old", "other"} {
		l := mustLoad(t, s, acct)
		if len(l.Events) != 1 {
			t.Errorf("%s: %d events after three imports, want 1", acct, len(l.Events))
		}
	}
}

// TestJournalEncrypted: an encrypted store's log holds no plain account
// name, and opening it with another key fails.
func TestJournalEncrypted(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	opts.EncryptionKey = []byte("0123456789abcdef")
	s := openStore(t, dir, opts)
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "plain-account-name", Events: []persistence.Event{reserve(1, 1, t0)}}}})
	crash(t, s)
	files, _ := filepath.Glob(filepath.Join(dir, journalDir, "*.seg"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("plain-account-name")) {
			t.Errorf("%s holds the account name in the clear", f)
		}
	}
	s = openStore(t, dir, opts)
	checkLoaded(t, s, "plain-account-name", persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t0)}})
	crash(t, s)
	opts.EncryptionKey = []byte("fedcba9876543210")
	if _, err := Open(dir, opts, zerolog.Nop()); err == nil {
		t.Fatal("Open with another key succeeded")
	}
}

// TestJournalForeignMarkReappliesAll: an applied mark beyond the log's
// last record is not this log's (a restored backup carries its source's);
// opening then applies every record again.
func TestJournalForeignMarkReappliesAll(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	snap := persistence.Snapshot{Seq: 1, NextID: 2, Committed: []int64{t0}}
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Snapshot: &snap}}})
	// Badger loses the snapshot and holds a mark from elsewhere.
	if err := s.putApplied(1000); err != nil {
		t.Fatal(err)
	}
	s.writeMu.Lock()
	ts := s.nextVersion()
	wb := s.db.NewWriteBatchAt(ts)
	if err := wb.Delete(appendSnapshotKey(nil, "a")); err != nil {
		t.Fatal(err)
	}
	if err := wb.Flush(); err != nil {
		t.Fatal(err)
	}
	s.committed(ts)
	s.writeMu.Unlock()
	crash(t, s)
	s = openStore(t, dir, testOptions())
	checkLoaded(t, s, "a", persistence.Loaded{Snapshot: snap})
	if mark, err := s.loadApplied(); err != nil || mark != 1 {
		t.Errorf("applied mark after open = %d, %v; want 1", mark, err)
	}
}

// copyDir copies the files of the store directory src to a new directory:
// taken while the store is open, the copy is what a SIGKILL at that point
// leaves on disk (the page cache outlives the process, Badger's memtables
// included, since they are written through a shared mapping).
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestAnchorSurvivesKills: the clock anchor is read back after a kill at
// each point of its write: after its log record is durable and before
// Badger applied it (the open applies it again), and after Badger applied
// it, unsynced, behind a checkpoint's applied mark (the open finds it in
// Badger, or applies it again).
func TestAnchorSurvivesKills(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	a1 := persistence.ClockAnchor{BootID: "boot", Uptime: 1, Engine: t1}
	if err := s.SetAnchor(t.Context(), a1); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, &persistence.Batch{HighWater: t1, Accounts: []persistence.AccountWrite{{Account: "a", Events: []persistence.Event{reserve(1, 1, t0)}}}})
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	a2 := persistence.ClockAnchor{BootID: "boot", Uptime: 2, Engine: t2}
	var beforeApply string
	s.testApply = func() error {
		beforeApply = copyDir(t, dir)
		return nil
	}
	if err := s.SetAnchor(t.Context(), a2); err != nil {
		t.Fatal(err)
	}
	s.testApply = nil
	afterApply := copyDir(t, dir)
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	afterCheckpoint := copyDir(t, dir)
	for _, c := range []struct{ name, dir string }{
		{"killed before Badger applied", beforeApply},
		{"killed after Badger applied", afterApply},
		{"killed after a checkpoint", afterCheckpoint},
	} {
		k := openStore(t, c.dir, testOptions())
		if got, err := k.Anchor(t.Context()); err != nil || got != a2 {
			t.Errorf("%s: Anchor = %+v, %v; want %+v", c.name, got, err, a2)
		}
		checkLoaded(t, k, "a", persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t0)}})
	}
}
