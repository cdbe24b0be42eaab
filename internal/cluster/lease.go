package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/partition"
)

// register grants a new lease, creates the member key under it (only if
// no member key of this id lives), and starts keeping the lease alive.
// The serving deadline starts from the instant the grant was sent.
func (m *Member) register(ctx context.Context) error {
	s := m.clock.Now()
	g, err := m.cli.Grant(ctx, int64(ttlSeconds(m.cfg.LeaseTTL)/time.Second))
	if err != nil {
		return fmt.Errorf("cluster: grant a lease: %w", err)
	}
	key := m.keys.Member(m.id)
	resp, err := m.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, m.memberValue(), clientv3.WithLease(g.ID))).
		Commit()
	if err == nil && !resp.Succeeded {
		err = ErrMemberExists
	}
	if err != nil {
		m.revoke(g.ID)
		return fmt.Errorf("cluster: register member %s: %w", m.id, err)
	}
	ttl := time.Duration(g.TTL) * time.Second
	margin := m.cfg.Margin
	if margin == 0 {
		margin = DefaultMargin(ttl)
	}
	kctx, stop := context.WithCancel(m.ctx)
	m.mu.Lock()
	m.lease, m.ttl = g.ID, ttl
	m.deadline = s + ttl - margin
	m.lapsed = m.clock.Now() >= m.deadline
	m.stopKeepAlive = stop
	m.registered = resp.Header.Revision
	m.mu.Unlock()
	m.wg.Go(func() { m.keepAlive(kctx, g.ID, ttl, margin) })
	m.wakeDeadline()
	m.changed()
	m.log.Info().Str("lease", fmt.Sprintf("%x", int64(g.ID))).Dur("ttl", ttl).Msg("registered")
	return nil
}

// keepAlive renews lease every third of its TTL, one KeepAliveOnce at a
// time, noting when each was sent: an acknowledgement of a keep-alive
// sent at s proves the lease lives until s + TTL at least, so the member
// may serve until s + TTL - margin.
func (m *Member) keepAlive(ctx context.Context, lease clientv3.LeaseID, ttl, margin time.Duration) {
	every := ttl / 3
	next := m.clock.Now() + every
	for {
		if !m.sleepUntil(ctx, next) {
			return
		}
		if h := m.cfg.hooks.keepAlive; h != nil {
			h(ctx)
			if ctx.Err() != nil {
				return
			}
		}
		s := m.clock.Now()
		actx, cancel := context.WithTimeout(ctx, every)
		resp, err := m.cli.KeepAliveOnce(actx, lease)
		cancel()
		switch {
		case err == nil:
			m.extend(lease, s+time.Duration(resp.TTL)*time.Second-margin)
			next = s + every
		case ctx.Err() != nil:
			return
		case isLeaseNotFound(err):
			m.leaseExpired(lease)
			return
		default:
			m.log.Warn().Err(err).Msg("keep-alive failed")
			next = m.clock.Now() + every/8
		}
	}
}

// sleepUntil waits until the clock reads at or later; false if ctx ended
// first.
func (m *Member) sleepUntil(ctx context.Context, at time.Duration) bool {
	for m.clock.Now() < at {
		ch, stop := m.clock.Wake(at)
		select {
		case <-ch:
			stop()
		case <-ctx.Done():
			stop()
			return false
		}
	}
	return ctx.Err() == nil
}

// extend moves the serving deadline of lease to d if that is later, and
// ends a lapse if d is still ahead: the lease lived all along, so nobody
// else can have taken a partition meanwhile.
func (m *Member) extend(lease clientv3.LeaseID, d time.Duration) {
	now := m.clock.Now()
	m.mu.Lock()
	if lease != m.lease {
		m.mu.Unlock()
		return
	}
	m.deadline = max(m.deadline, d)
	resumed := m.lapsed && now < m.deadline
	if resumed {
		m.lapsed = false
	}
	m.mu.Unlock()
	if resumed {
		m.log.Info().Msg("keep-alive acknowledged again: serving resumes")
		m.wakeDeadline()
		m.wake()
	}
	m.changed()
}

