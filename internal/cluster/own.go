package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/partition"
)

// run is the member's loop: it follows the watch of the member and owner
// keys, registers again after the lease expired, and acquires and hands
// over partitions. Everything it does to etcd and every Acquired and
// Release call starts here; Lost is also called by the deadline loop and
// on a lease found expired.
func (m *Member) run() {
	defer close(m.done)
	var wch clientv3.WatchChan
	wcancel := func() {}
	defer func() { wcancel() }()
	backoff := m.minPause()
	for {
		if m.closeReq != nil {
			wcancel()
			m.shutdown(m.closeReq)
			return
		}
		m.mu.Lock()
		lease, synced := m.lease, m.synced
		m.mu.Unlock()
		if lease == 0 {
			m.reregister()
			continue
		}
		if wch == nil {
			if !synced {
				ctx, cancel := context.WithTimeout(m.ctx, m.opTimeout())
				err := m.sync(ctx)
				cancel()
				if err != nil {
					m.log.Warn().Err(err).Msg("resynchronize")
					m.pause(backoff)
					backoff = min(2*backoff, m.maxPause())
					continue
				}
			}
			backoff = m.minPause()
			wch, wcancel = m.watch()
		}
		retry := m.reconcile()
		var retryCh <-chan struct{}
		stopRetry := func() {}
		if retry > 0 {
			retryCh, stopRetry = m.clock.Wake(retry)
		}
		select {
		case wr, ok := <-wch:
			// Every response already there is applied before the next
			// round: a round per event would plan from a view ever
			// further behind.
			for {
				if !ok || wr.Canceled || wr.Err() != nil || wr.CompactRevision != 0 {
					// Compacted, no leader, or the connection lost: read
					// everything again and watch from there.
					m.log.Info().Err(wr.Err()).Msg("watch ended; resynchronizing")
					wcancel()
					wch = nil
					m.mu.Lock()
					m.synced = false
					m.mu.Unlock()
					m.changed()
					break
				}
				m.applyWatch(wr)
				select {
				case wr, ok = <-wch:
					continue
				default:
				}
				break
			}
		case <-m.kick:
		case <-retryCh:
		case req := <-m.closeCh:
			m.closeReq = req
		}
		stopRetry()
	}
}

// minPause and maxPause bound the pauses between retries of etcd requests.
func (m *Member) minPause() time.Duration { return ttlSeconds(m.cfg.LeaseTTL) / 20 }
func (m *Member) maxPause() time.Duration { return ttlSeconds(m.cfg.LeaseTTL) }

// pause waits d on the member's clock, or less if Close is called.
func (m *Member) pause(d time.Duration) {
	at := m.clock.Now() + d
	for m.clock.Now() < at {
		ch, stop := m.clock.Wake(at)
		select {
		case <-ch:
			stop()
		case req := <-m.closeCh:
			stop()
			m.closeReq = req
			return
		case <-m.ctx.Done():
			stop()
			return
		}
	}
}

// reregister registers under a new lease after the last one expired,
// retrying until it succeeds or Close is called.
func (m *Member) reregister() {
	backoff := m.minPause()
	for m.closeReq == nil {
		ctx, cancel := context.WithTimeout(m.ctx, m.opTimeout())
		err := m.register(ctx)
		cancel()
		if err == nil {
			return
		}
		m.log.Warn().Err(err).Msg("register again")
		m.pause(backoff)
		backoff = min(2*backoff, m.maxPause())
	}
}

// rangeEnd ends the key range read and watched: the member keys, the
// owner keys, and whatever may sort between them (ignored).
func (m *Member) rangeEnd() string { return clientv3.GetPrefixRangeEnd(m.keys.Owners()) }

// sync reads the member and owner keys into a new view.
func (m *Member) sync(ctx context.Context) error {
	resp, err := m.cli.Get(ctx, m.keys.Members(), clientv3.WithRange(m.rangeEnd()))
	if err != nil {
		return fmt.Errorf("cluster: read members and owners: %w", err)
	}
	v := newView(resp.Header.Revision)
	for _, kv := range resp.Kvs {
		m.apply(&v, kv.Key, kv.Value, kv.CreateRevision, kv.Lease, false)
	}
	m.mu.Lock()
	m.view, m.synced = v, true
	m.mu.Unlock()
	m.changed()
	return nil
}

