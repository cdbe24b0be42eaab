package badgerstore

import (
	"context"
	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/persistence"
)

// Accounts calls fn with each account that has a snapshot or journal
// events, once, in byte order of the account IDs. It reads snapshot keys
// only, so a scan runs in constant memory beyond the accounts with journal
// events. It does not see writes made after it started. fn may call Load
// and Write, but must not call Close (Close waits for the scan to end).
// Malformed keys are logged and skipped.
func (s *Store) Accounts(_ context.Context, fn func(account string) error) error {
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	defer s.life.Exit()

	s.rlockIndex()
	tail := s.wal.accounts(wallSeconds())
	s.walMu.RUnlock()
	return s.view(func(txn *badger.Txn) error {
		prefix := []byte{snapshotPrefix}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		it.Rewind()
		for {
			var snapAcct []byte
			snapOK := it.ValidForPrefix(prefix)
			if snapOK {
				snapAcct = it.Item().Key()[1:]
				if !persistence.ValidAccount(snapAcct) {
					s.log.Warn().Hex("key", it.Item().Key()).Msg("skipping malformed snapshot key")
					it.Next()
					continue
				}
			}
			tailOK := len(tail) > 0
			var account string
			switch {
			case !snapOK && !tailOK:
				return nil
			case snapOK && (!tailOK || string(snapAcct) <= tail[0]):
				account = string(snapAcct)
				if tailOK && account == tail[0] {
					tail = tail[1:]
				}
				it.Next()
			default:
				account, tail = tail[0], tail[1:]
			}
			if err := fn(account); err != nil {
				return err
			}
		}
	})
}

// Records returns how many WAL records are live (not yet deleted).
func (s *Store) Records() int {
	s.rlockIndex()
	defer s.walMu.RUnlock()
	return len(s.wal.live)
}

// Journaled calls fn with each account that has journal events not folded
// into a snapshot, in byte order, from a list taken when it starts. It
// reads nothing from disk.
func (s *Store) Journaled(_ context.Context, fn func(account string) error) error {
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	defer s.life.Exit()
	s.rlockIndex()
	list := s.wal.accounts(wallSeconds())
	s.walMu.RUnlock()
	for _, a := range list {
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}
