package etcdlinks

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// Unobserved returns, of pinIDs, those not remembered for accountID, in
// the order given and each once. One request.
func (s *Store) Unobserved(ctx context.Context, accountID string, pinIDs []string) ([]string, error) {
	if err := record.CheckUnobserved(accountID, pinIDs); err != nil {
		return nil, err
	}
	key := record.ObservedKey(accountID)
	var rec record.Observed
	if err := s.lookup(ctx, "unobserved", []read{readKey(key)}, func(v *view) error {
		_, err := s.record(v, key, &rec)
		return err
	}); err != nil {
		return nil, err
	}
	return rec.Unobserved(pinIDs), nil
}

// MarkObserved remembers pins for accountID until each one's Until (a
// pin remembered already keeps the later one), and forgets the
// account's pins whose Until is at or before now, keeping at most
// links.MaxObservedPerAccount, those with the latest Until. The pins are
// one record per account, under record.ObservedKey, rewritten by a
// compare-and-swap on its revision, under a lease that ends no earlier
// than its latest Until is from now (by Options.Now), so that an account
// nobody reconciles any more leaves nothing behind.
// Two requests when something changes and nothing races it, one when
// nothing changes.
func (s *Store) MarkObserved(ctx context.Context, accountID string, pins []links.ObservedPin, now time.Time) error {
	if err := record.CheckObserved(accountID, pins); err != nil {
		return err
	}
	key := record.ObservedKey(accountID)
	return s.update(ctx, "mark observed", []read{readKey(key)}, func(ctx context.Context, v *view) ([]clientv3.Op, error) {
		var rec record.Observed
		found, err := s.record(v, key, &rec)
		if err != nil {
			return nil, err
		}
		switch {
		case !rec.Mark(pins, now):
			return nil, nil
		case len(rec.Pins) == 0:
			if !found {
				return nil, nil
			}
			return []clientv3.Op{clientv3.OpDelete(s.key(key))}, nil
		}
		lease, err := s.lease(ctx, "mark observed", s.now().Add(rec.Remaining(now)), observedBucket)
		if err != nil {
			return nil, err
		}
		val, err := s.encode(key, &rec)
		if err != nil {
			return nil, err
		}
		return []clientv3.Op{clientv3.OpPut(s.key(key), val, clientv3.WithLease(lease))}, nil
	})
}