// watch watches the member and owner keys from after the view's
// revision. It ends if the etcd member it goes through loses its leader.
func (m *Member) watch() (clientv3.WatchChan, context.CancelFunc) {
	m.mu.Lock()
	rev := m.view.rev
	m.mu.Unlock()
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(m.ctx))
	return m.cli.Watch(ctx, m.keys.Members(), clientv3.WithRange(m.rangeEnd()), clientv3.WithRev(rev+1)), cancel
}

// applyWatch applies one watch response to the view. The view's revision
// becomes its last event's: every change up to it has been seen.
func (m *Member) applyWatch(wr clientv3.WatchResponse) {
	m.mu.Lock()
	for _, ev := range wr.Events {
		kv := ev.Kv
		m.apply(&m.view, kv.Key, kv.Value, kv.CreateRevision, kv.Lease, ev.Type == clientv3.EventTypeDelete)
		m.view.rev = max(m.view.rev, kv.ModRevision)
	}
	if wr.IsProgressNotify() {
		m.view.rev = max(m.view.rev, wr.Header.Revision)
	}
	m.mu.Unlock()
	m.changed()
}

// plan is what the member should do, from its view.
type plan struct {
	gone     []res         // held, but their key is gone
	stale    []ownedKey    // owner keys under this lease that no tenure holds
	handover []*tenure     // held, another member's by rendezvous
	acquire  []res         // this member's by rendezvous, without an owner
	reput    bool          // the member key is gone while the lease lives
	retry    time.Duration // when to look again, 0: at the next event
}

// ownedKey is an owner key of r whose create revision is rev.
type ownedKey struct {
	r   res
	rev int64
}

func (m *Member) plan() plan {
	var pl plan
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing || !m.synced || m.lease == 0 || m.lapsed || now >= m.deadline {
		return pl
	}
	if self, ok := m.view.members[m.id]; !ok || self.lease != m.lease {
		// Not seen registered yet, or the key was deleted: decide nothing
		// about a cluster without this member in it.
		pl.reput = m.view.rev >= m.registered
		return pl
	}
	var live, shardLive []string
	for id, mk := range m.view.members {
		if m.compatible(mk.info) {
			if !m.suspendedLocked(id, mk.info) {
				live = append(live, id)
			}
			if m.runsShards(mk.info) && (id != m.id || !m.shardsLeft) {
				shardLive = append(shardLive, id)
			}
		}
	}
	slices.Sort(live)
	slices.Sort(shardLive)
	// Shards first: acquisitions begin in this order, and a shard's
	// interactions have Discord's 3-second deadline.
	for s := range m.cfg.Shards.Count {
		m.planLocked(&pl, shardOf(s), desiredShard(shardLive, s), now)
	}
	for i := range m.cfg.Partitions {
		p := partition.ID(i)
		m.planLocked(&pl, partitionOf(p), desired(live, p), now)
	}
	return pl
}

// planLocked adds to pl what to do about r, whose desired owner is want.
// m.mu is held.
func (m *Member) planLocked(pl *plan, r res, want string, now time.Duration) {
	o, owned := m.view.owners[r]
	if t := m.held[r]; t != nil {
		switch {
		case m.view.rev >= t.rev && (!owned || o.create != t.rev):
			t.lost = true
			delete(m.held, r)
			if t.state == releasing {
				// Its handover goroutine calls Lost once Release returns.
				t.cancel()
			} else {
				pl.gone = append(pl.gone, r)
			}
		case want != m.id && t.state == serving:
			pl.handover = append(pl.handover, t)
		}
		return
	}
	if _, busy := m.handing[r]; busy {
		return // acquired again once its handover's callbacks are over
	}
	if owned {
		if o.member == m.id && o.lease == m.lease && !m.behindLocked(m.deletedAt, r) {
			pl.stale = append(pl.stale, ownedKey{r: r, rev: o.create})
		}
		return
	}
	if want != m.id || m.behindLocked(m.takenAt, r) {
		return
	}
	if at, ok := m.retryAt[r]; ok {
		if at > now {
			if pl.retry == 0 || at < pl.retry {
				pl.retry = at
			}
			return
		}
		delete(m.retryAt, r)
	}
	pl.acquire = append(pl.acquire, r)
}

