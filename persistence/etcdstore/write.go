package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/partition"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

// writeParallel bounds the partitions of one batch written at once.
const writeParallel = 16

// Write applies b. Each AccountWrite lands whole or not at all, in one
// etcd transaction, with the other writes of its partition (and fence)
// that fit beside it; the partitions of a batch are written
// concurrently. With Options.Fenced, a write whose fence (its own, or
// the batch's) is missing, malformed, names another partition or is
// stale fails with an error wrapping persistence.ErrFenced. When some
// writes failed and others were applied, the error is a
// *persistence.PartialWriteError; when none was applied and all failed
// for one reason, that reason. A write that follows a failed write of
// the same account in the batch is not attempted, so that an account's
// journal never has a gap, nor is the rest of a partition's part after
// a failure other than a stale fence. An error of etcd itself (a
// timeout, an unreachable cluster) leaves the outcome of the
// transaction in flight unknown: its writes are reported failed, and may
// have been applied.
//
// The high-water mark is raised in every partition a transaction
// touches; a batch of no account raises a mark of its own.
func (s *Store) Write(ctx context.Context, b *persistence.Batch) error {
	if err := b.Validate(); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.life.Exit()
	if len(b.Accounts) == 0 {
		if b.HighWater <= 0 {
			return nil
		}
		return s.writeGlobalHighWater(ctx, b.HighWater)
	}

	now := s.now()
	failed := make(map[int]error)
	revs := make([]int64, len(b.Accounts))
	refused := make([]error, len(b.Accounts)) // fences refused before any request
	byPart := make(map[partition.ID][]int)
	var parts []partition.ID
	for i := range b.Accounts {
		aw := &b.Accounts[i]
		p := s.partitionOf(aw.Account)
		revs[i], refused[i] = s.fenceOf(aw, b, p)
		if byPart[p] == nil {
			parts = append(parts, p)
		}
		byPart[p] = append(byPart[p], i)
	}

	var (
		mu      sync.Mutex
		applied int
		wg      sync.WaitGroup
		sem     = make(chan struct{}, writeParallel)
	)
	if len(parts) > 1 {
		var done map[int]error
		parts, applied, done = s.writeCombined(ctx, b, parts, byPart, revs, refused, now)
		for i, err := range done {
			failed[i] = err
		}
	}
	for _, p := range parts {
		run := func() {
			r := s.writePartition(ctx, b, p, byPart[p], revs, refused, now)
			mu.Lock()
			defer mu.Unlock()
			applied += r.applied
			for i, err := range r.failed {
				failed[i] = err
			}
		}
		if len(parts) == 1 {
			run()
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			run()
		})
	}
	wg.Wait()
	return outcome(b, failed, applied)
}

// outcome is the error of a Write of b that applied applied writes and
// failed those of failed.
func outcome(b *persistence.Batch, failed map[int]error, applied int) error {
	if len(failed) == 0 {
		return nil
	}
	if applied > 0 {
		// The transactions that applied writes raised the high-water mark.
		return &persistence.PartialWriteError{Failed: failed}
	}
	first := -1
	for i := range failed {
		if first < 0 || i < first {
			first = i
		}
	}
	one := failed[first]
	for _, err := range failed {
		if err != one {
			pe := &persistence.PartialWriteError{Failed: failed}
			if b.HighWater > 0 {
				pe.HighWaterErr = one
			}
			return pe
		}
	}
	return one
}

