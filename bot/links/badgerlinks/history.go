package badgerlinks

import (
	"context"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// PinnedBefore returns, of keys, those remembered as pinned to boardID of
// accountID until after now: key → the pin's address.
func (s *Store) PinnedBefore(ctx context.Context, accountID, boardID string, keys []string, now time.Time) (map[string]string, error) {
	if err := record.CheckHistoryIDs(accountID, boardID, keys); err != nil {
		return nil, err
	}
	out := map[string]string{}
	err := s.view(ctx, "pinned before", func(txn *badger.Txn) error {
		for _, k := range keys {
			var rec record.History
			ok, err := getRecord(txn, record.HistoryKey(accountID, boardID, k), &rec)
			if err != nil {
				return err
			}
			if ok && rec.Until > now.UnixMilli() {
				out[k] = rec.URL
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RememberPinned remembers, in one write, that each of pins was pinned to
// boardID of accountID, until its Until. Each record carries a Badger
// TTL at its until, so that the store forgets it without a sweep; Badger's
// TTL follows the wall clock, and reads check until against the caller's
// now as well.
func (s *Store) RememberPinned(ctx context.Context, accountID, boardID string, pins []links.PinnedPicture) error {
	if _, err := record.CheckPinned(accountID, boardID, pins); err != nil {
		return err
	}
	if len(pins) == 0 {
		return nil
	}
	return s.update(ctx, "remember pinned", func(txn *badger.Txn) error {
		for _, p := range pins {
			if err := setRecordTTL(txn, record.HistoryKey(accountID, boardID, p.Key), record.NewHistory(p), max(time.Until(p.Until), time.Second)); err != nil {
				return err
			}
		}
		return nil
	})
}
