package etcdstore

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/badgerutil"
	"github.com/pinbot/pinbot/internal/partition"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

// Errors of the store besides those of package persistence.
var (
	// ErrQuotaFull is wrapped by the error of a call etcd refused because
	// its database reached its space quota.
	ErrQuotaFull = errors.New("the etcd quota is full (database space exceeded): compact and defragment etcd " +
		"or raise its --quota-backend-bytes, then disarm its NOSPACE alarm")
	// ErrTooLarge is wrapped by the error of an AccountWrite that does not
	// fit in one etcd transaction (Options.MaxTxnOps, MaxTxnBytes).
	ErrTooLarge = errors.New("etcdstore: account write too large for one etcd transaction")
)

// Store is a persistence.Store and persistence.RuleKeeper kept in etcd,
// for the members of a pinbot cluster to share: each account's state
// lives in its partition's range, and a fenced store writes it only under
// the partition's current owner. Create it with Open. A Store is safe for
// simultaneous use by multiple goroutines, and any number of Stores, in
// one process or many, may use the same keys.
type Store struct {
	cli     *clientv3.Client
	keys    partition.Keys
	l       layout
	opts    Options
	now     func() int64
	leases  *leaseCache
	life    badgerutil.Lifecycle
	txnOps  int // account operations per transaction
	txnSize int // estimated bytes of account operations per transaction
}

var (
	_ persistence.Store      = (*Store)(nil)
	_ persistence.RuleKeeper = (*Store)(nil)
)

// Open returns the store kept under keys through cli, which stays the
// caller's to close (after Close). It checks that etcd answers, within
// ctx and the request timeout.
func Open(ctx context.Context, cli *clientv3.Client, keys partition.Keys, opts Options) (*Store, error) {
	if cli == nil {
		return nil, errors.New("etcdstore: open: nil etcd client")
	}
	if keys.Prefix == "" {
		return nil, errors.New("etcdstore: open: empty key prefix")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{
		cli:  cli,
		keys: keys,
		l:    layout{keys: keys},
		opts: opts,
		now:  opts.Now,
	}
	s.leases = newLeaseCache(cli, int64(opts.LeaseBucket.Seconds()))
	s.txnOps = opts.MaxTxnOps - hwReserve
	s.txnSize = opts.MaxTxnBytes - txnOverhead(s.l, s.opts.Partitions)
	rctx, cancel := s.request(ctx)
	defer cancel()
	if _, err := cli.Get(rctx, s.l.rules(), clientv3.WithCountOnly()); err != nil {
		return nil, s.etcdError("open", err)
	}
	return s, nil
}

// Close waits for the calls in progress to return, then closes the
// store; the etcd client stays open, and the leases granted stay to
// expire the keys attached to them. Later calls, including Close, return
// persistence.ErrClosed.
func (s *Store) Close() error {
	if !s.life.Close() {
		return persistence.ErrClosed
	}
	s.leases.forget()
	return nil
}

// Partitions returns the store's partition count.
func (s *Store) Partitions() int { return s.opts.Partitions }

// partitionOf returns the partition of account.
func (s *Store) partitionOf(account string) partition.ID {
	return partition.Of(account, s.opts.Partitions)
}

func (s *Store) checkPartition(p partition.ID) error {
	if int64(p) >= int64(s.opts.Partitions) {
		return fmt.Errorf("etcdstore: partition %d out of range (%d partitions)", p, s.opts.Partitions)
	}
	return nil
}

// enter registers a call; it fails once Close has begun or when ctx has
// ended. A nil error must be followed by s.life.Exit().
func (s *Store) enter(ctx context.Context) error {
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		s.life.Exit()
		return err
	}
	return nil
}

// request returns the context of one etcd request: ctx bounded by the
// request timeout.
func (s *Store) request(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.opts.RequestTimeout)
}

// etcdError wraps the error of an etcd request made by op, saying so
// when etcd's quota is full.
func (s *Store) etcdError(op string, err error) error {
	if isNoSpace(err) {
		return fmt.Errorf("etcdstore: %s: %w: %w", op, ErrQuotaFull, err)
	}
	return fmt.Errorf("etcdstore: %s: etcd: %w", op, err)
}

func isNoSpace(err error) bool {
	return errors.Is(err, rpctypes.ErrNoSpace) || rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCNoSpace)
}

func isLeaseNotFound(err error) bool {
	return errors.Is(err, rpctypes.ErrLeaseNotFound) || rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCLeaseNotFound)
}

// get reads one key; a missing key returns nil and no error.
func (s *Store) get(ctx context.Context, op, key string) ([]byte, error) {
	rctx, cancel := s.request(ctx)
	defer cancel()
	resp, err := s.cli.Get(rctx, key)
	if err != nil {
		return nil, s.etcdError(op, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	return resp.Kvs[0].Value, nil
}

// put writes one key with no lease.
func (s *Store) put(ctx context.Context, op, key string, value []byte) error {
	rctx, cancel := s.request(ctx)
	defer cancel()
	if _, err := s.cli.Put(rctx, key, string(value)); err != nil {
		return s.etcdError(op, err)
	}
	return nil
}

// Anchor returns this member's clock anchor (Options.Member), the zero
// ClockAnchor if none was stored.
func (s *Store) Anchor(ctx context.Context) (persistence.ClockAnchor, error) {
	if err := s.enter(ctx); err != nil {
		return persistence.ClockAnchor{}, err
	}
	defer s.life.Exit()
	v, err := s.get(ctx, "anchor", s.l.anchor(s.opts.Member))
	if err != nil || v == nil {
		return persistence.ClockAnchor{}, err
	}
	a, err := codec.DecodeAnchor(v)
	if err != nil {
		return persistence.ClockAnchor{}, fmt.Errorf("etcdstore: anchor of member %q: %w", s.opts.Member, err)
	}
	return a, nil
}

// SetAnchor stores a as this member's clock anchor.
func (s *Store) SetAnchor(ctx context.Context, a persistence.ClockAnchor) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.life.Exit()
	return s.put(ctx, "set anchor", s.l.anchor(s.opts.Member), codec.AppendAnchor(nil, a))
}

// Rules returns the engine's rules, shared by every member; the zero
// Rules when none were stored.
func (s *Store) Rules(ctx context.Context) (persistence.Rules, error) {
	if err := s.enter(ctx); err != nil {
		return persistence.Rules{}, err
	}
	defer s.life.Exit()
	v, err := s.get(ctx, "rules", s.l.rules())
	if err != nil || v == nil {
		return persistence.Rules{}, err
	}
	r, err := codec.DecodeRules(v)
	if err != nil {
		return persistence.Rules{}, fmt.Errorf("etcdstore: rules: %w", err)
	}
	return r, nil
}

// SetRules stores r in place of the engine's rules.
func (s *Store) SetRules(ctx context.Context, r persistence.Rules) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.life.Exit()
	return s.put(ctx, "set rules", s.l.rules(), codec.AppendRules(nil, r))
}
