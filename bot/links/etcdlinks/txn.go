package etcdlinks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// maxTxnOps is the most operations one etcd transaction may hold in each
// of its branches: etcd's default (--max-txn-ops). Writes of more keys
// are split.
const maxTxnOps = 128

// maxAttempts bounds the attempts of an update that keeps conflicting.
// Each conflict means another write to the keys it read committed, so
// running out takes that many writers racing on one user, account or
// state at once.
const maxAttempts = 100

// maxBackoff bounds the random pause before an update's next attempt.
const maxBackoff = 10 * time.Millisecond

// kv is a key as a read found it: absent when mod is 0.
type kv struct {
	rel    string // relative to the store's prefix
	value  []byte
	mod    int64 // the revision of its last change
	create int64 // the revision of its creation
}

func (k kv) found() bool { return k.mod != 0 }

// read is what an update reads, and whose change before its transaction
// makes it start again.
type read struct {
	rel string
	// prefix reads every key under rel; a key created or changed under
	// it is a conflict (one deleted is not).
	prefix bool
	// exists counts only the key's creation or deletion as a conflict,
	// not its other changes: for a key read to see that it is there.
	exists bool
}

func readKey(rel string) read    { return read{rel: rel} }
func readExists(rel string) read { return read{rel: rel, exists: true} }
func readPrefix(rel string) read { return read{rel: rel, prefix: true} }

// view is what an update's attempt read, all at revision rev.
type view struct {
	rev    int64
	keys   map[string]kv   // by relative key; absent keys have mod 0
	ranges map[string][]kv // by relative prefix, in key order
}

func (v *view) get(rel string) kv { return v.keys[rel] }

// record decodes the key rel of the view into rec; it reports false,
// with no error, when the key is absent.
func (s *Store) record(v *view, rel string, rec record.Record) (bool, error) {
	k := v.get(rel)
	if !k.found() {
		return false, nil
	}
	return true, s.decode(rel, k.value, rec)
}

// getOps are the reads of reads, in order.
func (s *Store) getOps(reads []read, opts ...clientv3.OpOption) []clientv3.Op {
	ops := make([]clientv3.Op, len(reads))
	for i, r := range reads {
		o := opts
		if r.prefix {
			o = append([]clientv3.OpOption{clientv3.WithPrefix()}, opts...)
		}
		ops[i] = clientv3.OpGet(s.key(r.rel), o...)
	}
	return ops
}

// parseView reads the responses of getOps(reads) at revision rev.
func (s *Store) parseView(reads []read, resps []*pb.ResponseOp, rev int64) *view {
	v := &view{rev: rev, keys: make(map[string]kv, len(reads))}
	for i, r := range reads {
		var kvs []kv
		for _, k := range resps[i].GetResponseRange().GetKvs() {
			kvs = append(kvs, kv{rel: s.rel(k.Key), value: k.Value, mod: k.ModRevision, create: k.CreateRevision})
		}
		if r.prefix {
			if v.ranges == nil {
				v.ranges = make(map[string][]kv)
			}
			v.ranges[r.rel] = kvs
			continue
		}
		k := kv{rel: r.rel}
		if len(kvs) > 0 {
			k = kvs[0]
		}
		v.keys[r.rel] = k
	}
	return v
}

// readView reads reads in one request, at one revision: rev, or the
// latest when rev is 0.
func (s *Store) readView(ctx context.Context, op string, reads []read, rev int64) (*view, error) {
	var opts []clientv3.OpOption
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	rctx, cancel := s.request(ctx)
	defer cancel()
	resp, err := s.cli.Txn(rctx).Then(s.getOps(reads, opts...)...).Commit()
	if err != nil {
		return nil, s.etcdError(op, err)
	}
	if rev == 0 {
		rev = resp.Header.Revision
	}
	return s.parseView(reads, resp.Responses, rev), nil
}

// lookup reads reads at the latest revision, between the store's lifecycle
// checks.
func (s *Store) lookup(ctx context.Context, op string, reads []read, fn func(v *view) error) error {
	return s.do(ctx, op, func(ctx context.Context) error {
		v, err := s.readView(ctx, op, reads, 0)
		if err != nil {
			return err
		}
		return fn(v)
	})
}

// compares are the conditions under which nothing reads read in v has
// changed.
func (s *Store) compares(reads []read, v *view) []clientv3.Cmp {
	cmps := make([]clientv3.Cmp, len(reads))
	for i, r := range reads {
		k := s.key(r.rel)
		switch {
		case r.prefix:
			cmps[i] = clientv3.Compare(clientv3.ModRevision(k), "<", v.rev+1).WithPrefix()
		case r.exists:
			cmps[i] = clientv3.Compare(clientv3.CreateRevision(k), "=", v.keys[r.rel].create)
		default:
			cmps[i] = clientv3.Compare(clientv3.ModRevision(k), "=", v.keys[r.rel].mod)
		}
	}
	return cmps
}

// update reads reads, lets fn turn them into writes, and applies those in
// one transaction on condition that nothing read has changed: a
// compare-and-swap on the revisions read. When something has, the
// transaction's other branch reads reads again, and fn runs again on
// them, up to maxAttempts times. fn returns no writes to leave the store
// as it is, or an error, which update returns as is; it must have no
// effect but its writes and results that a later attempt overwrites.
// update runs between the store's lifecycle checks.
func (s *Store) update(ctx context.Context, op string, reads []read, fn func(ctx context.Context, v *view) ([]clientv3.Op, error)) error {
	return s.do(ctx, op, func(ctx context.Context) error {
		v, err := s.readView(ctx, op, reads, 0)
		if err != nil {
			return err
		}
		for attempt := 1; ; attempt++ {
			ops, err := fn(ctx, v)
			if err != nil || len(ops) == 0 {
				return err
			}
			next, err := s.commit(ctx, op, reads, v, ops)
			switch {
			case errors.Is(err, rpctypes.ErrLeaseNotFound) && attempt < maxAttempts:
				// A lease the writes used expired or was revoked: fn
				// gets new ones.
				s.leases.forget()
				continue
			case err != nil:
				return err
			case next == nil:
				return nil
			case attempt == maxAttempts:
				return fmt.Errorf("links: %s: still conflicting after %d attempts", op, attempt)
			}
			if err := backoff(ctx, attempt); err != nil {
				return fmt.Errorf("links: %s: %w", op, err)
			}
			v = next
		}
	})
}

// commit applies ops if nothing reads read in v has changed, and returns
// nil; otherwise it returns what reads read now.
func (s *Store) commit(ctx context.Context, op string, reads []read, v *view, ops []clientv3.Op) (*view, error) {
	rctx, cancel := s.request(ctx)
	defer cancel()
	resp, err := s.cli.Txn(rctx).If(s.compares(reads, v)...).Then(ops...).Else(s.getOps(reads)...).Commit()
	if err != nil {
		return nil, s.etcdError(op, err)
	}
	if resp.Succeeded {
		return nil, nil
	}
	return s.parseView(reads, resp.Responses, resp.Header.Revision), nil
}

// backoff waits a random moment, longer as attempts fail, so that writers
// racing on one key do not all come back at once.
func backoff(ctx context.Context, attempt int) error {
	d := time.Duration(rand.Int64N(int64(min(time.Duration(attempt)*time.Millisecond, maxBackoff))))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
