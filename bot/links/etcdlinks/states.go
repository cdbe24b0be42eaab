package etcdlinks

import (
	"context"
	"path"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// purgeChunk is how many expired states one transaction of PurgeStates
// deletes: two deletes each, within maxTxnOps.
const purgeChunk = maxTxnOps / 2

// NewState returns a new OAuth state for the Discord user userID: the
// state of NewLinkState for a links.Request with no interaction, made at
// now.
func (s *Store) NewState(ctx context.Context, userID string, now time.Time) (string, error) {
	return s.NewLinkState(ctx, links.Request{User: userID, At: now}, now)
}

// NewLinkState returns a new OAuth state for req, to put in the
// authorization URL. It is 256 random bits from crypto/rand, URL safe,
// stored (only as its SHA-256 digest) with req and its expiry now +
// StateTTL, in one transaction with the user's index of states, whose
// oldest beyond links.MaxStatesPerUser it retires. The records are put
// under a lease that ends no earlier than StateTTL from now, by
// Options.Now. Two requests when nothing races it (three when a new
// lease is granted).
func (s *Store) NewLinkState(ctx context.Context, req links.Request, now time.Time) (string, error) {
	state, rec, err := record.NewState(req, now.Add(s.stateTTL))
	if err != nil {
		return "", err
	}
	hash := record.StateHash(state)
	sk, ik := record.StateKey(hash), stateUserKey(req.User, rec.Expires, hash)
	index := stateUserPrefix + req.User + "/"
	err = s.update(ctx, "new state", []read{readPrefix(index)}, func(ctx context.Context, v *view) ([]clientv3.Op, error) {
		lease, err := s.lease(ctx, "new state", s.now().Add(s.stateTTL), stateBucket)
		if err != nil {
			return nil, err
		}
		var ops []clientv3.Op
		held := v.ranges[index] // oldest first
		if extra := len(held) - (links.MaxStatesPerUser - 1); extra > 0 {
			for _, k := range held[:extra] {
				ops = append(ops, clientv3.OpDelete(s.key(k.rel)), clientv3.OpDelete(s.key(record.StateKey(path.Base(k.rel)))))
			}
		}
		val, err := s.encode(sk, rec)
		if err != nil {
			return nil, err
		}
		return append(ops,
			clientv3.OpPut(s.key(sk), val, clientv3.WithLease(lease)),
			clientv3.OpPut(s.key(ik), "", clientv3.WithLease(lease))), nil
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
// returns the links.Request it was issued for. A state works once: it is
// deleted by a transaction on condition that its revision is the one
// read, so of concurrent calls with one state, on any members, at most
// one succeeds. A state that was never issued, was already consumed,
// purged or expired from etcd, or is malformed fails with
// links.ErrStateInvalid; one consumed when now is past its expiry fails
// with links.ErrStateExpired (and is deleted too). Two requests.
func (s *Store) ConsumeLinkState(ctx context.Context, state string, now time.Time) (links.Request, error) {
	if !record.WellFormedState(state) {
		err := s.do(ctx, "consume state", func(context.Context) error { return nil })
		if err != nil {
			return links.Request{}, err
		}
		return links.Request{}, record.ErrStateMalformed
	}
	hash := record.StateHash(state)
	sk := record.StateKey(hash)
	var (
		req     links.Request
		outcome error
	)
	err := s.update(ctx, "consume state", []read{readKey(sk)}, func(_ context.Context, v *view) ([]clientv3.Op, error) {
		req, outcome = links.Request{}, nil
		k := v.get(sk)
		if !k.found() {
			outcome = record.ErrStateUnknown
			return nil, nil
		}
		ops := []clientv3.Op{clientv3.OpDelete(s.key(sk))}
		var rec record.State
		if err := s.decode(sk, k.value, &rec); err != nil {
			// A record that cannot be read can never be used: drop it
			// (its index entry goes with its lease).
			outcome = record.StateUnreadable(err)
			return ops, nil
		}
		ops = append(ops, clientv3.OpDelete(s.key(stateUserKey(rec.User, rec.Expires, hash))))
		req, outcome = rec.Consume(now)
		return ops, nil
	})
	if err != nil {
		return links.Request{}, err
	}
	if outcome != nil {
		return links.Request{}, outcome
	}
	return req, nil
}

// expiredState is a state PurgeStates deletes: its record as read, and
// its entry in its user's index ("" when the record cannot be read).
type expiredState struct {
	state kv
	index string
}

// PurgeStates deletes the states that expired before now (and any that
// cannot be read) and returns how many it deleted. The leases of states
// delete them from etcd in any case, a bucket after their expiry by
// Options.Now; PurgeStates applies the caller's now. It reads the states
// a page at a time, at one revision, and deletes the expired ones of a
// page in transactions of purgeChunk, each on condition that none
// changed since it was read (one that did, consumed meanwhile, is left
// to its consumer). One request per page of states and per chunk of
// expired ones.
func (s *Store) PurgeStates(ctx context.Context, now time.Time) (int, error) {
	total := 0
	err := s.do(ctx, "purge states", func(ctx context.Context) error {
		return s.scanPages(ctx, "purge states", record.StatePrefix, 0, func(kvs []kv) error {
			var expired []expiredState
			for _, k := range kvs {
				var rec record.State
				if err := s.decode(k.rel, k.value, &rec); err != nil {
					s.log.Warn().Str("key", s.key(k.rel)).Err(err).Msg("deleting unreadable OAuth state")
					expired = append(expired, expiredState{state: k})
					continue
				}
				if now.After(rec.Expires) {
					expired = append(expired, expiredState{state: k, index: stateUserKey(rec.User, rec.Expires, path.Base(k.rel))})
				}
			}
			for len(expired) > 0 {
				chunk := expired[:min(len(expired), purgeChunk)]
				expired = expired[len(chunk):]
				n, err := s.deleteStates(ctx, chunk)
				total += n
				if err != nil {
					return err
				}
			}
			return nil
		})
	})
	if total > 0 {
		s.log.Debug().Int("states", total).Msg("expired OAuth states purged")
	}
	return total, err
}

// deleteStates deletes states, each on condition that it has not changed
// since it was read, in one transaction; when one has, it deletes the
// others one by one. It returns how many it deleted.
func (s *Store) deleteStates(ctx context.Context, states []expiredState) (int, error) {
	ok, err := s.deleteIfUnchanged(ctx, states)
	switch {
	case err != nil:
		return 0, err
	case ok:
		return len(states), nil
	}
	n := 0
	for i := range states {
		ok, err := s.deleteIfUnchanged(ctx, states[i:i+1])
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// deleteIfUnchanged deletes states and their index entries in one
// transaction if none has changed since it was read.
func (s *Store) deleteIfUnchanged(ctx context.Context, states []expiredState) (bool, error) {
	cmps := make([]clientv3.Cmp, 0, len(states))
	ops := make([]clientv3.Op, 0, 2*len(states))
	for _, st := range states {
		k := s.key(st.state.rel)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", st.state.mod))
		ops = append(ops, clientv3.OpDelete(k))
		if st.index != "" {
			ops = append(ops, clientv3.OpDelete(s.key(st.index)))
		}
	}
	rctx, cancel := s.request(ctx)
	defer cancel()
	resp, err := s.cli.Txn(rctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return false, s.etcdError("purge states", err)
	}
	return resp.Succeeded, nil
}
