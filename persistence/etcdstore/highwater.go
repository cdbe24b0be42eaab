package etcdstore

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/partition"
)

// hwReserve is what the high-water mark's operation takes of a
// transaction's MaxTxnOps: itself, and one level of the limit for each
// of the two transactions it nests (etcd lowers a nested transaction's
// limit by its parent's operation count).
const hwReserve = 3

// opOverhead bounds the bytes an operation adds to a transaction beside
// its key, range end and value (protobuf tags and lengths, the lease).
const opOverhead = 32

// hwOp returns the operation that raises the high-water mark at key to
// hw, and leaves it when it is already as large: etcd compares values as
// bytes, which encodeHighWater orders as numbers. A missing key fails a
// comparison of its value, hence the first test.
func hwOp(key string, hw int64) clientv3.Op {
	v := encodeHighWater(hw)
	put := clientv3.OpPut(key, v)
	return clientv3.OpTxn(
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
		[]clientv3.Op{put},
		[]clientv3.Op{clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.Value(key), "<", v)},
			[]clientv3.Op{put}, nil)},
	)
}

// txnOverhead bounds the bytes of a partition's transaction besides its
// account operations: the fence's comparison and read, and hwOp.
func txnOverhead(l layout, partitions int) int {
	p := partition.ID(partitions - 1)
	owner := len(l.keys.Owner(p))
	hw := len(l.highWater(p))
	return 64 + 2*(owner+opOverhead) + 3*(hw+opOverhead) + 3*(hw+9+opOverhead)
}

// HighWater returns the largest high-water mark stored: the largest of
// every partition's and of the batches that wrote no account.
func (s *Store) HighWater(ctx context.Context) (int64, error) {
	if err := s.enter(ctx); err != nil {
		return 0, err
	}
	defer s.life.Exit()
	keys := make([]string, 0, s.opts.Partitions+1)
	keys = append(keys, s.l.globalHighWater())
	for p := range s.opts.Partitions {
		keys = append(keys, s.l.highWater(partition.ID(p)))
	}
	var hw int64
	for len(keys) > 0 {
		n := min(len(keys), s.opts.MaxTxnOps)
		ops := make([]clientv3.Op, n)
		for i, k := range keys[:n] {
			ops[i] = clientv3.OpGet(k)
		}
		rctx, cancel := s.request(ctx)
		resp, err := s.cli.Txn(rctx).Then(ops...).Commit()
		cancel()
		if err != nil {
			return 0, s.etcdError("high-water mark", err)
		}
		for i, r := range resp.Responses {
			for _, kv := range r.GetResponseRange().GetKvs() {
				v, err := decodeHighWater(kv.Value)
				if err != nil {
					return 0, fmt.Errorf("etcdstore: high-water mark %q: %w", keys[i], err)
				}
				hw = max(hw, v)
			}
		}
		keys = keys[n:]
	}
	return hw, nil
}

// PartitionHighWater returns partition p's high-water mark: the largest
// of the batches that wrote to its accounts (0 if none).
func (s *Store) PartitionHighWater(ctx context.Context, p partition.ID) (int64, error) {
	if err := s.checkPartition(p); err != nil {
		return 0, err
	}
	if err := s.enter(ctx); err != nil {
		return 0, err
	}
	defer s.life.Exit()
	v, err := s.get(ctx, "high-water mark", s.l.highWater(p))
	if err != nil || v == nil {
		return 0, err
	}
	hw, err := decodeHighWater(v)
	if err != nil {
		return 0, fmt.Errorf("etcdstore: high-water mark of partition %d: %w", p, err)
	}
	return hw, nil
}

// writeGlobalHighWater raises the mark of the batches that write no
// account.
func (s *Store) writeGlobalHighWater(ctx context.Context, hw int64) error {
	rctx, cancel := s.request(ctx)
	defer cancel()
	if _, err := s.cli.Txn(rctx).Then(hwOp(s.l.globalHighWater(), hw)).Commit(); err != nil {
		return s.etcdError("high-water mark", err)
	}
	return nil
}
