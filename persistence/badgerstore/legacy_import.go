package badgerstore

import (
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

// Before the journal had a log of its own, each batch's events were one
// WAL record stored in Badger under "w" + record seq (walPrefix); a
// backup still carries the live events that way (see Backup). Opening a
// store imports such records: their live events (not expired, not covered
// by a snapshot, not already in the index) go to the log as one record,
// and the keys are deleted. A crash before the deletion leaves the keys
// to be imported again, which finds their events indexed already.

// importLegacy imports the WAL records stored in Badger, if any. A record
// that cannot be decoded makes it fail with an error wrapping ErrCorrupt
// that names the record: it cannot say which accounts it held.
func (s *Store) importLegacy() error {
	now := wallSeconds()
	var keys [][]byte
	var entries []codec.WALEntry
	covered := make(map[string]uint64)
	err := s.view(func(txn *badger.Txn) error {
		prefix := []byte{walPrefix}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.ValidForPrefix(prefix); it.Next() {
			item := it.Item()
			seq, ok := walKeySeq(item.Key())
			if !ok {
				return fmt.Errorf("badgerstore: WAL key %x: %w", item.Key(), codec.Corrupt("malformed key"))
			}
			var recEntries []codec.WALEntry
			var got uint64
			var derr error
			if err := item.Value(func(v []byte) error {
				got, recEntries, derr = codec.DecodeWALRecord(v)
				return nil
			}); err != nil {
				return fmt.Errorf("badgerstore: read %s: %w", walRecordName(seq), err)
			}
			if derr == nil && got != seq {
				derr = codec.Corrupt(fmt.Sprintf("holds record %d", got))
			}
			if derr != nil {
				return fmt.Errorf("badgerstore: %s: %w", walRecordName(seq), derr)
			}
			keys = append(keys, item.KeyCopy(nil))
			for _, e := range recEntries {
				if expiredAt(e.ExpiresAt, now) {
					continue
				}
				upTo := s.coveredSeq(txn, covered, e.Account, "importing WAL records")
				var keep []persistence.Event
				for _, ev := range e.Events {
					if ev.Seq > upTo && !s.wal.has(e.Account, ev.Seq) {
						keep = append(keep, ev)
					}
				}
				if len(keep) > 0 {
					entries = append(entries, codec.WALEntry{Account: e.Account, ExpiresAt: e.ExpiresAt, Events: keep})
				}
			}
		}
		return nil
	})
	if err != nil || len(keys) == 0 {
		return err
	}
	events := 0
	if len(entries) > 0 {
		seq := s.logNext()
		rec := codec.AppendLogOp(codec.AppendLogHeader(nil), codec.LogEvents, nil, codec.AppendWALRecord(nil, seq, entries), 0)
		if err := s.appendLog(seq, rec); err != nil {
			return fmt.Errorf("badgerstore: import WAL records: %w", err)
		}
		s.applied = seq
		for _, e := range entries {
			for _, ev := range e.Events {
				s.wal.add(e.Account, tailEvent{Event: ev, rec: seq, exp: tailExpiry(e.ExpiresAt)})
			}
			events += len(e.Events)
		}
		s.wal.live[seq] = events
		s.wal.next = seq + 1
	}
	ts := s.nextVersion()
	wb := s.db.NewWriteBatchAt(ts)
	defer wb.Cancel()
	for _, k := range keys {
		if err := wb.Delete(k); err != nil {
			return fmt.Errorf("badgerstore: delete imported WAL records: %w", err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("badgerstore: delete imported WAL records: %w", err)
	}
	s.committed(ts)
	s.log.Info().Int("records", len(keys)).Int("events", events).Msg("WAL records imported into the journal")
	return nil
}
