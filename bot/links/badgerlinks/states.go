package badgerlinks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// purgeChunk is how many expired states PurgeStates deletes per
// transaction.
const purgeChunk = 512

// NewState returns a new OAuth state for the Discord user userID: the
// state of NewLinkState for a links.Request with no interaction, made at now.
func (s *Store) NewState(ctx context.Context, userID string, now time.Time) (string, error) {
	return s.NewLinkState(ctx, links.Request{User: userID, At: now}, now)
}

// NewLinkState returns a new OAuth state for req, to put in the
// authorization URL. It is 256 random bits from crypto/rand, URL safe,
// stored (only as its SHA-256 digest) with req and its expiry now +
// StateTTL, and can be consumed once by ConsumeLinkState. The user's
// oldest states beyond links.MaxStatesPerUser are deleted.
func (s *Store) NewLinkState(ctx context.Context, req links.Request, now time.Time) (string, error) {
	state, rec, err := record.NewState(req, now.Add(s.stateTTL))
	if err != nil {
		return "", err
	}
	err = s.update(ctx, "new state", func(txn *badger.Txn) error {
		if err := retireStates(txn, req.User, links.MaxStatesPerUser-1); err != nil {
			return err
		}
		return setRecord(txn, stateKey(state), rec)
	})
	if err != nil {
		return "", err
	}
	return state, nil
}

// ConsumeState checks state as ConsumeLinkState does and returns the
// Discord user it was issued for.
func (s *Store) ConsumeState(ctx context.Context, state string, now time.Time) (string, error) {
	req, err := s.ConsumeLinkState(ctx, state, now)
	return req.User, err
}

// ConsumeLinkState checks state, the state Pinterest sent back, and
// returns the links.Request it was issued for. A state works once: the
// transaction that reads it deletes it, so of two concurrent calls with
// one state at most one succeeds. A state that was never issued, was
// already consumed or purged, or is malformed fails with links.ErrStateInvalid;
// one consumed when now is more than StateTTL after it was issued fails
// with ErrStateExpired (and is deleted too).
func (s *Store) ConsumeLinkState(ctx context.Context, state string, now time.Time) (links.Request, error) {
	if !record.WellFormedState(state) {
		if err := s.life.enter(); err != nil {
			return links.Request{}, err
		}
		s.life.exit()
		return links.Request{}, record.ErrStateMalformed
	}
	key := stateKey(state)
	var (
		req     links.Request
		outcome error
	)
	err := s.update(ctx, "consume state", func(txn *badger.Txn) error {
		req, outcome = links.Request{}, nil
		var rec record.State
		found, err := getRecord(txn, key, &rec)
		switch {
		case errors.Is(err, links.ErrCorrupt):
			// A record that cannot be decoded can never be used: drop it.
			outcome = record.StateUnreadable(err)
		case err != nil:
			return err
		case !found:
			outcome = record.ErrStateUnknown
			return nil
		default:
			req, outcome = rec.Consume(now)
		}
		return deleteKey(txn, key)
	})
	if err != nil {
		return links.Request{}, err
	}
	if outcome != nil {
		return links.Request{}, outcome
	}
	return req, nil
}

// PurgeStates deletes the states that expired before now (and any that
// cannot be read) and returns how many it deleted. The bot calls it every
// few minutes; states are not given a Badger TTL, which would follow the
// wall clock instead of now.
func (s *Store) PurgeStates(ctx context.Context, now time.Time) (int, error) {
	total := 0
	from := []byte(record.StatePrefix)
	for from != nil {
		keys, next, err := s.expiredStates(ctx, from, now)
		if err != nil {
			return total, err
		}
		n, err := s.deleteStates(ctx, keys, now)
		total += n
		if err != nil {
			return total, err
		}
		from = next
	}
	if total > 0 {
		s.log.Debug().Int("states", total).Msg("expired OAuth states purged")
	}
	return total, nil
}

// expiredStates returns up to purgeChunk keys of states expired at now
// (or unreadable), from key from on, and the key to continue from (nil
// when the scan is over).
func (s *Store) expiredStates(ctx context.Context, from []byte, now time.Time) ([]string, []byte, error) {
	var (
		keys []string
		next []byte
	)
	err := s.view(ctx, "purge states", func(txn *badger.Txn) error {
		p := []byte(record.StatePrefix)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: p, PrefetchValues: true, PrefetchSize: 64})
		defer it.Close()
		for it.Seek(from); it.ValidForPrefix(p); it.Next() {
			item := it.Item()
			key := string(item.Key())
			if len(keys) == purgeChunk {
				next = []byte(key)
				return nil
			}
			var rec record.State
			var derr error
			if err := item.Value(func(v []byte) error {
				derr = record.Decode(v, &rec)
				return nil
			}); err != nil {
				return fmt.Errorf("links: read %q: %w", key, err)
			}
			if derr != nil {
				s.log.Warn().Str("key", key).Err(derr).Msg("deleting unreadable OAuth state")
				keys = append(keys, key)
				continue
			}
			if now.After(rec.Expires) {
				keys = append(keys, key)
			}
		}
		return nil
	})
	return keys, next, err
}

// deleteStates deletes those of keys that are still present and still
// expired (or unreadable) at now, in one transaction, and returns how many
// it deleted.
func (s *Store) deleteStates(ctx context.Context, keys []string, now time.Time) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	var n int
	err := s.update(ctx, "purge states", func(txn *badger.Txn) error {
		n = 0
		for _, key := range keys {
			var rec record.State
			found, err := getRecord(txn, key, &rec)
			if err != nil && !errors.Is(err, links.ErrCorrupt) {
				return err
			}
			if err == nil && (!found || !now.After(rec.Expires)) {
				continue
			}
			if err := deleteKey(txn, key); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// retireStates deletes userID's oldest states until keep are left.
// Unreadable records are left to PurgeStates.
func retireStates(txn *badger.Txn, userID string, keep int) error {
	type held struct {
		key     string
		expires time.Time
	}
	var mine []held
	p := []byte(record.StatePrefix)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: p, PrefetchValues: true, PrefetchSize: 16})
	for it.Rewind(); it.ValidForPrefix(p); it.Next() {
		var rec record.State
		if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &rec) }); err != nil {
			continue
		}
		if rec.User == userID {
			mine = append(mine, held{key: string(it.Item().KeyCopy(nil)), expires: rec.Expires})
		}
	}
	it.Close()
	if len(mine) <= keep {
		return nil
	}
	slices.SortFunc(mine, func(a, b held) int { return a.expires.Compare(b.expires) })
	for _, h := range mine[:len(mine)-keep] {
		if err := txn.Delete([]byte(h.key)); err != nil {
			return fmt.Errorf("links: retire an OAuth state: %w", err)
		}
	}
	return nil
}
