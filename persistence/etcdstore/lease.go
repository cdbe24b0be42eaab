package etcdstore

import (
	"context"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxLeaseTTL is etcd's largest lease TTL, in seconds. A key expiring
// later is written without a lease: reads still hide it once expired.
const maxLeaseTTL = 9_000_000_000

// leaseCache hands out the leases that expire the store's keys: one per
// bucket of expiry seconds, granted when first needed and reused by
// every key expiring within the bucket, until the bucket's end passes.
// A lease granted at t for bucket end E has a TTL of E - t plus a
// second, so it never expires before a key attached to it should.
type leaseCache struct {
	cli    *clientv3.Client
	bucket int64 // seconds

	mu     sync.Mutex
	byEnd  map[int64]*leaseEntry // by bucket end, Unix seconds
	grants int                   // leases granted, for tests
}

type leaseEntry struct {
	ready chan struct{} // closed once id or err is set
	id    clientv3.LeaseID
	err   error
}

func newLeaseCache(cli *clientv3.Client, bucket int64) *leaseCache {
	return &leaseCache{cli: cli, bucket: bucket, byEnd: make(map[int64]*leaseEntry)}
}

// bucketEnd returns the end of the bucket of expiry second exp.
func (c *leaseCache) bucketEnd(exp uint64) int64 {
	e := int64(exp)
	return (e + c.bucket - 1) / c.bucket * c.bucket
}

// get returns the lease for keys expiring at second exp, which has not
// passed at now (Unix ms); 0 (no lease) when exp is too far away for
// one. The request, if any, runs under ctx.
func (c *leaseCache) get(ctx context.Context, exp uint64, now int64) (clientv3.LeaseID, error) {
	if exp > maxLeaseTTL {
		return clientv3.NoLease, nil
	}
	end := c.bucketEnd(exp)
	ttl := (end*1000-now+999)/1000 + 1
	if ttl > maxLeaseTTL {
		return clientv3.NoLease, nil
	}
	for {
		c.mu.Lock()
		for e := range c.byEnd {
			if e*1000 <= now {
				delete(c.byEnd, e) // its keys are all past their expiry
			}
		}
		ent := c.byEnd[end]
		if ent == nil {
			ent = &leaseEntry{ready: make(chan struct{})}
			c.byEnd[end] = ent
			c.grants++
			c.mu.Unlock()
			resp, err := c.cli.Grant(ctx, ttl)
			if err != nil {
				ent.err = err
				c.mu.Lock()
				if c.byEnd[end] == ent {
					delete(c.byEnd, end)
				}
				c.mu.Unlock()
			} else {
				ent.id = resp.ID
			}
			close(ent.ready)
			return ent.id, ent.err
		}
		c.mu.Unlock()
		select {
		case <-ent.ready:
		case <-ctx.Done():
			return clientv3.NoLease, ctx.Err()
		}
		if ent.err == nil {
			return ent.id, nil
		}
		// Another caller's grant failed, perhaps for its own context:
		// try once more, granting ourselves if nobody else does.
		if err := ctx.Err(); err != nil {
			return clientv3.NoLease, err
		}
	}
}

// drop forgets the lease id (etcd no longer knows it).
func (c *leaseCache) drop(id clientv3.LeaseID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for end, ent := range c.byEnd {
		select {
		case <-ent.ready:
			if ent.id == id {
				delete(c.byEnd, end)
			}
		default:
		}
	}
}

// forget drops every lease from the cache; etcd keeps them.
func (c *leaseCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.byEnd)
}

// granted returns how many leases the cache has requested.
func (c *leaseCache) granted() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.grants
}
