package badgerlinks

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/internal/badgerutil"
	"github.com/pinbot/pinbot/internal/logctx"
)

// Badger settings. The database is tiny (a few hundred bytes per user and
// account), so the memory Badger may hold is kept to roughly
// numMemtables*memTableSize + blockCacheSize + indexCacheSize = 24 MiB.
const (
	memTableSize   = 8 << 20
	numMemtables   = 2
	blockCacheSize = 4 << 20
	// indexCacheSize is required by Badger when encryption is on.
	indexCacheSize   = 4 << 20
	valueLogFileSize = 16 << 20
	numCompactors    = 2

	// maxAttempts bounds the retries of a transaction that keeps
	// conflicting. Each conflict means another transaction committed, so
	// running out takes extreme contention on one user or account.
	maxAttempts = 1000
)

// Options configures Open.
type Options struct {
	// EncryptionKey encrypts every file of the database with AES-128,
	// AES-192 or AES-256 (16, 24 or 32 bytes). Required unless InMemory;
	// a database must always be opened with the key it was created with.
	EncryptionKey []byte
	// InMemory keeps everything in memory and nothing on disk, for tests;
	// the dir argument of Open is then ignored and EncryptionKey is
	// optional.
	InMemory bool
	// StateTTL is how long an OAuth state stays usable; 0 means
	// links.DefaultStateTTL.
	StateTTL time.Duration
}

func (o Options) validate(dir string, plain bool) error {
	switch len(o.EncryptionKey) {
	case 16, 24, 32:
	case 0:
		if !o.InMemory && !plain {
			return fmt.Errorf("%w: Options.EncryptionKey is empty: an on-disk store must be encrypted (16, 24 or 32 bytes)",
				links.ErrEncryptionKey)
		}
	default:
		return fmt.Errorf("%w: Options.EncryptionKey is %d bytes, want 16, 24 or 32",
			links.ErrEncryptionKey, len(o.EncryptionKey))
	}
	if o.StateTTL < 0 {
		return fmt.Errorf("%w: Options.StateTTL %v is negative", links.ErrInvalid, o.StateTTL)
	}
	if dir == "" && !o.InMemory {
		return fmt.Errorf("%w: empty data directory", links.ErrInvalid)
	}
	return nil
}

// Store keeps users, accounts, tokens and OAuth states in Badger: the
// links.Store of the program. Create it with Open. A Store is safe for
// simultaneous use by multiple goroutines; see the package documentation
// for durability.
type Store struct {
	db       *badger.DB
	log      zerolog.Logger
	stateTTL time.Duration
	life     life
}

var _ links.Store = (*Store)(nil)

// Open opens (creating if needed) the store in directory dir. Badger's
// messages go to log at warning level and above (its informational chatter
// at debug level), tagged component=links and source=badger.
//
// A missing key for an on-disk store, a key of the wrong length, or a key
// that is not the one the database was written with fails with an error
// wrapping links.ErrEncryptionKey; a directory another process (or another open
// Store) holds fails with an error wrapping links.ErrLocked.
func Open(dir string, opts Options, log zerolog.Logger) (*Store, error) {
	return open(dir, opts, log, false)
}

// open is Open; plain allows an on-disk store without encryption, which
// only the package's own tests use, to show that the encryption test can
// find tokens in files that are not encrypted.
func open(dir string, opts Options, log zerolog.Logger, plain bool) (*Store, error) {
	if err := opts.validate(dir, plain); err != nil {
		return nil, err
	}
	log = log.With().Str("component", "links").Logger()
	bopts := badger.DefaultOptions(dir).
		WithInMemory(opts.InMemory).
		WithSyncWrites(true).
		WithLogger(badgerutil.NewLogger(log.With().Str("source", "badger").Logger())).
		WithNumVersionsToKeep(1).
		WithMemTableSize(memTableSize).
		WithNumMemtables(numMemtables).
		WithBlockCacheSize(blockCacheSize).
		WithIndexCacheSize(indexCacheSize).
		WithValueLogFileSize(valueLogFileSize).
		WithNumCompactors(numCompactors).
		WithCompression(options.None).
		WithEncryptionKey(opts.EncryptionKey)
	if opts.InMemory {
		bopts = bopts.WithDir("").WithValueDir("")
	} else if err := badgerutil.RemoveEmptyLogs(dir, log); err != nil {
		return nil, fmt.Errorf("links: open %q: %w", dir, err)
	}
	db, err := badger.Open(bopts)
	if err != nil {
		return nil, openError(dir, err)
	}
	ttl := opts.StateTTL
	if ttl == 0 {
		ttl = links.DefaultStateTTL
	}
	s := &Store{db: db, log: log, stateTTL: ttl}
	s.log.Debug().Str("dir", dir).Bool("in_memory", opts.InMemory).
		Bool("encrypted", len(opts.EncryptionKey) > 0).Msg("links store open")
	return s, nil
}

