package etcdlinks

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// scanPage is how many keys one request of a scan reads.
const scanPage = 256

// scan calls fn with the relative key and value of each key under
// prefix, in key order, until fn returns an error, which scan returns as
// is. It reads the range a page at a time, every page at the revision of
// the first, so that it sees one snapshot; a scan that outlives etcd's
// compaction of that revision fails. scan runs between the store's
// lifecycle checks; fn may call the store's other methods.
func (s *Store) scan(ctx context.Context, op, prefix string, fn func(rel string, v []byte) error) error {
	return s.do(ctx, op, func(ctx context.Context) error {
		return s.scanPages(ctx, op, prefix, 0, func(kvs []kv) error {
			for _, k := range kvs {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("links: %s: %w", op, err)
				}
				if err := fn(k.rel, k.value); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// scanPages calls fn with each page of the keys under prefix, at
// revision rev (the latest when 0), until fn returns an error.
func (s *Store) scanPages(ctx context.Context, op, prefix string, rev int64, fn func([]kv) error) error {
	from, end := s.key(prefix), clientv3.GetPrefixRangeEnd(s.key(prefix))
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("links: %s: %w", op, err)
		}
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(s.page)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		rctx, cancel := s.request(ctx)
		resp, err := s.cli.Get(rctx, from, opts...)
		cancel()
		if err != nil {
			return s.etcdError(op, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		kvs := make([]kv, len(resp.Kvs))
		for i, k := range resp.Kvs {
			kvs[i] = kv{rel: s.rel(k.Key), value: k.Value, mod: k.ModRevision, create: k.CreateRevision}
		}
		if err := fn(kvs); err != nil {
			return err
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}
