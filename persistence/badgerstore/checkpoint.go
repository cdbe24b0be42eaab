package badgerstore

import (
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
		s.log.Error().Err(err).Msg("dropping expired journal events failed")
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

// purgeExpired drops expired events from the WAL index; the log segments
// left without a live event go at the next checkpoint.
func (s *Store) purgeExpired() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.walMu.Lock()
	s.settleLocked()
	s.wal.purge(wallSeconds())
	s.walMu.Unlock()
	return nil
}