// behindLocked reports whether the view is behind the revision at recorded
// for r, dropping the record once it is not. m.mu is held.
func (m *Member) behindLocked(at map[res]int64, r res) bool {
	rev, ok := at[r]
	if !ok {
		return false
	}
	if m.view.rev < rev {
		return true
	}
	delete(at, r)
	return false
}

// reconcile carries out the plan. It returns when to look again if
// something must be retried without a new event, 0 otherwise.
func (m *Member) reconcile() time.Duration {
	// The Lost calls of a lapse end before anything is acquired again.
	m.lossMu.Lock()
	m.lossMu.Unlock()
	if h := m.cfg.hooks.reconciling; h != nil {
		h()
	}
	pl := m.plan()
	if len(pl.gone)+len(pl.stale)+len(pl.handover)+len(pl.acquire) > 0 || pl.reput {
		m.mu.Lock()
		rev := m.view.rev
		m.mu.Unlock()
		m.log.Debug().Int64("view_rev", rev).Int("gone", len(pl.gone)).Int("stale", len(pl.stale)).
			Int("handover", len(pl.handover)).Int("acquire", len(pl.acquire)).Bool("reput", pl.reput).Msg("reconcile")
	}
	for _, r := range pl.gone {
		m.log.Warn().Uint32(r.field(), r.n).Msg("owner key gone: " + r.field() + " lost")
		m.lost(r)
	}
	if len(pl.gone) > 0 {
		m.changed()
	}
	failed := false
	if pl.reput && m.reput() != nil {
		failed = true
	}
	var mu sync.Mutex
	parallel(m.cfg.Parallel, pl.stale, func(k ownedKey) {
		if err := m.deleteOwner(k.r, k.rev); err != nil {
			mu.Lock()
			failed = true
			mu.Unlock()
		}
	})
	// Handovers run on their own goroutines: a slow one (a shard closing,
	// a flush waiting for etcd) must hold back neither this round's
	// acquisitions nor the next rounds', such as a dead member's
	// partitions once its lease expires.
	started := 0
	for _, t := range pl.handover {
		if m.startHandover(t) {
			started++
		}
	}
	if started > 0 {
		m.log.Info().Int("resources", started).Msg("handing over")
	}
	if len(pl.acquire) > 0 && m.acquireAll(pl.acquire) != nil {
		failed = true
	}
	retry := pl.retry
	if failed {
		at := m.clock.Now() + m.minPause()
		if retry == 0 || at < retry {
			retry = at
		}
	}
	return retry
}

// reput creates the member key again under the current lease.
func (m *Member) reput() error {
	m.mu.Lock()
	lease := m.lease
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(m.ctx, m.opTimeout())
	defer cancel()
	key := m.keys.Member(m.id)
	resp, err := m.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, m.memberValue(), clientv3.WithLease(lease))).
		Commit()
	switch {
	case isLeaseNotFound(err):
		m.leaseExpired(lease)
		return err
	case err != nil:
		m.log.Warn().Err(err).Msg("put the member key again")
		return err
	case resp.Succeeded:
		m.log.Warn().Msg("member key was gone while the lease lived: put again")
		m.mu.Lock()
		if m.lease == lease {
			m.registered = resp.Header.Revision
		}
		m.mu.Unlock()
	}
	return nil
}

// acquireAll acquires partitions and shards, Parallel at a time; after an
// etcd error it starts no more and returns the error.
func (m *Member) acquireAll(rs []res) error {
	var (
		mu    sync.Mutex
		first error
	)
	parallel(m.cfg.Parallel, rs, func(r res) {
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop {
			return
		}
		if err := m.acquire(r); err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}
	})
	if first != nil {
		m.log.Warn().Err(first).Msg("acquire partitions or shards")
	}
	return first
}

