package badgerstore

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
	"github.com/pinbot/pinbot/persistence/seglog"
)

// openJournal opens the log, applies to Badger the changes of the records
// after the applied mark and indexes the events of every record.
func (s *Store) openJournal(dir string, opts Options) error {
	mark, err := s.loadApplied()
	if err != nil {
		return err
	}
	return s.readJournal(dir, opts, mark)
}

// readJournal opens the log and reads it, applying to Badger the records
// after mark.
func (s *Store) readJournal(dir string, opts Options, mark uint64) error {
	type record struct {
		seq uint64
		ops []codec.LogOp
	}
	var recs []record
	var events []walRecordRead
	l, err := seglog.Open(filepath.Join(dir, journalDir), seglog.Options{SegmentSize: opts.JournalSegmentSize, NoSync: !opts.Durable},
		func(seq uint64, p []byte) error {
			p, err := s.open(seq, p)
			if err != nil {
				return fmt.Errorf("badgerstore: journal record %d: %w", seq, err)
			}
			ops, err := codec.DecodeLogRecord(p)
			if err != nil {
				return fmt.Errorf("badgerstore: journal record %d: %w", seq, err)
			}
			var keep []codec.LogOp
			for _, op := range ops {
				if op.Kind != codec.LogEvents {
					keep = append(keep, op)
					continue
				}
				got, entries, err := codec.DecodeWALRecord(op.Value)
				if err == nil && got != seq {
					err = codec.Corrupt(fmt.Sprintf("holds events of record %d", got))
				}
				if err != nil {
					return fmt.Errorf("badgerstore: journal record %d: %w", seq, err)
				}
				events = append(events, walRecordRead{seq: seq, entries: entries})
			}
			if len(keep) > 0 && seq > mark {
				recs = append(recs, record{seq: seq, ops: keep})
			}
			return nil
		})
	if errors.Is(err, seglog.ErrCorrupt) {
		return fmt.Errorf("%w: %w", persistence.ErrCorrupt, err)
	}
	if err != nil {
		return err
	}
	last := l.Next() - 1
	if mark > last {
		// The mark is not this log's (a restored backup carries the
		// source's): apply everything.
		if last > 0 {
			if err := l.Close(); err != nil {
				return fmt.Errorf("badgerstore: journal: %w", err)
			}
			return s.readJournal(dir, opts, 0)
		}
		mark = 0
	}
	s.journal = l
	s.ckpt = mark
	final := make(map[string]codec.LogOp)
	replayed := 0
	for _, r := range recs {
		if r.seq <= mark {
			continue
		}
		replayed++
		for _, op := range r.ops {
			final[string(op.Key)] = op
		}
	}
	if len(final) > 0 {
		ts := s.nextVersion()
		wb := s.db.NewWriteBatchAt(ts)
		for k, op := range final {
			var err error
			if op.Kind == codec.LogDelete {
				err = wb.Delete([]byte(k))
			} else {
				err = wb.SetEntry(newEntry([]byte(k), op.Value, op.ExpiresAt))
			}
			if err != nil {
				wb.Cancel()
				return fmt.Errorf("badgerstore: journal: apply: %w", err)
			}
		}
		if err := wb.Flush(); err != nil {
			return fmt.Errorf("badgerstore: journal: apply: %w", err)
		}
		s.committed(ts)
	}
	s.wal.next = l.Next()
	s.applied = last
	if err := s.indexRecords(events, false); err != nil {
		return err
	}
	if replayed > 0 || len(events) > 0 {
		s.log.Info().Uint64("applied_mark", mark).Int("replayed", replayed).Int("records", len(events)).
			Int("accounts", len(s.wal.tails)).Msg("journal read")
	}
	if mark != last {
		if err := s.checkpoint(); err != nil {
			return err
		}
	}
	return nil
}

// walRecordRead is the events of one record, as read back.
type walRecordRead struct {
	seq     uint64
	entries []codec.WALEntry
}

// coveredSeq returns the Seq up to which account's stored snapshot covers
// its events, read once per account into covered. An unreadable snapshot
// covers nothing, so every event is kept: Load will report the account
// as corrupt, and nothing is dropped meanwhile; doing says what was being
// done, for the log.
func (s *Store) coveredSeq(txn *badger.Txn, covered map[string]uint64, account, doing string) uint64 {
	if upTo, ok := covered[account]; ok {
		return upTo
	}
	snap, _, err := s.readSnapshot(txn, account)
	if err != nil {
		s.log.Error().Err(err).Str("account", account).Msg("snapshot unreadable while " + doing)
	}
	covered[account] = snap.Seq
	return snap.Seq
}

// indexRecords puts the events of recs in the index, leaving out those a
// snapshot covers or that expired; dedup leaves out events whose Seq the
// account's tail has already (a record imported twice). It returns
// nothing but read errors of snapshots, which are logged instead (Load
// reports the account as corrupt).
func (s *Store) indexRecords(recs []walRecordRead, dedup bool) error {
	now := wallSeconds()
	covered := make(map[string]uint64)
	return s.view(func(txn *badger.Txn) error {
		for _, r := range recs {
			live := 0
			for _, e := range r.entries {
				if expiredAt(e.ExpiresAt, now) {
					continue
				}
				upTo := s.coveredSeq(txn, covered, e.Account, "reading the journal")
				for _, ev := range e.Events {
					if ev.Seq <= upTo || dedup && s.wal.has(e.Account, ev.Seq) {
						continue
					}
					s.wal.add(e.Account, tailEvent{Event: ev, rec: r.seq, exp: tailExpiry(e.ExpiresAt)})
					live++
				}
			}
			if live > 0 {
				s.wal.live[r.seq] += live
			}
		}
		return nil
	})
}
