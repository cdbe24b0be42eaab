package etcdlinks

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/links"
)

func observedKey(accountID string) string { return observedPrefix + accountID }

// observedRecord is stored under e/<account id>: the pins the account
// made outside pinbot that the engine counts (see links.Observations).
// It is put under the lease of the bucket of its latest Until, so that
// an account nobody reconciles any more leaves nothing behind.
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
// the order given and each once. One request.
func (s *Store) Unobserved(ctx context.Context, accountID string, pinIDs []string) ([]string, error) {
	if err := links.CheckID("account id", accountID); err != nil {
		return nil, err
	}
	for _, id := range pinIDs {
		if err := links.CheckID("pin id", id); err != nil {
			return nil, err
		}
	}
	key := observedKey(accountID)
	var rec observedRecord
	if err := s.lookup(ctx, "unobserved", []read{readKey(key)}, func(v *view) error {
		_, err := s.record(v, key, &rec)
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

// MarkObserved remembers pins for accountID until each one's Until (a
// pin remembered already keeps the later one), and forgets the
// account's pins whose Until is at or before now, keeping at most
// links.MaxObservedPerAccount, those with the latest Until. The record
// is rewritten by a compare-and-swap on its revision, under a lease that
// ends no earlier than its latest Until is from now (by Options.Now).
// Two requests when something changes and nothing races it, one when
// nothing changes.
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
	return s.update(ctx, "mark observed", []read{readKey(key)}, func(ctx context.Context, v *view) ([]clientv3.Op, error) {
		var rec observedRecord
		found, err := s.record(v, key, &rec)
		if err != nil {
			return nil, err
		}
		changed := false
		byID := make(map[string]observedItem, len(rec.Pins)+len(pins))
		for _, p := range rec.Pins {
			byID[p.ID] = p
		}
		for _, p := range pins {
			it := observedItem{ID: p.ID, Created: p.CreatedAt.UnixMilli(), Until: p.Until.UnixMilli()}
			if old, ok := byID[p.ID]; ok && old.Until >= it.Until {
				continue
			}
			byID[p.ID] = it
			changed = true
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
		if len(kept) != len(byID) {
			changed = true
		}
		switch {
		case !changed:
			return nil, nil
		case len(kept) == 0:
			if !found {
				return nil, nil
			}
			return []clientv3.Op{clientv3.OpDelete(s.key(key))}, nil
		}
		remaining := time.Duration(kept[0].Until-cut) * time.Millisecond
		lease, err := s.lease(ctx, "mark observed", s.now().Add(remaining), observedBucket)
		if err != nil {
			return nil, err
		}
		val, err := s.encode(key, &observedRecord{V: recordVersion, Pins: kept})
		if err != nil {
			return nil, err
		}
		return []clientv3.Op{clientv3.OpPut(s.key(key), val, clientv3.WithLease(lease))}, nil
	})
}