// fenceOf returns the owner key revision aw must be written under, 0
// when the store does not fence.
func (s *Store) fenceOf(aw *persistence.AccountWrite, b *persistence.Batch, p partition.ID) (int64, error) {
	if !s.opts.Fenced {
		return 0, nil
	}
	tok := aw.Fence
	if len(tok) == 0 {
		tok = b.Fence
	}
	if len(tok) == 0 {
		return 0, fmt.Errorf("etcdstore: account %q: %w: the write carries no fence", aw.Account, persistence.ErrFenced)
	}
	f, err := partition.DecodeFence(tok)
	if err != nil {
		return 0, fmt.Errorf("etcdstore: account %q: %w: %w", aw.Account, persistence.ErrFenced, err)
	}
	if f.Partition != p {
		return 0, fmt.Errorf("etcdstore: account %q: %w: its fence is of partition %d, the account is in partition %d",
			aw.Account, persistence.ErrFenced, f.Partition, p)
	}
	return f.Revision, nil
}

// partResult is what writing one partition's part of a batch did.
type partResult struct {
	applied int
	failed  map[int]error
}

// pendingTxn gathers the writes of one transaction.
type pendingTxn struct {
	rev      int64
	idxs     []int
	accounts []string
	ops      writeOps
}

func (t *pendingTxn) has(account string) bool { return slices.Contains(t.accounts, account) }

// writePartition writes the AccountWrites of b at idxs, all of
// partition p, in order, as few transactions as the limits allow, each
// under its fence revision in revs unless refused says why it is
// refused.
func (s *Store) writePartition(ctx context.Context, b *persistence.Batch, p partition.ID, idxs []int, revs []int64, refused []error, now int64) partResult {
	res := partResult{failed: make(map[int]error)}
	stale := make(map[int64]error) // fences refused
	acctErr := make(map[string]error)
	var stop error // a failure that ends the partition's part
	fail := func(i int, err error) {
		res.failed[i] = err
		if a := b.Accounts[i].Account; acctErr[a] == nil {
			acctErr[a] = err
		}
	}
	blocked := func(i int) error {
		if stop != nil {
			return stop
		}
		if err := stale[revs[i]]; err != nil {
			return err
		}
		if err := acctErr[b.Accounts[i].Account]; err != nil {
			return fmt.Errorf("etcdstore: account %q: not written after an earlier write of it in the batch failed: %w",
				b.Accounts[i].Account, err)
		}
		return nil
	}
	var cur pendingTxn
	flush := func() {
		if len(cur.idxs) == 0 {
			return
		}
		err := s.commit(ctx, b, p, &cur)
		if err == nil {
			res.applied += len(cur.idxs)
		} else {
			if errors.Is(err, persistence.ErrFenced) {
				stale[cur.rev] = err
			} else {
				stop = err
			}
			for _, i := range cur.idxs {
				fail(i, err)
			}
		}
		cur = pendingTxn{}
	}
	for _, i := range idxs {
		aw := &b.Accounts[i]
		if cur.has(aw.Account) || (len(cur.idxs) > 0 && cur.rev != revs[i]) {
			flush()
		}
		if err := blocked(i); err != nil {
			fail(i, err)
			continue
		}
		if refused[i] != nil {
			fail(i, refused[i])
			continue
		}
		ops, err := s.accountOps(ctx, p, aw, now)
		if err != nil {
			stop = err
			fail(i, err)
			continue
		}
		if len(ops.ops) > s.txnOps || ops.size > s.txnSize {
			fail(i, fmt.Errorf("%w: account %q: %d operations, about %d bytes; a transaction holds %d operations, %d bytes",
				ErrTooLarge, aw.Account, len(ops.ops), ops.size, s.txnOps, s.txnSize))
			continue
		}
		if len(cur.ops.ops)+len(ops.ops) > s.txnOps || cur.ops.size+ops.size > s.txnSize {
			flush()
			if err := blocked(i); err != nil {
				fail(i, err)
				continue
			}
		}
		cur.rev = revs[i]
		cur.idxs = append(cur.idxs, i)
		cur.accounts = append(cur.accounts, aw.Account)
		cur.ops.ops = append(cur.ops.ops, ops.ops...)
		cur.ops.size += ops.size
		cur.ops.leases = append(cur.ops.leases, ops.leases...)
	}
	flush()
	return res
}