// leaseExpired handles a lease etcd no longer knows: every partition is
// lost (its keys went with the lease), and the run loop registers again.
func (m *Member) leaseExpired(lease clientv3.LeaseID) {
	m.lossMu.Lock()
	defer m.lossMu.Unlock()
	m.mu.Lock()
	if lease == 0 || lease != m.lease {
		m.mu.Unlock()
		return
	}
	lost := m.loseAllLocked()
	m.lapsed, m.lease = true, 0
	stop := m.stopKeepAlive
	m.stopKeepAlive = nil
	m.mu.Unlock()
	if stop != nil {
		stop()
	}
	m.log.Warn().Int("lost", len(lost)).Msg("lease expired: registering again")
	m.callLost(lost)
	m.observe(func(o Observer) { o.LeaseExpired() })
	m.wake()
	m.changed()
}

// deadlineLoop stops serving when the deadline passes without a newer
// acknowledged keep-alive, whatever etcd or the network answer, by a
// timer of the member's clock.
func (m *Member) deadlineLoop() {
	for {
		m.mu.Lock()
		d, lapsed := m.deadline, m.lapsed
		m.mu.Unlock()
		if lapsed {
			select {
			case <-m.deadlineCh:
			case <-m.ctx.Done():
				return
			}
			continue
		}
		ch, stop := m.clock.Wake(d)
		select {
		case <-ch:
			stop()
			m.checkDeadline()
		case <-m.deadlineCh:
			stop()
		case <-m.ctx.Done():
			stop()
			return
		}
	}
}

func (m *Member) wakeDeadline() {
	select {
	case m.deadlineCh <- struct{}{}:
	default:
	}
}

// checkDeadline lapses the member if its deadline has passed.
func (m *Member) checkDeadline() {
	m.lossMu.Lock()
	defer m.lossMu.Unlock()
	now := m.clock.Now()
	m.mu.Lock()
	if m.lapsed || now < m.deadline {
		m.mu.Unlock()
		return
	}
	m.lapsed = true
	lost := m.loseAllLocked()
	m.mu.Unlock()
	m.log.Warn().Int("lost", len(lost)).Msg("serving deadline passed without an acknowledged keep-alive: every partition lost")
	m.callLost(lost)
	m.observe(func(o Observer) { o.Lapsed() })
	m.wake()
	m.changed()
}

// loseAllLocked drops every tenure. It returns the partitions and shards
// being served, whose Lost the caller must call with callLost while it
// holds m.lossMu; a tenure whose callback runs is told by its lost flag
// (and Release by its context). m.mu is held.
func (m *Member) loseAllLocked() []res {
	var out []res
	for r, t := range m.held {
		t.lost = true
		delete(m.held, r)
		switch t.state {
		case serving:
			out = append(out, r)
		case releasing:
			t.cancel()
		}
	}
	slices.SortFunc(out, func(a, b res) int {
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		return cmp.Compare(a.n, b.n)
	})
	return out
}

// callLost calls Lost for each resource of a loseAllLocked.
func (m *Member) callLost(rs []res) {
	for _, r := range rs {
		m.lost(r)
	}
}

// lost calls r's Lost callback and tells the observer.
func (m *Member) lost(r res) {
	if r.kind == shardRes {
		m.cfg.Shards.Lost(int(r.n))
		m.observeShard(func(o ShardObserver) { o.ShardLost(int(r.n)) })
		return
	}
	p := partition.ID(r.n)
	m.cfg.Lost(p)
	m.observe(func(o Observer) { o.Lost(p) })
}

// revoke revokes lease, if any, waiting at most a TTL; an error is logged
// (the lease then expires by itself).
func (m *Member) revoke(lease clientv3.LeaseID) {
	if lease == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.opTimeout())
	defer cancel()
	if _, err := m.cli.Revoke(ctx, lease); err != nil && !isLeaseNotFound(err) {
		m.log.Warn().Err(err).Msg("revoke the lease; it expires by itself")
	}
}

func isLeaseNotFound(err error) bool {
	if err == nil {
		return false
	}
	return errors.Is(err, rpctypes.ErrLeaseNotFound) || errors.Is(err, rpctypes.ErrGRPCLeaseNotFound) ||
		rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCLeaseNotFound)
}