// acquire creates r's owner key under the lease if nobody holds it, calls
// its Acquired (a partition's with the key's create revision as the fence),
// and serves r. It returns an error only for a failed etcd request.
func (m *Member) acquire(r res) error {
	now := m.clock.Now()
	m.mu.Lock()
	lease := m.lease
	ok := lease != 0 && !m.lapsed && !m.closing && now < m.deadline && m.held[r] == nil
	m.mu.Unlock()
	if !ok {
		return nil
	}
	key := m.ownerKey(r)
	ctx, cancel := context.WithTimeout(m.ctx, m.opTimeout())
	resp, err := m.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, m.id, clientv3.WithLease(lease))).
		Commit()
	cancel()
	if err != nil {
		if isLeaseNotFound(err) {
			m.leaseExpired(lease)
		}
		return fmt.Errorf("cluster: acquire %s %d: %w", r.field(), r.n, err)
	}
	if !resp.Succeeded {
		// Someone holds it: the watch will say who.
		m.record(m.takenAt, r, resp.Header.Revision)
		return nil
	}
	t := &tenure{r: r, rev: resp.Header.Revision, state: acquiring}
	m.mu.Lock()
	if lease != m.lease || m.lapsed {
		// Lost before it began: the key is stale, deleted once serving
		// resumes.
		m.mu.Unlock()
		return nil
	}
	m.held[r] = t
	m.mu.Unlock()
	m.changed()

	err = m.acquired(t)

	m.mu.Lock()
	lost := t.lost
	if err != nil {
		if !lost {
			delete(m.held, r)
		}
		m.retryAt[r] = m.clock.Now() + m.maxPause()
	} else if !lost {
		t.state = serving
	}
	m.mu.Unlock()
	switch {
	case err != nil:
		m.log.Error().Err(err).Uint32(r.field(), r.n).Msg("acquired " + r.field() + " could not be loaded: given back")
		if !lost {
			_ = m.deleteOwner(r, t.rev)
		}
	case lost:
		m.lost(r)
	default:
		m.log.Debug().Uint32(r.field(), r.n).Int64("fence", t.rev).Msg("acquired")
		if r.kind == shardRes {
			m.observeShard(func(o ShardObserver) { o.ShardAcquired(int(r.n)) })
		} else {
			m.observe(func(o Observer) { o.Acquired(partition.ID(r.n)) })
		}
	}
	m.changed()
	return nil
}

// acquired calls t's Acquired callback.
func (m *Member) acquired(t *tenure) error {
	if t.r.kind == shardRes {
		return m.cfg.Shards.Acquired(int(t.r.n))
	}
	return m.cfg.Acquired(partition.ID(t.r.n), t.fence())
}

// release calls r's Release callback.
func (m *Member) release(ctx context.Context, r res) error {
	if r.kind == shardRes {
		return m.cfg.Shards.Release(ctx, int(r.n))
	}
	return m.cfg.Release(ctx, partition.ID(r.n))
}

// startHandover hands t over on a goroutine of its own, Parallel at
// most at once, within handoverTimeout; r stays out of the plans'
// acquisitions until the goroutine ends, and Close waits for it. It
// reports whether t was serving and a handover started.
func (m *Member) startHandover(t *tenure) bool {
	m.mu.Lock()
	_, busy := m.handing[t.r]
	if busy || t.lost || m.held[t.r] != t || t.state != serving {
		m.mu.Unlock()
		return false
	}
	m.handing[t.r] = struct{}{}
	m.mu.Unlock()
	m.handovers.Go(func() {
		defer m.wake()
		defer func() {
			m.mu.Lock()
			delete(m.handing, t.r)
			m.mu.Unlock()
		}()
		m.handoverSem <- struct{}{}
		defer func() { <-m.handoverSem }()
		ctx, cancel := context.WithTimeout(m.ctx, m.handoverTimeout())
		defer cancel()
		start := m.clock.Now()
		err := m.handover(ctx, t)
		d := m.clock.Now() - start
		switch {
		case err != nil:
			m.log.Warn().Err(err).Uint32(t.r.field(), t.r.n).Dur("took", d).Msg("handover failed")
		case d > m.handoverTimeout()/4:
			m.log.Warn().Uint32(t.r.field(), t.r.n).Dur("took", d).Msg("slow handover")
		default:
			m.log.Debug().Uint32(t.r.field(), t.r.n).Dur("took", d).Msg("handed over")
		}
	})
	return true
}

// handoverTimeout bounds a handover started by the run loop: past it,
// Release's context ends, and the resource is lost (its actors stopped
// without writing; the next owner reads what is durable) and its key
// deleted, so that its next owner does not wait longer.
func (m *Member) handoverTimeout() time.Duration { return 2 * m.opTimeout() }

