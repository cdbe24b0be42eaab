package badgerlinks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// Unobserved returns, of pinIDs, those not remembered for accountID, in
// the order given and each once.
func (s *Store) Unobserved(ctx context.Context, accountID string, pinIDs []string) ([]string, error) {
	if err := record.CheckUnobserved(accountID, pinIDs); err != nil {
		return nil, err
	}
	var rec record.Observed
	if err := s.view(ctx, "unobserved", func(txn *badger.Txn) error {
		_, err := getRecord(txn, record.ObservedKey(accountID), &rec)
		return err
	}); err != nil {
		return nil, err
	}
	return rec.Unobserved(pinIDs), nil
}

// MarkObserved remembers pins for accountID until each one's Until, and
// forgets the account's pins whose Until is at or before now. The pins
// are one record per account, under record.ObservedKey, with a Badger
// TTL at their latest Until, so that an account nobody reconciles any
// more leaves nothing behind. Badger's TTL follows the wall clock: one
// running ahead forgets a record early, which can only count a pin twice.
func (s *Store) MarkObserved(ctx context.Context, accountID string, pins []links.ObservedPin, now time.Time) error {
	if err := record.CheckObserved(accountID, pins); err != nil {
		return err
	}
	key := record.ObservedKey(accountID)
	return s.update(ctx, "mark observed", func(txn *badger.Txn) error {
		var rec record.Observed
		if _, err := getRecord(txn, key, &rec); err != nil {
			return err
		}
		rec.Mark(pins, now)
		if len(rec.Pins) == 0 {
			if err := txn.Delete([]byte(key)); err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
				return fmt.Errorf("links: delete %q: %w", key, err)
			}
			return nil
		}
		return setRecordTTL(txn, key, &rec, rec.Remaining(now))
	})
}
