package badgerstore

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

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
	s2, err := Open(dir, testOptions(), zerologNop())
	if err != nil {
		t.Fatalf("reopen after a Write that returned nil: %v", err)
	}
	defer s2.Close()
	checkLoaded(t, s2, "a", persistence.Loaded{Events: []persistence.Event{ev}})
}

// TestOpenKeepsTheSpaceReserve: below the free-space reserve nothing is
// written through Badger (its memtable log is a memory-mapped file: SIGBUS
// on a full disk), not even the deletion of the spent records the store
// finds when it opens: they are left for a later open.
func TestOpenKeepsTheSpaceReserve(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	past := time.Now().Add(-time.Hour).UnixMilli()
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "old", Events: []persistence.Event{reserve(1, 1, t0)}, ExpiresAt: past}}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	opts := testOptions()
	opts.MinFreeBytes = math.MaxInt64 // the disk is below the reserve
	s = openStore(t, dir, opts)
	if err := s.Write(&persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "x", Events: []persistence.Event{reserve(1, 1, t0)}}}}); !errors.Is(err, persistence.ErrNoSpace) {
		t.Fatalf("Write below reserve = %v, want ErrNoSpace", err)
	}
	if got := walSeqs(t, s); len(got) == 0 {
		t.Errorf("Open below the free-space reserve deleted the spent WAL records (wrote through Badger's mmap'd memtable log); Write refuses the same")
	}
}

func zerologNop() zerolog.Logger { return zerolog.Nop() }

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

// TestSplitPartialCommitIndex: a split batch that commits only a prefix
// leaves the index exactly what
// was committed (snapshot covers applied, records counted), in memory and
// after a reopen, and index and disk agree on the live records.
func TestSplitPartialCommitIndex(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "a", Events: []persistence.Event{reserve(1, 1, t0), commit(2, 1, t1)}},
		{Account: "b", Events: []persistence.Event{reserve(1, 1, t0)}},
	}})
	huge := persistence.AccountWrite{Account: "huge"}
	for seq := range uint64(20000) {
		huge.Events = append(huge.Events, reserve(seq+1, seq+1, t0))
	}
	snapA := &persistence.Snapshot{Seq: 3, NextID: 3, Committed: []int64{t1}, Pending: []persistence.Pending{{ID: 2, ReservedAt: t2, Deadline: t2 + 30_000}}}
	err := s.Write(&persistence.Batch{HighWater: t3, Accounts: []persistence.AccountWrite{
		{Account: "a", Events: []persistence.Event{reserve(3, 2, t2)}, Snapshot: snapA},
		{Account: "b", Events: []persistence.Event{commit(2, 1, t1)}},
		huge,
		{Account: "b", Snapshot: &persistence.Snapshot{Seq: 2, NextID: 2, Committed: []int64{t1}}},
	}})
	if err == nil || !strings.Contains(err.Error(), "2 of 4") {
		t.Fatalf("Write = %v, want 2 of 4 committed", err)
	}
	wantA := persistence.Loaded{Snapshot: *snapA}
	wantB := persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t0), commit(2, 1, t1)}}
	for round := range 2 {
		checkLoaded(t, s, "a", wantA)
		checkLoaded(t, s, "b", wantB)
		if hw, _ := s.HighWater(); hw != t3 {
			t.Errorf("round %d: HighWater = %d, want %d", round, hw, t3)
		}
		if disk := walSeqs(t, s); len(disk) != s.Records() {
			t.Errorf("round %d: %d records on disk, %d live in the index", round, len(disk), s.Records())
		}
		s = reopen(t, s, dir)
	}
}
