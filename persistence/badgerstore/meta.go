package badgerstore

import (
	"errors"
	"fmt"
	"math"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

func (s *Store) loadHighWater() (int64, error) {
	var hw int64
	err := s.view(func(txn *badger.Txn) error {
		item, err := txn.Get(highWaterKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("persistence: read high water: %w", err)
		}
		var derr error
		if err := item.Value(func(v []byte) error {
			hw, derr = codec.DecodeHighWater(v)
			return nil
		}); err != nil {
			return fmt.Errorf("persistence: read high water: %w", err)
		}
		if derr != nil {
			return fmt.Errorf("persistence: high water: %w", derr)
		}
		return nil
	})
	return hw, err
}

// HighWater returns the largest high-water mark written (0 if none).
func (s *Store) HighWater() (int64, error) {
	if !s.life.Enter() {
		return 0, persistence.ErrClosed
	}
	defer s.life.Exit()
	return s.highWater.Load(), nil
}

// Anchor returns the stored clock anchor (zero if none).
func (s *Store) Anchor() (persistence.ClockAnchor, error) {
	if !s.life.Enter() {
		return persistence.ClockAnchor{}, persistence.ErrClosed
	}
	defer s.life.Exit()
	var a persistence.ClockAnchor
	err := s.view(func(txn *badger.Txn) error {
		item, err := txn.Get(anchorKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("persistence: read clock anchor: %w", err)
		}
		var derr error
		if err := item.Value(func(v []byte) error {
			a, derr = codec.DecodeAnchor(v)
			return nil
		}); err != nil {
			return fmt.Errorf("persistence: read clock anchor: %w", err)
		}
		if derr != nil {
			return fmt.Errorf("persistence: clock anchor: %w", derr)
		}
		return nil
	})
	return a, err
}

// SetAnchor stores a in a transaction of its own, durable when the store
// is.
func (s *Store) SetAnchor(a persistence.ClockAnchor) error {
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	defer s.life.Exit()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.checkSpace(); err != nil {
		return err
	}
	txn := s.db.NewTransactionAt(math.MaxUint64, true)
	defer txn.Discard()
	if err := txn.SetEntry(badger.NewEntry(anchorKey, codec.AppendAnchor(nil, a))); err != nil {
		return wrapTxn("write clock anchor", err)
	}
	s.walMu.Lock()
	defer s.walMu.Unlock()
	// Reads move to this version at once: the last Write's must be
	// settled first.
	s.settleLocked()
	ts := s.nextVersion()
	if err := txn.CommitAt(ts, nil); err != nil {
		return fmt.Errorf("persistence: write clock anchor: commit: %w", err)
	}
	s.committed(ts)
	return nil
}
