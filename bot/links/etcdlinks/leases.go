package etcdlinks

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The widths of the time buckets whose records share a lease: every
// record whose deadline falls in one bucket is put under the same lease,
// which expires at the bucket's end, so that the store grants a lease per
// bucket, not per record. A record outlives its deadline by less than a
// bucket; reads check the deadline themselves.
const (
	stateBucket    = time.Minute    // OAuth states: minutes
	observedBucket = time.Hour      // pins made elsewhere: hours
	historyBucket  = 24 * time.Hour // pictures pinned: days
)

// leases hands out the leases of the store's expiring records, one per
// bucket of deadlines, each granted once and kept while it lasts. It is
// safe for simultaneous use.
type leases struct {
	cli *clientv3.Client
	now func() time.Time

	// grant is held while a lease is granted, so that racing calls for
	// one bucket share one lease; it is a channel so that waiting for it
	// honours a context.
	grant chan struct{}

	mu    sync.Mutex
	byEnd map[int64]heldLease // by the end of its bucket, in Unix seconds
}

// heldLease is a granted lease.
type heldLease struct {
	id clientv3.LeaseID
	// expires is the earliest the lease can expire, on the clock now:
	// when it was asked for plus its time to live.
	expires time.Time
}

func newLeases(cli *clientv3.Client, now func() time.Time) *leases {
	return &leases{cli: cli, now: now, grant: make(chan struct{}, 1), byEnd: make(map[int64]heldLease)}
}

// bucketEnd returns the end of the bucket of width that deadline falls
// in: deadline rounded up to a multiple of width.
func bucketEnd(deadline time.Time, width time.Duration) time.Time {
	end := deadline.Truncate(width)
	if end.Before(deadline) {
		end = end.Add(width)
	}
	return end
}

// leaseTTL is the time to live, in whole seconds rounded up, that makes
// a lease asked for at now expire no earlier than end; at least one
// bucket's width for an end already past or close.
func leaseTTL(end, now time.Time, width time.Duration) int64 {
	d := max(end.Sub(now), width)
	return int64((d + time.Second - 1) / time.Second)
}

// get returns a lease that expires no earlier than deadline, by the
// clock now, shared with every deadline of its bucket of width. Each
// request it makes is bounded by timeout.
func (l *leases) get(ctx context.Context, deadline time.Time, width time.Duration, timeout time.Duration) (clientv3.LeaseID, error) {
	end := bucketEnd(deadline, width)
	if id, ok := l.cached(end, deadline); ok {
		return id, nil
	}
	select {
	case l.grant <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-l.grant }()
	if id, ok := l.cached(end, deadline); ok {
		return id, nil
	}
	now := l.now()
	ttl := leaseTTL(end, now, width)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := l.cli.Grant(rctx, ttl)
	if err != nil {
		return 0, fmt.Errorf("grant a lease of %ds: %w", ttl, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byEnd[end.Unix()] = heldLease{id: resp.ID, expires: now.Add(time.Duration(ttl) * time.Second)}
	return resp.ID, nil
}

// cached returns the lease of the bucket ending at end if it is held and
// lasts until deadline and a while after now, dropping the leases that
// have expired.
func (l *leases) cached(end, deadline time.Time) (clientv3.LeaseID, bool) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, h := range l.byEnd {
		if !h.expires.After(now) {
			delete(l.byEnd, k)
		}
	}
	h, ok := l.byEnd[end.Unix()]
	// A lease about to expire is not handed out: a record put under it
	// would be gone as soon as written.
	if !ok || h.expires.Before(deadline) || h.expires.Sub(now) < time.Second {
		return 0, false
	}
	return h.id, true
}

// forget drops every lease held, after etcd said one is gone (expired
// early, revoked, or lost with a restore): the next get grants anew.
func (l *leases) forget() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.byEnd)
}

// lease returns a lease shared by the records whose deadline falls in
// the same bucket of width as deadline, expiring no earlier than it.
func (s *Store) lease(ctx context.Context, op string, deadline time.Time, width time.Duration) (clientv3.LeaseID, error) {
	id, err := s.leases.get(ctx, deadline, width, s.timeout)
	if err != nil {
		return 0, s.etcdError(op, err)
	}
	return id, nil
}
