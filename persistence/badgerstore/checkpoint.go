package badgerstore

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

// scanChunk is how many accounts a checkpoint's scans of the index look
// at under one hold of its locks. Writes wait for those locks: a scan of
// every account at once held them up for a large part of a second with
// 100,000 active accounts (measured: the history of docs/benchmarks.md).
const scanChunk = 1024

// Stale, which the engine's checkpoints call (actors.Checkpointer), calls
// fn for each account with events in the WAL records older than the
// newest keep live ones. It first drops the events that have expired from
// the index and deletes the records they leave empty, and remakes the
// index's map when it holds under a quarter of the most accounts it held.
// Both scans take the index's locks a chunk of accounts at a time, so
// writes go on between chunks; an account that gets its first events
// during the scan is left for the next one.
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
	roomy := s.wal.roomy()
	s.walMu.RUnlock()
	if roomy {
		// After a peak of active accounts, most of them snapshotted since.
		s.writeMu.Lock()
		s.walMu.Lock()
		s.settleLocked()
		s.wal.shrink()
		s.walMu.Unlock()
		s.writeMu.Unlock()
	}
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
// next checkpoint. Writes plan from the index without its lock, so a
// chunk purged holds writeMu too, and waits for the write in progress:
// only the accounts found holding an expired event, by a scan under the
// index's read lock, are purged: with every account active and none
// expired, taking writeMu for all of them held up the journal's writes
// at each checkpoint.
func (s *Store) purgeExpired(accounts []string) {
	now := wallSeconds()
	var expired []string
	for chunk := range slices.Chunk(accounts, scanChunk) {
		s.rlockIndex()
		expired = s.wal.expiredIn(expired, chunk, now)
		s.walMu.RUnlock()
	}
	for chunk := range slices.Chunk(expired, scanChunk) {
		s.writeMu.Lock()
		s.walMu.Lock()
		s.settleLocked()
		s.wal.purge(chunk, now)
		s.walMu.Unlock()
		s.writeMu.Unlock()
	}
}

// appliedKey holds the last log record a checkpoint found applied to
// Badger and synced, encoded as a high-water mark.
var appliedKey = []byte("m/applied")

// loadApplied reads the applied mark (0 if none).
func (s *Store) loadApplied() (uint64, error) {
	var mark int64
	err := s.view(func(txn *badger.Txn) error {
		item, err := txn.Get(appliedKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("badgerstore: read applied mark: %w", err)
		}
		return item.Value(func(v []byte) error {
			m, err := codec.DecodeHighWater(v)
			if err != nil {
				return fmt.Errorf("badgerstore: applied mark: %w", err)
			}
			mark = m
			return nil
		})
	})
	return uint64(max(mark, 0)), err
}

// Checkpoint syncs Badger, stores the applied mark and deletes the log
// segments no longer needed. The store checkpoints by itself as the log
// grows and at Close; Checkpoint does it now.
func (s *Store) Checkpoint() error {
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	defer s.life.Exit()
	return s.checkpoint()
}

func (s *Store) checkpoint() error {
	if s.journal == nil {
		return nil
	}
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	s.writeMu.Lock()
	applied, broken := s.applied, s.broken
	s.writeMu.Unlock()
	if broken != nil {
		return broken
	}
	if applied > s.ckpt {
		// Below the reserve the mark is not written (Badger writes through
		// a mmap'd memtable log); the log keeps every segment meanwhile.
		if err := s.checkSpace(); err != nil {
			return fmt.Errorf("badgerstore: checkpoint: %w", err)
		}
		if err := s.db.Sync(); err != nil {
			return fmt.Errorf("badgerstore: checkpoint: sync badger: %w", err)
		}
		if err := s.putApplied(applied); err != nil {
			return err
		}
		if err := s.db.Sync(); err != nil {
			return fmt.Errorf("badgerstore: checkpoint: sync badger: %w", err)
		}
		s.ckpt = applied
	}
	s.rlockIndex()
	through := s.ckpt
	for rec := range s.wal.live {
		through = min(through, rec-1)
	}
	s.walMu.RUnlock()
	if _, err := s.journal.Remove(through); err != nil {
		return fmt.Errorf("badgerstore: checkpoint: %w", err)
	}
	return nil
}

// putApplied stores the applied mark, unsynced.
func (s *Store) putApplied(applied uint64) error {
	err := s.writeVisible(func(wb *badger.WriteBatch) error {
		return wb.Set(appliedKey, codec.AppendHighWater(nil, int64(min(applied, math.MaxInt64))))
	})
	if err != nil {
		return fmt.Errorf("badgerstore: checkpoint: %w", err)
	}
	return nil
}

// runCheckpoints checkpoints each time Write asks, until Close closes
// ckptWake.
func (s *Store) runCheckpoints() {
	defer close(s.ckptDone)
	for range s.ckptWake {
		if err := s.checkpoint(); err != nil {
			s.log.Error().Err(err).Msg("checkpoint failed")
		}
	}
}
