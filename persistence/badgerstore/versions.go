package badgerstore

import (
	"github.com/dgraph-io/badger/v4"
)

// nextVersion returns the commit timestamp of the next write transaction.
// It is called under writeMu, or while opening, and a timestamp is never
// given out twice, even when its transaction fails.
func (s *Store) nextVersion() uint64 {
	s.version++
	return s.version
}

// committed makes the transaction at ts, which committed, visible: reads
// begun from now on see it (Write's are made visible when they settle).
// It tells Badger that versions superseded at or below the oldest read in
// progress (or at ts, when none is) may be dropped by compaction, as an
// unmanaged database does: the store reads nothing older.
func (s *Store) committed(ts uint64) {
	s.readMu.Lock()
	s.readTs = max(s.readTs, ts)
	discard := s.readTs
	for r := range s.readers {
		discard = min(discard, r)
	}
	s.readMu.Unlock()
	s.db.SetDiscardTs(discard)
}

// view runs fn in a read-only transaction at the version of the last
// visible write (see committed). Callers that read the index too settle
// first (see rlockIndex).
func (s *Store) view(fn func(txn *badger.Txn) error) error {
	s.readMu.Lock()
	ts := s.readTs
	s.readers[ts]++
	s.readMu.Unlock()
	defer func() {
		s.readMu.Lock()
		if s.readers[ts]--; s.readers[ts] == 0 {
			delete(s.readers, ts)
		}
		s.readMu.Unlock()
	}()
	if s.db.IsClosed() {
		return badger.ErrDBClosed
	}
	txn := s.db.NewTransactionAt(ts, false)
	defer txn.Discard()
	return fn(txn)
}

// writeVisible makes what fill puts in a write batch one Badger write at
// a new version, outside the journal's log, and moves reads to that
// version at once (the last Write's update is settled first).
func (s *Store) writeVisible(fill func(wb *badger.WriteBatch) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.walMu.Lock()
	defer s.walMu.Unlock()
	s.settleLocked()
	ts := s.nextVersion()
	wb := s.db.NewWriteBatchAt(ts)
	defer wb.Cancel()
	if err := fill(wb); err != nil {
		return err
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	s.committed(ts)
	return nil
}
