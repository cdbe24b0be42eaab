package badgerstore

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

// loadWAL reads the whole write-ahead log into the index, dropping the
// events that snapshots cover or that expired, and deletes the records
// left with none.
func (s *Store) loadWAL() error {
	now := wallSeconds()
	covered := make(map[string]uint64)
	var dead []uint64
	records, events := 0, 0
	err := s.view(func(txn *badger.Txn) error {
		prefix := []byte{walPrefix}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.ValidForPrefix(prefix); it.Next() {
			item := it.Item()
			seq, ok := walKeySeq(item.Key())
			if !ok {
				return fmt.Errorf("persistence: WAL key %x: %w", item.Key(), codec.Corrupt("malformed key"))
			}
			var entries []codec.WALEntry
			var got uint64
			var derr error
			if err := item.Value(func(v []byte) error {
				got, entries, derr = codec.DecodeWALRecord(v)
				return nil
			}); err != nil {
				return fmt.Errorf("persistence: read %s: %w", walRecordName(seq), err)
			}
			if derr == nil && got != seq {
				derr = codec.Corrupt(fmt.Sprintf("holds record %d", got))
			}
			if derr != nil {
				return fmt.Errorf("persistence: %s: %w", walRecordName(seq), derr)
			}
			records++
			s.wal.next = max(s.wal.next, seq+1)
			live := 0
			for _, e := range entries {
				if expiredAt(e.ExpiresAt, now) {
					continue
				}
				upTo, ok := covered[e.Account]
				if !ok {
					snap, _, err := s.readSnapshot(txn, e.Account)
					if err != nil {
						// Keep every event: Load will report the account
						// as corrupt, and nothing is dropped meanwhile.
						s.log.Error().Err(err).Str("account", e.Account).Msg("snapshot unreadable while reading the WAL")
					}
					upTo = snap.Seq
					covered[e.Account] = upTo
				}
				for _, ev := range e.Events {
					if ev.Seq > upTo {
						s.wal.add(e.Account, tailEvent{Event: ev, rec: seq, exp: tailExpiry(e.ExpiresAt)})
						live++
					}
				}
			}
			events += live
			if live > 0 {
				s.wal.live[seq] = live
			} else {
				dead = append(dead, seq)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.deleteRecords(dead, "spent"); errors.Is(err, persistence.ErrNoSpace) {
		// The records are out of the index; a later open deletes them.
		s.log.Warn().Err(err).Int("records", len(dead)).Msg("spent WAL records left on disk: no space to delete them")
	} else if err != nil {
		return err
	}
	if records > 0 {
		s.log.Info().Int("records", records).Int("events", events).Int("accounts", len(s.wal.tails)).
			Int("spent", len(dead)).Msg("write-ahead log read")
	}
	return nil
}
