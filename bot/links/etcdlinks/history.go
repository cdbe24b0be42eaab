package etcdlinks

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// PinnedBefore returns, of keys, those remembered as pinned to boardID of
// accountID until after now: key → the pin's address. One request per
// maxTxnOps keys, all at one revision.
func (s *Store) PinnedBefore(ctx context.Context, accountID, boardID string, keys []string, now time.Time) (map[string]string, error) {
	if err := record.CheckHistoryIDs(accountID, boardID, keys); err != nil {
		return nil, err
	}
	out := map[string]string{}
	err := s.do(ctx, "pinned before", func(ctx context.Context) error {
		var rev int64
		for chunk := range slices.Chunk(dedupe(keys), maxTxnOps) {
			reads := make([]read, len(chunk))
			for i, k := range chunk {
				reads[i] = readKey(record.HistoryKey(accountID, boardID, k))
			}
			v, err := s.readView(ctx, "pinned before", reads, rev)
			if err != nil {
				return err
			}
			rev = v.rev
			for i, k := range chunk {
				var rec record.History
				ok, err := s.record(v, reads[i].rel, &rec)
				if err != nil {
					return err
				}
				if ok && rec.Until > now.UnixMilli() {
					out[k] = rec.URL
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RememberPinned remembers that each of pins was pinned to boardID of
// accountID, until its Until, in one transaction (one per maxTxnOps
// pictures beyond that), each record under the lease of its until's
// bucket (ending no earlier than the until, by Options.Now). A picture
// given twice keeps its last. One request, plus one per new lease.
func (s *Store) RememberPinned(ctx context.Context, accountID, boardID string, pins []links.PinnedPicture) error {
	keys, err := record.CheckPinned(accountID, boardID, pins)
	if err != nil {
		return err
	}
	if len(pins) == 0 {
		return nil
	}
	// The last of a key wins, as a later RememberPinned would; etcd
	// refuses a transaction that writes one key twice.
	last := make(map[string]links.PinnedPicture, len(pins))
	for _, p := range pins {
		last[p.Key] = p
	}
	return s.do(ctx, "remember pinned", func(ctx context.Context) error {
		for attempt := 1; ; attempt++ {
			err := s.rememberPinned(ctx, accountID, boardID, dedupe(keys), last)
			if errors.Is(err, rpctypes.ErrLeaseNotFound) && attempt < 2 {
				// A lease expired or was revoked under us: the puts
				// are done again under new ones.
				s.leases.forget()
				continue
			}
			return err
		}
	})
}

func (s *Store) rememberPinned(ctx context.Context, accountID, boardID string, keys []string, pins map[string]links.PinnedPicture) error {
	ops := make([]clientv3.Op, 0, len(keys))
	for _, k := range keys {
		p := pins[k]
		lease, err := s.lease(ctx, "remember pinned", p.Until, historyBucket)
		if err != nil {
			return err
		}
		rel := record.HistoryKey(accountID, boardID, k)
		val, err := s.encode(rel, record.NewHistory(p))
		if err != nil {
			return err
		}
		ops = append(ops, clientv3.OpPut(s.key(rel), val, clientv3.WithLease(lease)))
	}
	for chunk := range slices.Chunk(ops, maxTxnOps) {
		if err := s.write(ctx, "remember pinned", chunk); err != nil {
			return err
		}
	}
	return nil
}

// write applies ops in one transaction, without condition.
func (s *Store) write(ctx context.Context, op string, ops []clientv3.Op) error {
	rctx, cancel := s.request(ctx)
	defer cancel()
	if _, err := s.cli.Txn(rctx).Then(ops...).Commit(); err != nil {
		return s.etcdError(op, err)
	}
	return nil
}

// dedupe returns keys without repeats, in the order of their first
// occurrence.
func dedupe(keys []string) []string {
	seen := make(map[string]bool, len(keys))
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