// commit writes the transaction t of partition p: under t's fence when
// the store fences, raising the partition's high-water mark to b's. A
// lease etcd no longer knows (expired early, revoked) is dropped and
// the transaction rebuilt once.
func (s *Store) commit(ctx context.Context, b *persistence.Batch, p partition.ID, t *pendingTxn) error {
	ops := t.ops.ops
	for attempt := 0; ; attempt++ {
		if !s.opts.Fenced && len(ops) == 0 && b.HighWater <= 0 {
			return nil
		}
		all := ops
		if b.HighWater > 0 {
			all = append(ops[:len(ops):len(ops)], hwOp(s.l.highWater(p), b.HighWater))
		}
		rctx, cancel := s.request(ctx)
		txn := s.cli.Txn(rctx)
		owner := s.keys.Owner(p)
		if s.opts.Fenced {
			txn = txn.If(clientv3.Compare(clientv3.CreateRevision(owner), "=", t.rev))
		}
		txn = txn.Then(all...)
		if s.opts.Fenced {
			txn = txn.Else(clientv3.OpGet(owner, clientv3.WithKeysOnly()))
		}
		resp, err := txn.Commit()
		cancel()
		if err != nil {
			if attempt == 0 && isLeaseNotFound(err) {
				for _, id := range t.ops.leases {
					s.leases.drop(id)
				}
				rebuilt, rerr := s.rebuild(ctx, b, p, t.idxs)
				if rerr != nil {
					return rerr
				}
				t.ops, ops = rebuilt, rebuilt.ops
				continue
			}
			return s.etcdError(fmt.Sprintf("write partition %d", p), err)
		}
		if !resp.Succeeded {
			held := "absent"
			if len(resp.Responses) > 0 {
				if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
					held = fmt.Sprintf("created at revision %d", kvs[0].CreateRevision)
				}
			}
			return fmt.Errorf("etcdstore: partition %d: %w: the write's fence is revision %d, the owner key is %s",
				p, persistence.ErrFenced, t.rev, held)
		}
		return nil
	}
}

// rebuild makes the operations of the writes at idxs again, at the
// current time.
func (s *Store) rebuild(ctx context.Context, b *persistence.Batch, p partition.ID, idxs []int) (writeOps, error) {
	now := s.now()
	var all writeOps
	for _, i := range idxs {
		w, err := s.accountOps(ctx, p, &b.Accounts[i], now)
		if err != nil {
			return writeOps{}, err
		}
		all.ops = append(all.ops, w.ops...)
		all.size += w.size
		all.leases = append(all.leases, w.leases...)
	}
	return all, nil
}

// writeOps are the etcd operations of one or more AccountWrites.
type writeOps struct {
	ops    []clientv3.Op
	size   int                // estimated bytes
	leases []clientv3.LeaseID // the leases the puts are attached to
}

func (w *writeOps) put(key string, value []byte, lease clientv3.LeaseID) {
	if lease != clientv3.NoLease {
		w.ops = append(w.ops, clientv3.OpPut(key, string(value), clientv3.WithLease(lease)))
	} else {
		w.ops = append(w.ops, clientv3.OpPut(key, string(value)))
	}
	w.size += len(key) + len(value) + opOverhead
}

// del deletes key, or the keys from key up to end when end is not
// empty.
func (w *writeOps) del(key, end string) {
	if end != "" {
		w.ops = append(w.ops, clientv3.OpDelete(key, clientv3.WithRange(end)))
	} else {
		w.ops = append(w.ops, clientv3.OpDelete(key))
	}
	w.size += len(key) + len(end) + opOverhead
}

