package badgerstore

import (
	"fmt"

	"github.com/pinbot/pinbot/persistence"
)

// Stale implements Checkpointer: it calls fn for each account with events
// in the WAL records older than the newest keep live ones. It first drops
// the events that have expired from the index and deletes the records they
// leave empty.
func (s *Store) Stale(keep int, fn func(account string) error) error {
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	defer s.life.Exit()
	if err := s.purgeExpired(); err != nil {
		// The records stay on disk; opening the store drops them.
		s.log.Error().Err(err).Msg("deleting expired WAL records failed")
	}
	s.rlockIndex()
	list := s.wal.stale(keep)
	s.walMu.RUnlock()
	for _, a := range list {
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

// purgeExpired drops expired events from the WAL index and deletes the
// records left without a live event.
func (s *Store) purgeExpired() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.walMu.Lock()
	s.settleLocked()
	dead := s.wal.purge(wallSeconds())
	s.walMu.Unlock()
	return s.deleteRecords(dead, "expired")
}

// deleteRecords deletes WAL records left without a live event (what says
// why, for errors), in one write batch. Below the free-space reserve it
// deletes nothing and fails with an error wrapping ErrNoSpace.
func (s *Store) deleteRecords(recs []uint64, what string) error {
	if len(recs) == 0 {
		return nil
	}
	if err := s.checkSpace(); err != nil {
		return err
	}
	ts := s.nextVersion()
	wb := s.db.NewWriteBatchAt(ts)
	defer wb.Cancel()
	for _, rec := range recs {
		if err := wb.Delete(appendWALKey(nil, rec)); err != nil {
			return fmt.Errorf("persistence: delete %s: %w", walRecordName(rec), err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("persistence: delete %s WAL records: %w", what, err)
	}
	s.committed(ts)
	return nil
}
