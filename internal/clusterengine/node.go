// Package clusterengine runs the rate-limit engine as one member of a
// pinbot cluster: an actors.Engine over the accounts' state in etcd
// (persistence/etcdstore), serving the accounts of the partitions its
// cluster.Member holds, and nothing else.
//
// The member's callbacks drive the engine: a partition acquired has its
// queued accounts made due (Engine.Adopt); one handed over gracefully has
// its actors passivated with their snapshots durable (Engine.Passivate)
// before its owner key is deleted; one lost (the lease or its deadline
// gone) has its actors dropped without writing (Engine.Drop). Every write
// carries the fence of its partition's tenure, so that a member that lost
// a partition, whatever it still believes, cannot change its state: etcd
// refuses the write (persistence.ErrFenced).
package clusterengine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/internal/cluster"
	"github.com/pinbot/pinbot/internal/partition"
	"github.com/pinbot/pinbot/persistence/etcdstore"
)

// Config describes one member's engine.
type Config struct {
	// Client is the etcd client of the state store; Member.Client, when
	// set, is the membership's (tests give them separate clients to cut
	// one and not the other). The node closes neither.
	Client *clientv3.Client
	Keys   partition.Keys
	// Member configures the membership; Client, Keys, Partitions and the
	// callbacks are set by Start.
	Member cluster.Config
	// Partitions is the cluster's partition count (clusterconf agreed).
	Partitions int
	// Engine configures the engine; Start sets its Owner, turns off the
	// start-up recovery scan (a partition's accounts replay their
	// journals as they load), and sets JournalPipeline, when 0, to
	// DefaultJournalPipeline.
	Engine actors.Config
	// Store configures the state store; Start sets Partitions, Fenced and
	// Member.
	Store etcdstore.Options
	// MaxSkew bounds how far the members' clocks may disagree
	// (DefaultMaxSkew when 0). Every pin counts for the window plus
	// MaxSkew, so that a member whose clock is ahead of the one that
	// made a pin never frees it early; and a member acquiring a
	// partition whose stored high-water mark is ahead of its own clock
	// waits for its clock to pass it (refusing the partition when it is
	// more than MaxSkew ahead), so that no pin of the previous owner is
	// in its future.
	MaxSkew time.Duration
	Log     zerolog.Logger
}

// DefaultMaxSkew is Config.MaxSkew's default.
const DefaultMaxSkew = time.Second

// DefaultJournalPipeline is the journal batches a member writes to etcd
// at once unless Config.Engine says otherwise. One: with more in flight
// the batches are cut smaller, and etcd's cost is per transaction, so on
// a machine whose cores etcd shares the cluster decides less per second,
// without a better tail (docs/benchmarks.md).
const DefaultJournalPipeline = 1

// Node is one member's engine. Its fields must not be changed.
type Node struct {
	Engine *actors.Engine
	Store  *etcdstore.Store
	Member *cluster.Member

	parts   int
	maxSkew time.Duration
	log     zerolog.Logger
	// sleep waits for d or ctx (tests replace it).
	sleep  func(ctx context.Context, d time.Duration) error
	member atomic.Pointer[cluster.Member]
	// tenures[p] is the fence token of p's current tenure while this
	// node serves p (from Acquired to the start of its handover or its
	// loss); nil otherwise.
	tenures []atomic.Pointer[tenure]
	mu      sync.Mutex // serializes the callbacks' changes of tenures
}

type tenure struct {
	fence partition.Fence
	token []byte // fence.Encode(), shared by the partition's actors
}

// Start opens the store, starts the engine and joins the cluster. The
// engine serves no account until the member acquires its partition.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.Partitions < 1 || cfg.Partitions > partition.MaxCount {
		return nil, fmt.Errorf("clusterengine: partition count %d", cfg.Partitions)
	}
	n := &Node{parts: cfg.Partitions, log: cfg.Log.With().Str("component", "clusterengine").Logger(), sleep: sleepCtx}
	n.tenures = make([]atomic.Pointer[tenure], cfg.Partitions)

	scfg := cfg.Store
	scfg.Partitions, scfg.Fenced, scfg.Member = cfg.Partitions, true, cfg.Member.Member
	store, err := etcdstore.Open(ctx, cfg.Client, cfg.Keys, scfg)
	if err != nil {
		return nil, err
	}
	n.Store = store

	if cfg.MaxSkew == 0 {
		cfg.MaxSkew = DefaultMaxSkew
	}
	if cfg.MaxSkew < 0 {
		return nil, fmt.Errorf("clusterengine: MaxSkew %v is negative", cfg.MaxSkew)
	}
	n.maxSkew = cfg.MaxSkew
	if n.Engine, err = actors.New(n.engineConfig(cfg), store, cfg.Log); err != nil {
		store.Close()
		return nil, fmt.Errorf("clusterengine: starting the engine: %w", err)
	}

	mcfg := cfg.Member
	if mcfg.Client == nil {
		mcfg.Client = cfg.Client
	}
	mcfg.Keys, mcfg.Partitions = cfg.Keys, cfg.Partitions
	mcfg.Acquired, mcfg.Lost, mcfg.Release = n.acquired, n.lost, n.release
	if mcfg.Log.GetLevel() == zerolog.NoLevel {
		mcfg.Log = cfg.Log
	}
	m, err := cluster.Start(ctx, mcfg)
	if err != nil {
		_ = n.Engine.Close(context.Background())
		store.Close()
		return nil, err
	}
	n.Member = m
	n.member.Store(m)
	return n, nil
}

