package badgerstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

// Load returns the stored state of account: its snapshot, if any, and its
// journal events with Seq above the snapshot's, in Seq order. Expired state
// is not seen. A snapshot that cannot be decoded yields an error wrapping
// ErrCorrupt that names the account; other accounts are not affected.
func (s *Store) Load(_ context.Context, account string) (persistence.Loaded, error) {
	if err := persistence.CheckAccount(account); err != nil {
		return persistence.Loaded{}, err
	}
	if !s.life.Enter() {
		return persistence.Loaded{}, persistence.ErrClosed
	}
	defer s.life.Exit()

	s.rlockIndex()
	defer s.walMu.RUnlock()
	var l persistence.Loaded
	err := s.view(func(txn *badger.Txn) error {
		var err error
		l.Snapshot, _, err = s.readSnapshot(txn, account)
		return err
	})
	if err != nil {
		return persistence.Loaded{}, err
	}
	l.Events = s.wal.events(account, l.Snapshot.Seq, wallSeconds())
	return l, nil
}

// readSnapshot reads account's snapshot; found is false when it has none.
func (s *Store) readSnapshot(txn *badger.Txn, account string) (snap persistence.Snapshot, found bool, err error) {
	item, err := txn.Get(appendSnapshotKey(make([]byte, 0, 1+len(account)), account))
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return persistence.Snapshot{}, false, nil
	case err != nil:
		return persistence.Snapshot{}, false, fmt.Errorf("badgerstore: account %q: read snapshot: %w", account, err)
	}
	var derr error
	if err := item.Value(func(v []byte) error {
		snap, derr = codec.DecodeSnapshot(v)
		return nil
	}); err != nil {
		return persistence.Snapshot{}, false, fmt.Errorf("badgerstore: account %q: read snapshot: %w", account, err)
	}
	if derr != nil {
		return persistence.Snapshot{}, false, fmt.Errorf("badgerstore: account %q: snapshot: %w", account, derr)
	}
	return snap, true, nil
}
