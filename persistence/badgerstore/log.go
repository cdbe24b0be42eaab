package badgerstore

import (
	"errors"
	"fmt"
	"syscall"
)

// The journal of a Store on disk.
//
// Each Write is one record of an append-only log (package seglog, in the
// store's "journal" subdirectory), fdatasync'd once when the store is
// durable: the record holds everything the batch changes, its events (as
// one WAL record, codec.AppendWALRecord) and the keys it sets or deletes
// in Badger (snapshots, jobs, the high-water mark), so the batch is
// atomic and durable on its own. Badger, opened without SyncWrites, then
// gets the keys, unsynced; the events stay in the log and in the index
// (walIndex), whose record numbers are the log's.
//
// A checkpoint syncs Badger, then stores in it the last record applied
// (the "applied" mark) and syncs again. Opening the store applies to
// Badger again, in order, the keys of the records after the mark (a key's
// last change wins, so applying twice changes nothing), then indexes the
// live events of every record. A segment of the log is deleted once all
// its records are at or below the mark and none holds a live event.
//
// An in-memory store has no log: its events live in the index only.

// journalDir is the log's directory inside the store's.
const journalDir = "journal"

// logOp is one change a Write makes to Badger, also written to the log.
type logOp struct {
	del bool
	k   []byte
	v   []byte
	exp uint64
}

// errBroken is wrapped by the errors of Writes after Badger failed to
// apply a logged batch: the log holds it, Badger does not, and only
// opening the store again (which applies the log) brings them together.
var errBroken = errors.New("badgerstore: journal and Badger out of step; reopen the store")

// logNext is the number of the next log record; without a log, the
// index's own count.
func (s *Store) logNext() uint64 {
	if s.journal == nil {
		return s.wal.next
	}
	return s.journal.Next()
}

// appendLog writes rec, expected to become record want, to the log (a
// store without one skips it). A full disk at segment creation fails with
// an error wrapping ErrNoSpace, and leaves the log usable.
func (s *Store) appendLog(want uint64, rec []byte) error {
	if s.journal == nil {
		return nil
	}
	p, err := s.seal(want, rec)
	if err != nil {
		return err
	}
	seq, err := s.journal.Append(p)
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("badgerstore: journal: %w: %w", ErrNoSpace, err)
	case err != nil:
		return fmt.Errorf("badgerstore: journal: %w", err)
	case seq != want:
		s.broken = fmt.Errorf("%w: journal record %d written as %d", errBroken, want, seq)
		return s.broken
	}
	s.sinceCkpt += int64(len(p))
	if s.sinceCkpt >= s.ckptEvery {
		s.sinceCkpt = 0
		select {
		case s.ckptWake <- struct{}{}:
		default:
		}
	}
	return nil
}

// applyOps makes ops one Badger write at version ts, in order. It is
// called under writeMu, after the log holds them. Most batches hold
// events alone, and Badger gets nothing from them: even an empty write
// would cost a hand-off to Badger's goroutines while the batch's writers
// wait for their answer.
func (s *Store) applyOps(ts uint64, ops []logOp) error {
	if s.testApply != nil {
		if err := s.testApply(); err != nil {
			return err
		}
	}
	if len(ops) == 0 {
		return nil
	}
	wb := s.db.NewWriteBatchAt(ts)
	defer wb.Cancel()
	for i := range ops {
		op := &ops[i]
		var err error
		if op.del {
			err = wb.Delete(op.k)
		} else {
			err = wb.SetEntry(newEntry(op.k, op.v, op.exp))
		}
		if err != nil {
			return err
		}
	}
	return wb.Flush()
}
