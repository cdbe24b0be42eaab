package badgerstore

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

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
		{"garbage", appendWALKey(nil, 9), []byte("garbage!"), "badgerstore: WAL record 9: corrupt state: unknown format byte"},
		{"flipped bit", appendWALKey(nil, 9), append(slices.Clone(good[:len(good)-1]), good[len(good)-1]^1), "badgerstore: WAL record 9: corrupt state: checksum mismatch"},
		{"under another seq", appendWALKey(nil, 8), good, "badgerstore: WAL record 8: corrupt state: holds record 9"},
		{"malformed key", []byte("w123"), good, "badgerstore: WAL key 77313233: corrupt state: malformed key"},
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
