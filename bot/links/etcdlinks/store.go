package etcdlinks

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/internal/badgerutil"
	"github.com/pinbot/pinbot/internal/logctx"
	"github.com/pinbot/pinbot/internal/partition"
)

// DefaultRequestTimeout bounds each etcd request when
// Options.RequestTimeout is zero.
const DefaultRequestTimeout = 5 * time.Second

// Options configures Open.
type Options struct {
	// EncryptionKey seals every value with AES-GCM: AES-128, AES-192 or
	// AES-256 (16, 24 or 32 bytes). Required. Every member of a cluster
	// must use the key the store was first opened with.
	EncryptionKey []byte
	// StateTTL is how long an OAuth state stays usable; 0 means
	// links.DefaultStateTTL.
	StateTTL time.Duration
	// RequestTimeout bounds each etcd request, so that a call fails
	// instead of waiting for an unreachable cluster; 0 means
	// DefaultRequestTimeout. A context's earlier deadline wins.
	RequestTimeout time.Duration
	// Now is the clock leases are measured on: a lease's time to live
	// runs from Now to the end of its bucket (see the package
	// documentation); nil means time.Now. Reads never use it: they check
	// deadlines against the time the caller passes.
	Now func() time.Time
}

func (o Options) validate() error {
	switch len(o.EncryptionKey) {
	case 16, 24, 32:
	case 0:
		return fmt.Errorf("%w: Options.EncryptionKey is empty: the store must be sealed (16, 24 or 32 bytes)",
			links.ErrEncryptionKey)
	default:
		return fmt.Errorf("%w: Options.EncryptionKey is %d bytes, want 16, 24 or 32",
			links.ErrEncryptionKey, len(o.EncryptionKey))
	}
	if o.StateTTL < 0 {
		return fmt.Errorf("%w: Options.StateTTL %v is negative", links.ErrInvalid, o.StateTTL)
	}
	if o.RequestTimeout < 0 {
		return fmt.Errorf("%w: Options.RequestTimeout %v is negative", links.ErrInvalid, o.RequestTimeout)
	}
	return nil
}

// Store keeps users, accounts, tokens, OAuth states, the digests' outbox,
// the pictures pinned and the pins made elsewhere in etcd, under
// partition.Keys.Links: the links.Store of a pinbot cluster, whose
// members each open one over the same keys. Create it with Open. A Store
// is safe for simultaneous use by multiple goroutines, and several
// Stores, in one process or many, may use the same keys at once.
type Store struct {
	cli      *clientv3.Client
	prefix   string // keys.Links(): every key of the store is under it
	members  string // keys.Members(): the outbox's owners are live while their key is there
	seal     *sealer
	log      zerolog.Logger
	stateTTL time.Duration
	timeout  time.Duration
	now      func() time.Time
	leases   *leases
	page     int64 // keys per request of a scan
	life     badgerutil.Lifecycle
}

var _ links.Store = (*Store)(nil)

// Open opens the store kept in etcd under keys.Links(), through cli,
// which stays the caller's to close (after Close). The first Open of a
// cluster stores a check of the encryption key; a later Open with
// another key fails with an error wrapping links.ErrEncryptionKey, as
// does a key missing or of the wrong length. Open reads (and the first
// time writes) that check within ctx and the request timeout.
func Open(ctx context.Context, cli *clientv3.Client, keys partition.Keys, opts Options, log zerolog.Logger) (*Store, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if cli == nil {
		return nil, fmt.Errorf("%w: nil etcd client", links.ErrInvalid)
	}
	if keys.Prefix == "" {
		return nil, fmt.Errorf("%w: empty key prefix", links.ErrInvalid)
	}
	seal, err := newSealer(opts.EncryptionKey)
	if err != nil {
		return nil, err
	}
	s := &Store{
		cli:      cli,
		prefix:   keys.Links(),
		members:  keys.Members(),
		seal:     seal,
		log:      log.With().Str("component", "links").Logger(),
		stateTTL: opts.StateTTL,
		timeout:  opts.RequestTimeout,
		now:      opts.Now,
		page:     scanPage,
	}
	if s.stateTTL == 0 {
		s.stateTTL = links.DefaultStateTTL
	}
	if s.timeout == 0 {
		s.timeout = DefaultRequestTimeout
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.leases = newLeases(cli, s.now)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("links: open: %w", err)
	}
	if err := s.checkKey(ctx); err != nil {
		return nil, err
	}
	s.log.Debug().Str("prefix", s.prefix).Msg("links store open")
	return s, nil
}

// Close waits for the calls in progress to return, then closes the
// store; the etcd client stays open. Later calls, including Close,
// return links.ErrClosed.
func (s *Store) Close() error {
	if !s.life.Close() {
		return links.ErrClosed
	}
	s.log.Debug().Msg("links store closed")
	return nil
}

// Ping reports whether the store is open and etcd answers a
// linearizable read of the store's key check: nil, links.ErrClosed, or
// the error of the read.
func (s *Store) Ping(ctx context.Context) error {
	return s.do(ctx, "ping", func(ctx context.Context) error {
		rctx, cancel := s.request(ctx)
		defer cancel()
		if _, err := s.cli.Get(rctx, s.key(keyCheckKey), clientv3.WithCountOnly()); err != nil {
			return s.etcdError("ping", err)
		}
		return nil
	})
}

// do runs fn between the store's lifecycle checks, after checking ctx.
// op names the method in errors.
func (s *Store) do(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	if !s.life.Enter() {
		return links.ErrClosed
	}
	defer s.life.Exit()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("links: %s: %w", op, err)
	}
	return fn(ctx)
}

// request returns the context of one etcd request: ctx bounded by the
// request timeout.
func (s *Store) request(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// etcdError wraps an error of an etcd request made by op.
func (s *Store) etcdError(op string, err error) error {
	return fmt.Errorf("links: %s: etcd: %w", op, err)
}

// key returns the etcd key of rel, a key relative to the store's prefix.
func (s *Store) key(rel string) string { return s.prefix + rel }

// rel returns the key relative to the store's prefix of an etcd key.
func (s *Store) rel(key []byte) string { return string(key[len(s.prefix):]) }

// logger is the store's logger tagged with the IDs ctx carries (the
// command or request the call works for).
func (s *Store) logger(ctx context.Context) *zerolog.Logger {
	return logctx.Logger(ctx, s.log)
}