// engineConfig returns the configuration of the engine of a member
// configured by cfg, whose MaxSkew is set.
func (n *Node) engineConfig(cfg Config) actors.Config {
	ecfg := cfg.Engine
	ecfg.Owner = n.owner
	ecfg.Recover = false
	ecfg.Window += cfg.MaxSkew
	if ecfg.JournalPipeline == 0 {
		ecfg.JournalPipeline = DefaultJournalPipeline
	}
	return ecfg
}

// owner is the engine's Config.Owner: the token of the account's
// partition while this node serves it and the member is within its
// serving deadline.
func (n *Node) owner(account string) ([]byte, error) {
	p := partition.Of(account, n.parts)
	t := n.tenures[p].Load()
	m := n.member.Load()
	if t == nil || m == nil {
		return nil, cluster.ErrNotOwner
	}
	if f, ok := m.Fence(p); !ok || f != t.fence {
		return nil, cluster.ErrNotOwner
	}
	return t.token, nil
}

// Serves reports whether this node serves account now.
func (n *Node) Serves(account string) bool {
	_, err := n.owner(account)
	return err == nil
}

func (n *Node) inPartition(p partition.ID) func(string) bool {
	return func(account string) bool { return partition.Of(account, n.parts) == p }
}

func (n *Node) acquired(p partition.ID, fence partition.Fence) error {
	ctx, cancel := context.WithTimeout(context.Background(), adoptTimeout)
	defer cancel()
	if err := n.catchUp(ctx, p); err != nil {
		return err
	}
	n.mu.Lock()
	n.tenures[p].Store(&tenure{fence: fence, token: fence.Encode()})
	n.mu.Unlock()
	// The accounts of p with queued pins come due: jobs their previous
	// owner left running come back recovered, never run again.
	k, err := n.Engine.Adopt(func(fn func(string) error) error {
		return n.Store.PartitionJobAccounts(ctx, p, fn)
	})
	if err != nil {
		n.mu.Lock()
		n.tenures[p].Store(nil)
		n.mu.Unlock()
		n.Engine.Drop(n.inPartition(p))
		return fmt.Errorf("clusterengine: partition %d: listing its queued accounts: %w", p, err)
	}
	n.log.Debug().Uint32("partition", uint32(p)).Int64("fence", fence.Revision).Int("queued_accounts", k).Msg("partition acquired")
	return nil
}

// adoptTimeout bounds the listing of an acquired partition's queues.
const adoptTimeout = 10 * time.Second

func (n *Node) lost(p partition.ID) {
	n.mu.Lock()
	n.tenures[p].Store(nil)
	n.mu.Unlock()
	k := n.Engine.Drop(n.inPartition(p))
	n.log.Warn().Uint32("partition", uint32(p)).Int("actors", k).Msg("partition lost: its actors stop without writing")
}

func (n *Node) release(ctx context.Context, p partition.ID) error {
	n.mu.Lock()
	n.tenures[p].Store(nil)
	n.mu.Unlock()
	if err := n.Engine.Passivate(ctx, n.inPartition(p)); err != nil {
		return fmt.Errorf("clusterengine: handing partition %d over: %w", p, err)
	}
	return nil
}

// Close hands every partition over, then stops the engine and the store.
func (n *Node) Close(ctx context.Context) error {
	var errs []error
	if err := n.Member.Close(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := n.Engine.Close(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := n.Store.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// catchUp returns once the engine's clock has reached partition p's
// stored high-water mark, the newest instant its state refers to, by
// waiting up to MaxSkew; a mark further ahead means clocks that disagree
// beyond the bound, and the partition is refused.
func (n *Node) catchUp(ctx context.Context, p partition.ID) error {
	hw, err := n.Store.PartitionHighWater(ctx, p)
	if err != nil {
		return fmt.Errorf("clusterengine: partition %d: reading its high-water mark: %w", p, err)
	}
	ahead := time.Duration(hw-n.Engine.Now().UnixMilli()) * time.Millisecond
	switch {
	case ahead <= 0:
		return nil
	case ahead > n.maxSkew:
		n.log.Error().Uint32("partition", uint32(p)).Dur("ahead", ahead).Dur("max_skew", n.maxSkew).
			Msg("partition refused: its state is ahead of this member's clock by more than the clocks may disagree")
		return fmt.Errorf("clusterengine: partition %d: its high-water mark is %v ahead of this member's clock, more than the %v the clocks may disagree", p, ahead, n.maxSkew)
	}
	n.log.Info().Uint32("partition", uint32(p)).Dur("ahead", ahead).Msg("waiting for this member's clock to reach the partition's high-water mark")
	return n.sleep(ctx, ahead)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
