package badgerstore

import (
	"slices"

	"github.com/pinbot/pinbot/persistence"
)

// scanChunk is how many accounts a checkpoint's scans of the index look
// at under one hold of its locks. Writes wait for those locks: a scan of
// every account at once held them up for a large part of a second with
// 100,000 active accounts (docs/benchmarks.md).
const scanChunk = 1024

// Stale, which the engine's checkpoints call (actors.Checkpointer), calls fn for each account with events
// in the WAL records older than the newest keep live ones. It first drops
// the events that have expired from the index and deletes the records they
// leave empty. Both scans take the index's locks a chunk of accounts at
// a time, so writes go on between chunks; an account that gets its first
// events during the scan is left for the next one.
func (s *Store) Stale(keep int, fn func(account string) error) error {
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	defer s.life.Exit()
	s.rlockIndex()
	accounts := s.wal.indexed()
	s.walMu.RUnlock()
	s.purgeExpired(accounts)
	s.rlockIndex()
	limit, ok := s.wal.staleLimit(keep)
	s.walMu.RUnlock()
	if !ok {
		return nil
	}
	var list []string
	for chunk := range slices.Chunk(accounts, scanChunk) {
		s.rlockIndex()
		list = s.wal.staleIn(list, chunk, limit)
		s.walMu.RUnlock()
	}
	slices.Sort(list)
	for _, a := range list {
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

// purgeExpired drops the expired events of accounts from the WAL index, a
// chunk at a time; the log segments left without a live event go at the
// next checkpoint. Writes plan from the index without its lock, so each
// chunk holds writeMu too.
func (s *Store) purgeExpired(accounts []string) {
	now := wallSeconds()
	for chunk := range slices.Chunk(accounts, scanChunk) {
		s.writeMu.Lock()
		s.walMu.Lock()
		s.settleLocked()
		s.wal.purge(chunk, now)
		s.walMu.Unlock()
		s.writeMu.Unlock()
	}
}
