package badgerstore

import (
	"context"
	"errors"
	"fmt"

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
			return fmt.Errorf("badgerstore: read high water: %w", err)
		}
		var derr error
		if err := item.Value(func(v []byte) error {
			hw, derr = codec.DecodeHighWater(v)
			return nil
		}); err != nil {
			return fmt.Errorf("badgerstore: read high water: %w", err)
		}
		if derr != nil {
			return fmt.Errorf("badgerstore: high water: %w", derr)
		}
		return nil
	})
	return hw, err
}

// HighWater returns the largest high-water mark written (0 if none).
func (s *Store) HighWater(context.Context) (int64, error) {
	if !s.life.Enter() {
		return 0, persistence.ErrClosed
	}
	defer s.life.Exit()
	return s.highWater.Load(), nil
}

// Anchor returns the stored clock anchor (zero if none).
func (s *Store) Anchor(context.Context) (persistence.ClockAnchor, error) {
	var a persistence.ClockAnchor
	err := s.getMeta(anchorKey, "clock anchor", func(v []byte) (err error) {
		a, err = codec.DecodeAnchor(v)
		return err
	})
	return a, err
}

// SetAnchor stores a in a transaction of its own, durable when the store
// is.
func (s *Store) SetAnchor(_ context.Context, a persistence.ClockAnchor) error {
	return s.putMeta(anchorKey, codec.AppendAnchor(nil, a), "clock anchor")
}

// getMeta reads the value of the meta key key, if there is one, and
// passes it to decode, whose error says the value is corrupt. what names
// the value in errors.
func (s *Store) getMeta(key []byte, what string, decode func(v []byte) error) error {
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	defer s.life.Exit()
	return s.view(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("badgerstore: read %s: %w", what, err)
		}
		var derr error
		if err := item.Value(func(v []byte) error {
			derr = decode(v)
			return nil
		}); err != nil {
			return fmt.Errorf("badgerstore: read %s: %w", what, err)
		}
		if derr != nil {
			return fmt.Errorf("badgerstore: %s: %w", what, derr)
		}
		return nil
	})
}

// putMeta stores value under the meta key key as a journal record of
// its own, durable when the store is. what names the value in errors.
func (s *Store) putMeta(key, value []byte, what string) error {
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	defer s.life.Exit()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.broken != nil {
		return s.broken
	}
	if err := s.checkSpace(); err != nil {
		return err
	}
	seq := s.logNext()
	rec := codec.AppendLogOp(codec.AppendLogHeader(nil), codec.LogSet, key, value, 0)
	if err := s.appendLog(seq, rec); err != nil {
		return fmt.Errorf("badgerstore: write %s: %w", what, err)
	}
	s.walMu.Lock()
	defer s.walMu.Unlock()
	// Reads move to this version at once: the last Write's must be
	// settled first.
	s.settleLocked()
	ts := s.nextVersion()
	if err := s.applyOps(ts, []logOp{{k: key, v: value}}); err != nil {
		if s.journal == nil {
			return fmt.Errorf("badgerstore: write %s: %w", what, err)
		}
		s.broken = fmt.Errorf("%w: journal record %d: %w", errBroken, seq, err)
		return s.broken
	}
	s.applied = max(s.applied, seq)
	s.committed(ts)
	return nil
}
