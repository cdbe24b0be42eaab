package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/partition"
)

// IdentifyWindow is how long Discord counts an IDENTIFY against its
// bucket's max_concurrency.
const IdentifyWindow = 5 * time.Second

// identifyTTL is the TTL of a bucket key's lease: the window rounded up to
// whole seconds, and a second more for the IDENTIFY's way to Discord, so
// that a key never ends before the window of the IDENTIFY it covers.
var identifyTTL = ttlSeconds(IdentifyWindow) + time.Second

// IdentifyLimiter spaces the IDENTIFYs of the members of a cluster as
// Discord's session start limit wants: at most max_concurrency at once,
// one per bucket (shard % max_concurrency) each IdentifyWindow, across
// every member. It has the methods of disgo's gateway.IdentifyRateLimiter.
//
// A bucket is an etcd key, created in a transaction only if absent under
// a lease of its own, kept alive from Wait until Unlock, which renews it
// one last time: the key outlives the IDENTIFY by the lease's TTL at
// least, and a member that dies holding it lets it go within the TTL.
// Waiters watch the key and try again once it is deleted. It is safe for
// simultaneous use.
type IdentifyLimiter struct {
	cli            *clientv3.Client
	keys           partition.Keys
	maxConcurrency int
	holder         string
	clock          Clock
	log            zerolog.Logger

	mu      sync.Mutex
	held    map[int]*bucketHold // by bucket
	closed  bool
	closeCh chan struct{}
}

// bucketHold is a bucket key this limiter holds.
type bucketHold struct {
	lease clientv3.LeaseID
	stop  context.CancelFunc
	done  chan struct{}
}

// NewIdentifyLimiter returns the limiter of the cluster keys names, for a
// bot of maxConcurrency (GET /gateway/bot; at least 1); holder names this
// member in the bucket keys. A nil clock is SystemClock.
func NewIdentifyLimiter(cli *clientv3.Client, keys partition.Keys, maxConcurrency int, holder string, clock Clock, log zerolog.Logger) *IdentifyLimiter {
	if clock == nil {
		clock = SystemClock()
	}
	return &IdentifyLimiter{
		cli: cli, keys: keys, maxConcurrency: max(maxConcurrency, 1), holder: holder, clock: clock,
		log:  log.With().Str("component", "identify-limiter").Logger(),
		held: make(map[int]*bucketHold), closeCh: make(chan struct{}),
	}
}

func (l *IdentifyLimiter) bucket(shard int) int { return shard % l.maxConcurrency }

// Wait returns once shardID's bucket is this member's to IDENTIFY with,
// or ctx's error. Unlock must follow a nil return.
func (l *IdentifyLimiter) Wait(ctx context.Context, shardID int) error {
	b := l.bucket(shardID)
	key := identifyKey(l.keys, b)
	for {
		l.mu.Lock()
		closed := l.closed
		l.mu.Unlock()
		if closed {
			return errors.New("cluster: identify limiter closed")
		}
		g, err := l.cli.Grant(ctx, int64(identifyTTL/time.Second))
		if err != nil {
			return fmt.Errorf("cluster: identify bucket %d: %w", b, err)
		}
		resp, err := l.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, l.holder, clientv3.WithLease(g.ID))).
			Commit()
		if err != nil {
			l.revoke(g.ID)
			return fmt.Errorf("cluster: identify bucket %d: %w", b, err)
		}
		if resp.Succeeded {
			l.hold(b, g.ID)
			return nil
		}
		l.revoke(g.ID)
		if err := l.waitGone(ctx, key, resp.Header.Revision); err != nil {
			return err
		}
	}
}

// waitGone waits until key is deleted after revision rev.
func (l *IdentifyLimiter) waitGone(ctx context.Context, key string, rev int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := l.cli.Watch(wctx, key, clientv3.WithRev(rev+1))
	for {
		select {
		case wr, ok := <-wch:
			if !ok || wr.Canceled || wr.Err() != nil {
				if err := ctx.Err(); err != nil {
					return err
				}
				return nil // look again
			}
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypeDelete {
					return nil
				}
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-l.closeCh:
			return errors.New("cluster: identify limiter closed")
		}
	}
}

// hold keeps bucket b's lease alive until Unlock.
func (l *IdentifyLimiter) hold(b int, lease clientv3.LeaseID) {
	ctx, stop := context.WithCancel(context.Background())
	h := &bucketHold{lease: lease, stop: stop, done: make(chan struct{})}
	l.mu.Lock()
	l.held[b] = h
	l.mu.Unlock()
	go func() {
		defer close(h.done)
		every := identifyTTL / 3
		for {
			at := l.clock.Now() + every
			for l.clock.Now() < at {
				ch, release := l.clock.Wake(at)
				select {
				case <-ch:
					release()
				case <-ctx.Done():
					release()
					return
				}
			}
			kctx, cancel := context.WithTimeout(ctx, every)
			_, err := l.cli.KeepAliveOnce(kctx, lease)
			cancel()
			if err != nil && ctx.Err() == nil {
				l.log.Warn().Err(err).Int("bucket", b).Msg("keeping an identify bucket alive")
			}
		}
	}()
}

// Unlock ends shardID's hold of its bucket: the key's lease is renewed a
// last time, so that the bucket stays taken for a TTL after the IDENTIFY.
func (l *IdentifyLimiter) Unlock(shardID int) {
	b := l.bucket(shardID)
	l.mu.Lock()
	h := l.held[b]
	delete(l.held, b)
	l.mu.Unlock()
	if h == nil {
		return
	}
	h.stop()
	<-h.done
	ctx, cancel := context.WithTimeout(context.Background(), identifyTTL)
	defer cancel()
	if _, err := l.cli.KeepAliveOnce(ctx, h.lease); err != nil {
		// The key then lives a TTL from the last renewal only, which
		// may end within the IDENTIFY's window.
		l.log.Warn().Err(err).Int("bucket", b).Msg("renewing an identify bucket at its unlock")
	}
}

// Close stops the waits; buckets held run out with their leases.
func (l *IdentifyLimiter) Close(context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.closeCh)
	}
}

func (l *IdentifyLimiter) revoke(lease clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), identifyTTL)
	defer cancel()
	if _, err := l.cli.Revoke(ctx, lease); err != nil {
		l.log.Debug().Err(err).Msg("revoking an unused identify lease; it expires by itself")
	}
}
