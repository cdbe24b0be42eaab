package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/partition"
)

// Defaults of Config.
const (
	// DefaultLeaseTTL is the TTL of a member's lease.
	DefaultLeaseTTL = 3 * time.Second
	// DefaultParallel is how many partitions a member acquires or hands
	// over at once.
	DefaultParallel = 8
)

// DefaultMargin returns the margin Config.Margin defaults to for a lease
// of ttl: a fifth of it.
func DefaultMargin(ttl time.Duration) time.Duration { return ttl / 5 }

// Config describes one member of a cluster. Client, Keys, Member,
// Partitions and the three callbacks are required.
type Config struct {
	// Client is the etcd client. The member does not close it.
	Client *clientv3.Client
	// Keys names the cluster's etcd keys.
	Keys partition.Keys
	// Member is this member's id, unique in the cluster: a second process
	// with the same id cannot start while the first one's key lives. It
	// may not contain "/".
	Member string
	// Addr is the address peers reach this member at, to forward the
	// requests of accounts it owns (MemberInfo.Addr).
	Addr string
	// Partitions is the cluster's partition count, 1 to
	// partition.MaxCount; every member must use the same.
	Partitions int
	// LeaseTTL is the TTL of the member's lease, rounded up to whole
	// seconds (etcd counts in seconds, and may grant more than asked: its
	// minimum is about one and a half election timeouts). 0: DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Margin is how long before its lease could first expire the member
	// stops serving: after a keep-alive sent at s and acknowledged with a
	// TTL of ttl, it serves until s + ttl - Margin. It covers the rates of
	// this machine's clock and etcd's leader's, a decision taken just
	// before the deadline, and the Lost callbacks. 0: DefaultMargin of the
	// granted TTL; at most half of it.
	Margin time.Duration
	// Parallel is how many partitions are acquired or handed over at
	// once. 0: DefaultParallel.
	Parallel int
	// Clock times the lease. Nil: SystemClock.
	Clock Clock
	// Log receives the member's log.
	Log zerolog.Logger
	// Observer, when not nil, learns what the member does, for metrics.
	Observer Observer

	// Acquired is called once the member has created partition p's owner
	// key, whose create revision is fence, and before it serves p: the new
	// owner loads p's state and queue here. An error gives the partition
	// back (its key is deleted, no other callback follows for this
	// tenure, and the member tries again after a pause).
	Acquired func(p partition.ID, fence partition.Fence) error
	// Lost is called when the member stopped serving p without a graceful
	// handover: its serving deadline passed, its lease expired, etcd says
	// the key is gone, or Release failed. It must stop p's actors without
	// writing, and must not block.
	Lost func(p partition.ID)
	// Release is the graceful handover of p, called while the member
	// still owns p's key and no longer accepts requests for it (ErrMoved):
	// it flushes p's writes and passivates its actors. The key is deleted
	// after it returns. ctx ends when the serving deadline passes or
	// Close's context ends. An error is followed by Lost(p), and the key
	// is deleted all the same.
	Release func(ctx context.Context, p partition.ID) error

	// Shards, when its Count is not 0, makes the member hold gateway
	// shards too (see ShardConfig).
	Shards ShardConfig

	hooks hooks
}

// hooks let tests look inside a member.
type hooks struct {
	// keepAlive is called before each keep-alive is sent; it may block (a
	// stalled process) until ctx ends.
	keepAlive func(ctx context.Context)
	// changed is called after the member's state changed.
	changed func()
	// reconciling is called as each round of the run loop begins: a
	// slow one stands for a loaded process.
	reconciling func()
}

// Observer learns what a member does, for metrics. Its methods must be
// cheap, must not block and must be safe for simultaneous use.
type Observer interface {
	// Acquired reports that the member began serving p.
	Acquired(p partition.ID)
	// Lost reports that the member stopped serving p without a handover.
	Lost(p partition.ID)
	// HandedOver reports that the member released p and deleted its key.
	HandedOver(p partition.ID)
	// Lapsed reports that the serving deadline passed without a newer
	// acknowledged keep-alive: every partition was lost.
	Lapsed()
	// LeaseExpired reports a lease that etcd no longer knows; the member
	// registers again under a new one.
	LeaseExpired()
}

// MemberInfo describes a live member, as stored in its member key.
type MemberInfo struct {
	ID string `json:"-"`
	// Addr is where peers reach it.
	Addr string `json:"addr"`
	// Started is when it started, by its wall clock.
	Started time.Time `json:"started"`
	// Partitions is the partition count it runs with.
	Partitions int `json:"partitions"`
	// Shards is the gateway shard count it runs with; 0: it holds no
	// shards.
	Shards int `json:"shards,omitempty"`
	// Suspended, when not "", says why it gives up its partitions and
	// acquires none (Member.Suspend): owners are picked without it.
	Suspended string `json:"suspended,omitempty"`
}

// Validate reports the first setting that is missing or out of range,
// naming it. Zero values with a default are accepted.
func (c Config) Validate() error {
	switch {
	case c.Client == nil:
		return errors.New("cluster: Config.Client is nil")
	case c.Keys.Prefix == "" || !strings.HasSuffix(c.Keys.Prefix, "/"):
		return fmt.Errorf("cluster: Config.Keys.Prefix %q must end with /", c.Keys.Prefix)
	case c.Member == "" || strings.Contains(c.Member, "/"):
		return fmt.Errorf("cluster: Config.Member %q must be non-empty, without /", c.Member)
	case c.Partitions < 1 || c.Partitions > partition.MaxCount:
		return fmt.Errorf("cluster: Config.Partitions %d out of range [1, %d]", c.Partitions, partition.MaxCount)
	case c.LeaseTTL < 0:
		return fmt.Errorf("cluster: Config.LeaseTTL %v is negative", c.LeaseTTL)
	case c.Margin < 0:
		return fmt.Errorf("cluster: Config.Margin %v is negative", c.Margin)
	case c.Margin > ttlSeconds(c.withDefaults().LeaseTTL)/2:
		return fmt.Errorf("cluster: Config.Margin %v exceeds half the lease TTL", c.Margin)
	case c.Parallel < 0:
		return fmt.Errorf("cluster: Config.Parallel %d is negative", c.Parallel)
	case c.Acquired == nil:
		return errors.New("cluster: Config.Acquired is nil")
	case c.Lost == nil:
		return errors.New("cluster: Config.Lost is nil")
	case c.Release == nil:
		return errors.New("cluster: Config.Release is nil")
	}
	return c.Shards.validate()
}

func (c Config) withDefaults() Config {
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.Parallel == 0 {
		c.Parallel = DefaultParallel
	}
	if c.Clock == nil {
		c.Clock = SystemClock()
	}
	return c
}

// ttlSeconds rounds d up to whole seconds.
func ttlSeconds(d time.Duration) time.Duration {
	return (d + time.Second - 1) / time.Second * time.Second
}
