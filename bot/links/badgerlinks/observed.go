package badgerlinks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/bot/links"
)

// The pins each account made outside pinbot that the engine counts (see
// links.Observations) live in one record per account:
//
//	e/<account id>  the pins' ids, creation times and when each may be forgotten
//
// The record carries a Badger TTL at the latest of those instants, so
// that an account nobody reconciles any more leaves nothing behind.
// Badger's TTL follows the wall clock: one running ahead forgets a
// record early, which can only count a pin twice.
const observedPrefix = "e/"

func observedKey(accountID string) string { return observedPrefix + accountID }

// observedRecord is stored under e/<account id>.
type observedRecord struct {
	V    int            `json:"v"`
	Pins []observedItem `json:"pins"`
}

// observedItem is one pin of an observedRecord; times are Unix ms.
type observedItem struct {
	ID      string `json:"id"`
	Created int64  `json:"c"`
	Until   int64  `json:"u"`
}

func (r *observedRecord) version() int { return r.V }

func (r *observedRecord) check() error {
	for _, p := range r.Pins {
		if err := links.CheckID("pin id", p.ID); err != nil {
			return err
		}
	}
	return nil
}

// Unobserved returns, of pinIDs, those not remembered for accountID, in
// the order given and each once.
func (s *Store) Unobserved(ctx context.Context, accountID string, pinIDs []string) ([]string, error) {
	if err := links.CheckID("account id", accountID); err != nil {
		return nil, err
	}
	for _, id := range pinIDs {
		if err := links.CheckID("pin id", id); err != nil {
			return nil, err
		}
	}
	var rec observedRecord
	if err := s.view(ctx, "unobserved", func(txn *badger.Txn) error {
		_, err := getRecord(txn, observedKey(accountID), &rec)
		return err
	}); err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(rec.Pins)+len(pinIDs))
	for _, p := range rec.Pins {
		seen[p.ID] = true
	}
	var out []string
	for _, id := range pinIDs {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// MarkObserved remembers pins for accountID until each one's Until, and
// forgets the account's pins whose Until is at or before now.
func (s *Store) MarkObserved(ctx context.Context, accountID string, pins []links.ObservedPin, now time.Time) error {
	if err := links.CheckID("account id", accountID); err != nil {
		return err
	}
	for _, p := range pins {
		if err := links.CheckID("pin id", p.ID); err != nil {
			return err
		}
		if p.Until.IsZero() {
			return fmt.Errorf("%w: pin %s has no Until", links.ErrInvalid, p.ID)
		}
	}
	key := observedKey(accountID)
	return s.update(ctx, "mark observed", func(txn *badger.Txn) error {
		var rec observedRecord
		if _, err := getRecord(txn, key, &rec); err != nil {
			return err
		}
		byID := make(map[string]observedItem, len(rec.Pins)+len(pins))
		for _, p := range rec.Pins {
			byID[p.ID] = p
		}
		for _, p := range pins {
			it := observedItem{ID: p.ID, Created: p.CreatedAt.UnixMilli(), Until: p.Until.UnixMilli()}
			if old, ok := byID[p.ID]; ok && old.Until > it.Until {
				it.Until = old.Until
			}
			byID[p.ID] = it
		}
		cut := now.UnixMilli()
		kept := make([]observedItem, 0, len(byID))
		for _, p := range byID {
			if p.Until > cut {
				kept = append(kept, p)
			}
		}
		// Latest Until first, so that the bound drops the earliest.
		slices.SortFunc(kept, func(a, b observedItem) int { return cmp.Or(cmp.Compare(b.Until, a.Until), cmp.Compare(a.ID, b.ID)) })
		kept = kept[:min(len(kept), links.MaxObservedPerAccount)]
		if len(kept) == 0 {
			if err := txn.Delete([]byte(key)); err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
				return fmt.Errorf("links: delete %q: %w", key, err)
			}
			return nil
		}
		rec = observedRecord{V: recordVersion, Pins: kept}
		ttl := time.Duration(kept[0].Until-cut) * time.Millisecond
		return setRecordTTL(txn, key, &rec, ttl)
	})
}
