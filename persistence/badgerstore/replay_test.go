package badgerstore

import (
	"errors"
	"slices"
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

// TestBadgerCorruptWAL: a WAL record cannot say which accounts it held
// once it is unreadable, so the store refuses to open, naming the record,
// rather than serve accounts that may miss events.
func TestBadgerCorruptWAL(t *testing.T) {
	good := codec.AppendWALRecord(nil, 9, []codec.WALEntry{{Account: "a", Events: []persistence.Event{reserve(1, 1, t0)}}})
	tests := []struct {
		name    string
		key     []byte
		value   []byte
		message string
	}{
		{"garbage", appendWALKey(nil, 9), []byte("garbage!"), "persistence: WAL record 9: corrupt state: unknown format byte"},
		{"flipped bit", appendWALKey(nil, 9), append(slices.Clone(good[:len(good)-1]), good[len(good)-1]^1), "persistence: WAL record 9: corrupt state: checksum mismatch"},
		{"under another seq", appendWALKey(nil, 8), good, "persistence: WAL record 8: corrupt state: holds record 9"},
		{"malformed key", []byte("w123"), good, "persistence: WAL key 77313233: corrupt state: malformed key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir, testOptions(), zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "b", Events: []persistence.Event{reserve(1, 1, t0)}}}})
			rawSet(t, s, tt.key, tt.value)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = Open(dir, testOptions(), zerolog.Nop())
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, persistence.ErrCorrupt) || !strings.HasPrefix(err.Error(), tt.message) {
				t.Errorf("Open = %v, want ErrCorrupt starting %q", err, tt.message)
			}
		})
	}
}
