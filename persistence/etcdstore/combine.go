package etcdstore

import (
	"context"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/partition"
	"github.com/pinbot/pinbot/persistence"
)

// A batch spread over many partitions would take one transaction per
// partition, each carrying a few writes: etcd commits transactions, not
// writes, so the members would commit a fraction of what etcd can. The
// combined path writes the parts of several partitions in one
// transaction that compares every one of their fences: at least as
// strict as one transaction each, since any stale fence refuses it all.
// A refused or failed combined transaction hands its partitions to the
// per-partition path, which tells the stale fence from the others.

// partPlan is one partition's part of a batch, ready to be combined.
type partPlan struct {
	p    partition.ID
	rev  int64
	idxs []int
	ops  writeOps
}

// planPartition returns p's part of b as one plan, or false when it does
// not qualify for the combined path: a refused fence, two fences, an
// account written twice, or more than one transaction's worth of writes.
func (s *Store) planPartition(ctx context.Context, b *persistence.Batch, p partition.ID, idxs []int, revs []int64, refused []error, now int64) (partPlan, bool) {
	pl := partPlan{p: p, rev: revs[idxs[0]], idxs: idxs}
	seen := make(map[string]bool, len(idxs))
	for _, i := range idxs {
		aw := &b.Accounts[i]
		if refused[i] != nil || revs[i] != pl.rev || seen[aw.Account] {
			return partPlan{}, false
		}
		seen[aw.Account] = true
		ops, err := s.accountOps(ctx, p, aw, now)
		if err != nil {
			return partPlan{}, false
		}
		pl.ops.ops = append(pl.ops.ops, ops.ops...)
		pl.ops.size += ops.size
		pl.ops.leases = append(pl.ops.leases, ops.leases...)
		if len(pl.ops.ops) > s.txnOps || pl.ops.size > s.txnSize {
			return partPlan{}, false
		}
	}
	return pl, true
}

// writeCombined writes the plans of parts that qualify in combined
// transactions. It returns the partitions left to the per-partition
// path, and what it applied and failed.
func (s *Store) writeCombined(ctx context.Context, b *persistence.Batch, parts []partition.ID, byPart map[partition.ID][]int, revs []int64, refused []error, now int64) (rest []partition.ID, applied int, failed map[int]error) {
	failed = make(map[int]error)
	var plans []partPlan
	for _, p := range parts {
		if pl, ok := s.planPartition(ctx, b, p, byPart[p], revs, refused, now); ok {
			plans = append(plans, pl)
		} else {
			rest = append(rest, p)
		}
	}
	// Pack the plans into transactions within etcd's limits: each plan's
	// operations, its high-water mark's, and its fence's comparison.
	var groups [][]partPlan
	var cur []partPlan
	ops, size := 0, 0
	for _, pl := range plans {
		n := len(pl.ops.ops) + hwReserve
		if len(cur) > 0 && (ops+n > s.opts.MaxTxnOps || size+pl.ops.size > s.txnSize || len(cur)+1 > s.opts.MaxTxnOps) {
			groups = append(groups, cur)
			cur, ops, size = nil, 0, 0
		}
		cur = append(cur, pl)
		ops += n
		size += pl.ops.size
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}

	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, writeParallel)
	combined := groups[:0]
	for _, g := range groups {
		if len(g) == 1 {
			// Nothing to combine: the per-partition path, as before.
			rest = append(rest, g[0].p)
			continue
		}
		combined = append(combined, g)
	}
	for _, g := range combined {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ok, err := s.commitCombined(ctx, b, g)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case ok:
				for _, pl := range g {
					applied += len(pl.idxs)
				}
			case err == nil || isLeaseNotFound(err):
				// A fence refused it, or a lease was gone: each partition
				// on its own tells which, and retries with new leases.
				for _, pl := range g {
					if err != nil {
						for _, id := range pl.ops.leases {
							s.leases.drop(id)
						}
					}
					rest = append(rest, pl.p)
				}
			default:
				for _, pl := range g {
					for _, i := range pl.idxs {
						failed[i] = err
					}
				}
			}
		})
	}
	wg.Wait()
	return rest, applied, failed
}

// commitCombined commits the plans of g in one transaction, each under
// its fence when the store fences, raising each partition's high-water
// mark. It reports whether the transaction applied; false with a nil
// error when a fence refused it.
func (s *Store) commitCombined(ctx context.Context, b *persistence.Batch, g []partPlan) (bool, error) {
	var cmps []clientv3.Cmp
	var all []clientv3.Op
	for _, pl := range g {
		if s.opts.Fenced {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(s.keys.Owner(pl.p)), "=", pl.rev))
		}
		all = append(all, pl.ops.ops...)
		if b.HighWater > 0 {
			all = append(all, hwOp(s.l.highWater(pl.p), b.HighWater))
		}
	}
	rctx, cancel := s.request(ctx)
	defer cancel()
	resp, err := s.cli.Txn(rctx).If(cmps...).Then(all...).Commit()
	if err != nil {
		if isLeaseNotFound(err) {
			return false, err
		}
		return false, s.etcdError("write partitions", err)
	}
	return resp.Succeeded, nil
}