// lease returns the lease of keys expiring at second exp, granting it
// if needed.
func (s *Store) lease(ctx context.Context, w *writeOps, exp uint64, now int64) (clientv3.LeaseID, error) {
	if exp == 0 {
		return clientv3.NoLease, nil
	}
	rctx, cancel := s.request(ctx)
	defer cancel()
	id, err := s.leases.get(rctx, exp, now)
	if err != nil {
		return clientv3.NoLease, s.etcdError("grant lease", err)
	}
	if id != clientv3.NoLease && !slices.Contains(w.leases, id) {
		w.leases = append(w.leases, id)
	}
	return id, nil
}

// accountOps returns the operations of aw at now: its snapshot, which
// deletes the events it supersedes, its events, and its jobs, each put
// attached to the lease of its expiry. Keys already expired are not
// written; what aw deletes is deleted all the same.
func (s *Store) accountOps(ctx context.Context, p partition.ID, aw *persistence.AccountWrite, now int64) (writeOps, error) {
	var w writeOps
	exp := aw.ExpirySecond()
	keep := !expired(exp, now)
	var covered uint64
	if aw.Snapshot != nil {
		covered = aw.Snapshot.Seq
	}
	events := eventsToWrite(aw.Events, covered)
	var lease clientv3.LeaseID
	if keep && (aw.Snapshot != nil || len(events) > 0) {
		var err error
		if lease, err = s.lease(ctx, &w, exp, now); err != nil {
			return writeOps{}, err
		}
	}
	evPrefix := s.l.events(p, aw.Account)
	if aw.Snapshot != nil {
		if covered > 0 {
			end := rangeEnd(evPrefix)
			if covered < math.MaxUint64 {
				end = numKey(evPrefix, covered+1)
			}
			w.del(evPrefix, end)
		}
		if keep {
			w.put(s.l.snapshot(p, aw.Account), codec.AppendSnapshot(appendHeader(nil, exp), aw.Snapshot), lease)
		}
	}
	if keep {
		for _, ev := range events {
			w.put(numKey(evPrefix, ev.Seq), codec.AppendEvent(appendHeader(nil, exp), ev), lease)
		}
	}

	if len(aw.Jobs) == 0 && len(aw.DropJobs) == 0 {
		return w, nil
	}
	jobPrefix := s.l.jobs(p, aw.Account)
	last := make(map[uint64]int, len(aw.Jobs)) // a job given twice: the last wins
	for i := range aw.Jobs {
		last[aw.Jobs[i].ID] = i
	}
	for i := range aw.Jobs {
		j := &aw.Jobs[i]
		if last[j.ID] != i {
			continue
		}
		key := numKey(jobPrefix, j.ID)
		jexp := persistence.JobExpirySecond(j)
		if expired(jexp, now) {
			w.del(key, "")
			continue
		}
		jl, err := s.lease(ctx, &w, jexp, now)
		if err != nil {
			return writeOps{}, err
		}
		w.put(key, codec.AppendJob(appendHeader(nil, jexp), j), jl)
	}
	dropped := make(map[uint64]bool, len(aw.DropJobs))
	for _, id := range aw.DropJobs {
		// A job both dropped and written is written; etcd refuses a
		// transaction that deletes a key it puts.
		if _, written := last[id]; written || dropped[id] {
			continue
		}
		dropped[id] = true
		w.del(numKey(jobPrefix, id), "")
	}
	return w, nil
}

// eventsToWrite returns the events of evs after covered, ascending by
// Seq, the last of any given twice.
func eventsToWrite(evs []persistence.Event, covered uint64) []persistence.Event {
	ascending := true
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq <= evs[i-1].Seq {
			ascending = false
			break
		}
	}
	if ascending {
		k := 0
		for k < len(evs) && evs[k].Seq <= covered {
			k++
		}
		return evs[k:]
	}
	last := make(map[uint64]int, len(evs))
	for i, ev := range evs {
		if ev.Seq > covered {
			last[ev.Seq] = i
		}
	}
	out := make([]persistence.Event, 0, len(last))
	for _, i := range last {
		out = append(out, evs[i])
	}
	slices.SortFunc(out, func(a, b persistence.Event) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return out
}