// openError classifies an error of badger.Open. Badger formats most of its
// errors with %+v rather than %w, so its sentinels are matched by message
// too.
func openError(dir string, err error) error {
	msg := err.Error()
	switch {
	case errors.Is(err, badger.ErrEncryptionKeyMismatch),
		errors.Is(err, badger.ErrInvalidEncryptionKey),
		strings.Contains(msg, badger.ErrEncryptionKeyMismatch.Error()),
		strings.Contains(msg, "Encryption key's length"):
		return fmt.Errorf("%w: the data in %q was written with another encryption key, or without one: %w",
			links.ErrEncryptionKey, dir, err)
	case strings.Contains(msg, "Cannot acquire directory lock"):
		return fmt.Errorf("%w: %q is open in another process (or another store): %w", links.ErrLocked, dir, err)
	}
	return fmt.Errorf("links: open %q: %w", dir, err)
}

// Close waits for the calls in progress to return, then closes the
// database. Later calls, including Close, return links.ErrClosed.
func (s *Store) Close() error {
	if err := s.life.close(); err != nil {
		return err
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("links: close: %w", err)
	}
	s.log.Debug().Msg("links store closed")
	return nil
}

// Ping reports whether the store is open and readable: nil, links.ErrClosed, or
// the error of a read.
func (s *Store) Ping(ctx context.Context) error {
	return s.view(ctx, "ping", func(txn *badger.Txn) error {
		_, err := txn.Get([]byte(metaPingKey))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		return err
	})
}

// metaPingKey is a key Ping reads; it is never written.
const metaPingKey = "m/ping"

// view runs fn in a read-only transaction, between the store's lifecycle
// checks. op names the method in errors.
func (s *Store) view(ctx context.Context, op string, fn func(txn *badger.Txn) error) error {
	if err := s.life.enter(); err != nil {
		return err
	}
	defer s.life.exit()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("links: %s: %w", op, err)
	}
	return s.db.View(fn)
}

// update runs fn in a read-write transaction and commits it durably,
// retrying the whole transaction, fn included, when it conflicts with a
// concurrent one. fn must therefore have no effect outside txn except
// setting results that a retry overwrites.
func (s *Store) update(ctx context.Context, op string, fn func(txn *badger.Txn) error) error {
	if err := s.life.enter(); err != nil {
		return err
	}
	defer s.life.exit()
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("links: %s: %w", op, err)
		}
		err := s.db.Update(fn)
		if !errors.Is(err, badger.ErrConflict) {
			return err
		}
		if attempt == maxAttempts {
			return fmt.Errorf("links: %s: still conflicting after %d attempts: %w", op, attempt, err)
		}
		runtime.Gosched()
	}
}

// life is the store's badgerutil.Lifecycle with this package's links.ErrClosed.
type life struct{ badgerutil.Lifecycle }

func (l *life) enter() error {
	if !l.Enter() {
		return links.ErrClosed
	}
	return nil
}

func (l *life) exit() { l.Exit() }

func (l *life) close() error {
	if !l.Close() {
		return links.ErrClosed
	}
	return nil
}

// logger is the store's logger tagged with the IDs ctx carries (the
// command or request the call works for).
func (s *Store) logger(ctx context.Context) *zerolog.Logger {
	return logctx.Logger(ctx, s.log)
}
