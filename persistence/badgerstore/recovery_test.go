package badgerstore

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// TestShortEventsSurviveReopen: an event can encode in 6 bytes (every
// field a one-byte varint); the decoder must accept a record whose last
// entry holds such events, or the store would refuse to open.
func TestShortEventsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	ev := persistence.Event{Seq: 1, Kind: persistence.EventRelease, ID: 1}
	entry := []codec.WALEntry{{Account: "a", Events: []persistence.Event{ev}}}
	empty := []codec.WALEntry{{Account: "a"}}
	if n := len(codec.AppendWALRecord(nil, 1, entry)) - len(codec.AppendWALRecord(nil, 1, empty)); n != 6 {
		t.Fatalf("event body is %d bytes, want 6", n)
	}
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Events: []persistence.Event{ev}}}})
	checkLoaded(t, s, "a", persistence.Loaded{Events: []persistence.Event{ev}}) // accepted and served
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, testOptions(), zerolog.Nop())
	if err != nil {
		t.Fatalf("reopen after a Write that returned nil: %v", err)
	}
	defer s2.Close()
	checkLoaded(t, s2, "a", persistence.Loaded{Events: []persistence.Event{ev}})
}

// TestCoveredEventsStayCoveredAfterReopen: a snapshot supersedes its
// account's older events, which are only dropped from the index: their
// record stays while another account needs it. The snapshot must not
// expire before them (its ExpiresAt may be earlier than theirs: a release
// shrinks the account's expiry), or a reopen would find no snapshot and
// bring the superseded events back.
func TestCoveredEventsStayCoveredAfterReopen(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	future := time.Now().Add(48 * time.Hour).UnixMilli()
	past := time.Now().Add(-time.Hour).UnixMilli() // stands for "has expired since"
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "a", Events: []persistence.Event{reserve(1, 1, t0), release(2, 1)}, ExpiresAt: future},
		{Account: "b", Events: []persistence.Event{reserve(1, 1, t0)}, ExpiresAt: future}, // keeps the record
	}})
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Snapshot: &persistence.Snapshot{Seq: 2, NextID: 2}, ExpiresAt: past}}})
	before := mustLoad(t, s, "a")
	s = reopen(t, s, dir)
	after := mustLoad(t, s, "a")
	if !equalLoaded(before, after) {
		t.Errorf("Load(a) changed across a reopen:\n  before %+v\n  after  %+v (superseded events are back)", before, after)
	}
}