// handover stops serving t's partition or shard, calls Release with a
// context that also ends when it is lost, and deletes the owner key if it
// is still this tenure's. It returns Release's error.
func (m *Member) handover(ctx context.Context, t *tenure) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m.mu.Lock()
	if t.lost || m.held[t.r] != t || t.state != serving {
		m.mu.Unlock()
		return nil
	}
	t.state, t.cancel = releasing, cancel
	m.mu.Unlock()
	m.changed()

	err := m.release(rctx, t.r)

	m.mu.Lock()
	lost := t.lost
	m.mu.Unlock()
	if err != nil {
		m.log.Warn().Err(err).Uint32(t.r.field(), t.r.n).Msg("release failed: " + t.r.field() + " lost")
		m.lost(t.r)
		err = fmt.Errorf("cluster: release %s %d: %w", t.r.field(), t.r.n, err)
	}
	deleted := false
	if !lost {
		// Deleted even after a failed Release: its actors are stopped, and
		// the next owner reads what is durable.
		deleted = m.deleteOwner(t.r, t.rev) == nil
	}
	m.mu.Lock()
	if m.held[t.r] == t {
		delete(m.held, t.r)
	}
	m.mu.Unlock()
	if deleted && err == nil {
		if t.r.kind == shardRes {
			m.observeShard(func(o ShardObserver) { o.ShardHandedOver(int(t.r.n)) })
		} else {
			m.observe(func(o Observer) { o.HandedOver(partition.ID(t.r.n)) })
		}
	}
	m.changed()
	return err
}

// deleteOwner deletes r's owner key if its create revision is still rev.
func (m *Member) deleteOwner(r res, rev int64) error {
	ctx, cancel := context.WithTimeout(m.ctx, m.opTimeout())
	defer cancel()
	key := m.ownerKey(r)
	resp, err := m.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).
		Then(clientv3.OpDelete(key)).
		Commit()
	if err != nil {
		m.log.Warn().Err(err).Uint32(r.field(), r.n).Msg("delete owner key; it goes with the lease otherwise")
		return err
	}
	if resp.Succeeded {
		// The watch brings the delete at this very revision.
		m.record(m.deletedAt, r, resp.Header.Revision)
	}
	return nil
}

// record records in at that etcd answered a request about r's owner key
// at rev.
func (m *Member) record(at map[res]int64, r res, rev int64) {
	m.mu.Lock()
	if rev > at[r] {
		at[r] = rev
	}
	m.mu.Unlock()
}

// shutdown serves Close: the member key first, so that the others pick
// new owners without this member, then every partition handed over, then
// the lease revoked.
func (m *Member) shutdown(req *closeReq) {
	m.mu.Lock()
	m.closing = true
	lease := m.lease
	var ts []*tenure
	for _, t := range m.held {
		if t.state == serving {
			ts = append(ts, t)
		}
	}
	m.mu.Unlock()
	m.changed()

	var errs []error
	if lease != 0 {
		ctx, cancel := context.WithTimeout(m.ctx, m.opTimeout())
		key := m.keys.Member(m.id)
		if _, err := m.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.LeaseValue(key), "=", lease)).
			Then(clientv3.OpDelete(key)).
			Commit(); err != nil {
			m.log.Warn().Err(err).Msg("delete the member key")
		}
		cancel()
		var mu sync.Mutex
		parallel(m.cfg.Parallel, ts, func(t *tenure) {
			if err := m.handover(req.ctx, t); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	// Handovers under way finish first, or are cut short with ctx below.
	handed := make(chan struct{})
	go func() {
		m.handovers.Wait()
		close(handed)
	}()
	select {
	case <-handed:
	case <-req.ctx.Done():
		errs = append(errs, fmt.Errorf("cluster: handovers under way: %w", req.ctx.Err()))
	}

	m.lossMu.Lock()
	m.mu.Lock()
	lost := m.loseAllLocked()
	lease = m.lease
	m.lease, m.lapsed = 0, true
	stop := m.stopKeepAlive
	m.stopKeepAlive = nil
	m.mu.Unlock()
	m.callLost(lost)
	m.lossMu.Unlock()
	<-handed // cancelled by loseAllLocked if still running
	if stop != nil {
		stop()
	}
	m.revoke(lease)
	m.changed()
	req.done <- errors.Join(errs...)
}

// parallel calls f for each item, at most n at once, and returns when
// every call has.
func parallel[T any](n int, items []T, f func(T)) {
	if len(items) == 0 {
		return
	}
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, it := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(it)
		})
	}
	wg.Wait()
}
