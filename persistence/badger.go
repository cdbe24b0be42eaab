package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/rs/zerolog"
)

// Memory defaults of a BadgerStore. Badger's own defaults are tuned for
// large databases (256 MiB block cache, five 64 MiB memtables); account state
// is small, so the store keeps its resident memory to roughly
// NumMemtables*MemTableSize + BlockCacheSize + IndexCacheSize, about 160 MiB
// at most with these values, much less while the data is small.
const (
	// DefaultMemTableSize is the size of one Badger memtable, in bytes. The
	// largest Badger transaction is 15% of it (about 9.6 MiB, or roughly
	// 100,000 entries), which bounds the largest AccountWrite.
	DefaultMemTableSize = 64 << 20
	// DefaultBlockCacheSize is the size of the cache of decoded (and
	// decrypted) table blocks, in bytes.
	DefaultBlockCacheSize = 16 << 20
	// DefaultIndexCacheSize is the size of the table index cache, in bytes,
	// used when the store is encrypted. Unencrypted stores keep every table
	// index in memory (about 5% of the data size) unless
	// BadgerOptions.IndexCacheSize says otherwise.
	DefaultIndexCacheSize = 16 << 20

	// numMemtables is how many memtables Badger may hold before writes stall:
	// one being written and one being flushed.
	numMemtables = 2
	// valueLogFileSize bounds one value-log file, in bytes. Values are small
	// enough to live in the LSM tree, so the value log stays nearly empty;
	// a small size keeps its memory mapping small.
	valueLogFileSize = 64 << 20
	// valueThreshold is the size, in bytes, above which Badger keeps a
	// value in the value log instead of the LSM tree. Account state is far
	// smaller; it must stay below 15% of MemTableSize.
	valueThreshold = 64 << 10
	// numCompactors is the number of Badger compaction goroutines (its
	// minimum useful value).
	numCompactors = 2

	// maxBlindDeletes is the widest [DropFrom, Snapshot.Seq] range that Write
	// deletes key by key without reading; wider ranges are deleted by
	// iterating over the journal keys that exist in them, so that a huge
	// range costs what is stored, not what it spans.
	maxBlindDeletes = 1024
)

// ErrEncryptionKey is returned by OpenBadger when the store on disk was
// written with another encryption key, or encrypted while no key was given,
// or not encrypted while a key was given.
var ErrEncryptionKey = errors.New("persistence: encryption key does not match the store")

// BadgerOptions configures OpenBadger. The zero value opens a non-durable,
// unencrypted store on disk with the default memory settings.
type BadgerOptions struct {
	// Durable makes Write fsync: a Write that returns nil has reached the
	// disk and survives a crash of the machine (Badger's SyncWrites). Without
	// it, a Write survives a crash of the process but the last writes before
	// a power loss may be lost. Each fsync costs roughly 0.2 ms or more, so
	// durable stores need batching to be fast.
	Durable bool
	// EncryptionKey, when not empty, encrypts every file of the store at
	// rest with AES-128, AES-192 or AES-256 (16, 24 or 32 bytes). A store
	// must always be opened with the key it was created with.
	EncryptionKey []byte
	// InMemory keeps everything in memory and nothing on disk, for tests;
	// the dir argument of OpenBadger is then ignored. Durable has no effect.
	InMemory bool
	// MemTableSize is the size of one memtable, in bytes (0: 64 MiB).
	MemTableSize int64
	// BlockCacheSize is the block cache size, in bytes (0: 16 MiB).
	BlockCacheSize int64
	// IndexCacheSize is the table index cache size, in bytes. 0 means
	// 16 MiB for an encrypted store and, for an unencrypted one, no cache:
	// every index stays in memory.
	IndexCacheSize int64
}

func (o *BadgerOptions) validate() error {
	switch len(o.EncryptionKey) {
	case 0, 16, 24, 32:
	default:
		return fmt.Errorf("persistence: BadgerOptions.EncryptionKey is %d bytes, want 16, 24 or 32",
			len(o.EncryptionKey))
	}
	if o.MemTableSize < 0 {
		return fmt.Errorf("persistence: BadgerOptions.MemTableSize %d is negative", o.MemTableSize)
	}
	if o.MemTableSize != 0 && o.MemTableSize < 1<<20 {
		return fmt.Errorf("persistence: BadgerOptions.MemTableSize %d is below 1 MiB", o.MemTableSize)
	}
	if o.BlockCacheSize < 0 {
		return fmt.Errorf("persistence: BadgerOptions.BlockCacheSize %d is negative", o.BlockCacheSize)
	}
	if o.IndexCacheSize < 0 {
		return fmt.Errorf("persistence: BadgerOptions.IndexCacheSize %d is negative", o.IndexCacheSize)
	}
	return nil
}

func (o *BadgerOptions) badger(dir string, log zerolog.Logger) badger.Options {
	memTable := o.MemTableSize
	if memTable == 0 {
		memTable = DefaultMemTableSize
	}
	blockCache := o.BlockCacheSize
	if blockCache == 0 {
		blockCache = DefaultBlockCacheSize
	}
	indexCache := o.IndexCacheSize
	if indexCache == 0 && len(o.EncryptionKey) > 0 {
		indexCache = DefaultIndexCacheSize
	}
	if o.InMemory {
		dir = ""
	}
	return badger.DefaultOptions(dir).
		WithInMemory(o.InMemory).
		WithSyncWrites(o.Durable).
		WithLogger(badgerLogger{log: log.With().Str("component", "badger").Logger()}).
		WithNumVersionsToKeep(1).
		WithDetectConflicts(false).
		WithMemTableSize(memTable).
		WithNumMemtables(numMemtables).
		WithBlockCacheSize(blockCache).
		WithIndexCacheSize(indexCache).
		WithValueLogFileSize(valueLogFileSize).
		WithValueThreshold(valueThreshold).
		WithNumCompactors(numCompactors).
		WithCompression(options.None).
		WithEncryptionKey(o.EncryptionKey)
}

// BadgerStore is the Store kept in a Badger database.
//
// Keys and values are laid out as described in codec.go. Every key written
// for an account expires at the account's ExpiresAt, rounded up to the
// second, by Badger's TTL; expired keys are invisible at once and removed by
// compaction. Badger measures TTLs against the wall clock, not the engine
// clock: the engine leaves a margin in ExpiresAt for the difference.
//
// BadgerStore is safe for simultaneous use by multiple goroutines; Writes
// are applied one at a time.
type BadgerStore struct {
	db  *badger.DB
	log zerolog.Logger

	life lifecycle

	writeMu   sync.Mutex   // serializes Write
	highWater atomic.Int64 // stored high-water mark; written under writeMu
}

var _ Store = (*BadgerStore)(nil)

// OpenBadger opens (creating if needed) the Badger store in directory dir.
// Badger's log messages go to log, tagged component=badger; its
// informational chatter is logged at debug level and its debug messages at
// trace level. A store written with another encryption key fails with an
// error wrapping ErrEncryptionKey; a corrupt stored high-water mark fails
// with an error wrapping ErrCorrupt.
func OpenBadger(dir string, opts BadgerOptions, log zerolog.Logger) (*BadgerStore, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if dir == "" && !opts.InMemory {
		return nil, errors.New("persistence: open badger: empty directory")
	}
	db, err := badger.Open(opts.badger(dir, log))
	if errors.Is(err, badger.ErrEncryptionKeyMismatch) {
		return nil, fmt.Errorf("%w (opening %q): %w", ErrEncryptionKey, dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("persistence: open badger %q: %w", dir, err)
	}
	s := &BadgerStore{db: db, log: log.With().Str("component", "persistence").Logger()}
	hw, err := s.loadHighWater()
	if err != nil {
		if cerr := db.Close(); cerr != nil {
			s.log.Error().Err(cerr).Msg("close badger after failed open")
		}
		return nil, err
	}
	s.highWater.Store(hw)
	return s, nil
}

func (s *BadgerStore) loadHighWater() (int64, error) {
	var hw int64
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(highWaterKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("persistence: read high water: %w", err)
		}
		var derr error
		if err := item.Value(func(v []byte) error {
			hw, derr = decodeHighWater(v)
			return nil
		}); err != nil {
			return fmt.Errorf("persistence: read high water: %w", err)
		}
		if derr != nil {
			return fmt.Errorf("persistence: high water: %w", derr)
		}
		return nil
	})
	return hw, err
}

// Write applies b: for each AccountWrite in order, its events are stored
// under their journal keys, then, if it has a Snapshot, the snapshot is
// stored and the journal events with Seq in [DropFrom, Snapshot.Seq] are
// deleted (events of the same AccountWrite inside that range are not
// stored at all). Every key stored for an account expires at its
// ExpiresAt; keys the account got from earlier batches keep the expiry
// they were written with. The high-water mark is stored only when
// b.HighWater exceeds the stored one.
//
// A batch is normally one Badger transaction, so it lands whole or not at
// all. A batch too large for one transaction (see DefaultMemTableSize) is
// split into several, at AccountWrite boundaries only: each AccountWrite
// stays atomic, the high-water mark lands with the first transaction, and
// if a later transaction fails, the returned error says how many
// AccountWrites were committed. Writing the same batch again stores the
// same state, so a failed batch may be retried as long as no later batch
// was written in between. A single AccountWrite too large for one
// transaction fails without storing anything of it.
//
// Write fails without writing anything if an account ID is invalid (the
// error wraps ErrInvalidAccount) or an event has Seq 0.
func (s *BadgerStore) Write(b *Batch) error {
	if err := validateBatch(b); err != nil {
		return err
	}
	if err := s.life.enter(); err != nil {
		return err
	}
	defer s.life.exit()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	writeHW := b.HighWater > s.highWater.Load()
	if len(b.Accounts) == 0 && !writeHW {
		return nil
	}
	w := batchWriter{db: s.db, b: b, arena: make([]byte, 0, batchSizeHint(b))}
	start := 0
	for first := true; first || start < len(b.Accounts); first = false {
		end, err := w.commit(start, first && writeHW)
		if err != nil {
			if start > 0 {
				return fmt.Errorf("persistence: write: batch split: %d of %d account writes committed, the rest not: %w",
					start, len(b.Accounts), err)
			}
			return err
		}
		if first && writeHW {
			s.highWater.Store(b.HighWater)
		}
		start = end
	}
	return nil
}

// batchSizeHint estimates the bytes of keys and values that b stores.
func batchSizeHint(b *Batch) int {
	n := 32
	for i := range b.Accounts {
		aw := &b.Accounts[i]
		n += len(aw.Events) * (len(aw.Account) + 2 + seqLen + maxEventLen)
		if aw.Snapshot != nil {
			n += 1 + len(aw.Account) + snapshotLen(aw.Snapshot)
		}
	}
	return n
}

// batchWriter turns a Batch into Badger transactions.
type batchWriter struct {
	db *badger.DB
	b  *Batch
	// arena holds the keys and values of the current Write. Badger keeps
	// references to them until the transaction commits, so bytes once
	// appended are never overwritten: when arena grows, earlier entries
	// keep pointing into the old array.
	arena []byte
}

// commit writes the account writes from index start on, as many as fit in
// one transaction, and the high-water mark if hw is set. It returns the
// index of the first account write not committed.
func (w *batchWriter) commit(start int, hw bool) (int, error) {
	txn, end, err := w.fill(start, len(w.b.Accounts), hw)
	if err != nil {
		return start, err
	}
	defer txn.Discard()
	if end < len(w.b.Accounts) {
		// The transaction overflowed at account write end: rebuild it with
		// exactly [start, end), so that no account write is cut in two.
		txn.Discard()
		if txn, end, err = w.fill(start, end, hw); err != nil {
			return start, err
		}
		defer txn.Discard()
	}
	if err := txn.Commit(); err != nil {
		return start, fmt.Errorf("persistence: write: commit: %w", err)
	}
	return end, nil
}

// fill starts a transaction and applies the account writes [start, limit)
// to it. It stops early, without error, at the first account write that
// does not fit, and returns the open transaction and the index it stopped
// at. On error the transaction is discarded.
func (w *batchWriter) fill(start, limit int, hw bool) (*badger.Txn, int, error) {
	txn := w.db.NewTransaction(true)
	if hw {
		k := w.alloc(append(w.arena, highWaterKey...))
		v := w.alloc(appendHighWater(w.arena, w.b.HighWater))
		if err := txn.SetEntry(badger.NewEntry(k, v)); err != nil {
			txn.Discard()
			return nil, start, fmt.Errorf("persistence: write high water: %w", err)
		}
	}
	for i := start; i < limit; i++ {
		aw := &w.b.Accounts[i]
		err := w.apply(txn, aw)
		if err == nil {
			continue
		}
		if !errors.Is(err, badger.ErrTxnTooBig) {
			txn.Discard()
			return nil, start, fmt.Errorf("persistence: account %q: write: %w", aw.Account, err)
		}
		if i == start {
			txn.Discard()
			return nil, start, fmt.Errorf("persistence: account %q: write of %d events does not fit in one transaction: %w",
				aw.Account, len(aw.Events), err)
		}
		return txn, i, nil
	}
	return txn, limit, nil
}

// alloc returns the bytes that grown appended to w.arena, capped so that
// later appends cannot overwrite them, and keeps grown as the arena.
func (w *batchWriter) alloc(grown []byte) []byte {
	start := len(w.arena)
	w.arena = grown
	return grown[start:len(grown):len(grown)]
}

// apply adds one account write to txn. Its errors come straight from
// Badger, so that the caller can recognize badger.ErrTxnTooBig.
func (w *batchWriter) apply(txn *badger.Txn, aw *AccountWrite) error {
	exp := expiresAtSeconds(aw.ExpiresAt)
	dropFrom, dropTo := uint64(1), uint64(0) // empty unless a snapshot drops
	if aw.Snapshot != nil {
		dropFrom, dropTo = max(aw.DropFrom, 1), aw.Snapshot.Seq
	}
	for i := range aw.Events {
		ev := &aw.Events[i]
		if ev.Seq >= dropFrom && ev.Seq <= dropTo {
			continue // deleted by the snapshot below
		}
		k := w.alloc(appendJournalKey(w.arena, aw.Account, ev.Seq))
		v := w.alloc(appendEvent(w.arena, *ev))
		if err := txn.SetEntry(newEntry(k, v, exp)); err != nil {
			return err
		}
	}
	if aw.Snapshot == nil {
		return nil
	}
	k := w.alloc(appendSnapshotKey(w.arena, aw.Account))
	v := w.alloc(appendSnapshot(w.arena, aw.Snapshot))
	if err := txn.SetEntry(newEntry(k, v, exp)); err != nil {
		return err
	}
	if dropFrom > dropTo {
		return nil
	}
	if dropTo-dropFrom < maxBlindDeletes {
		for seq := dropFrom; ; seq++ {
			if err := txn.Delete(w.alloc(appendJournalKey(w.arena, aw.Account, seq))); err != nil {
				return err
			}
			if seq == dropTo {
				return nil
			}
		}
	}
	return w.deleteStored(txn, aw.Account, dropFrom, dropTo)
}

// deleteStored deletes the journal keys of account with seq in
// [from, to] that txn sees.
func (w *batchWriter) deleteStored(txn *badger.Txn, account string, from, to uint64) error {
	prefix := appendJournalPrefix(nil, account)
	var keys [][]byte
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	for it.Seek(appendJournalKey(nil, account, from)); it.ValidForPrefix(prefix); it.Next() {
		key := it.Item().Key()
		if seq, ok := journalKeySeq(key, prefix); !ok || seq > to {
			break
		}
		keys = append(keys, w.alloc(append(w.arena, key...)))
	}
	it.Close()
	for _, k := range keys {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func newEntry(k, v []byte, expiresAt uint64) *badger.Entry {
	e := badger.NewEntry(k, v)
	e.ExpiresAt = expiresAt
	return e
}

// Load returns the stored state of account: its snapshot, if any, and its
// journal events with Seq above the snapshot's, in Seq order. Expired keys
// are not seen. A value that cannot be decoded, or a journal event stored
// under another Seq than its own, yields an error wrapping ErrCorrupt that
// names the account; other accounts are not affected.
func (s *BadgerStore) Load(account string) (Loaded, error) {
	if !ValidAccount(account) {
		return Loaded{}, invalidAccount(account)
	}
	if err := s.life.enter(); err != nil {
		return Loaded{}, err
	}
	defer s.life.exit()

	var l Loaded
	err := s.db.View(func(txn *badger.Txn) error {
		key := appendSnapshotKey(make([]byte, 0, 2+len(account)+seqLen), account)
		item, err := txn.Get(key)
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
		case err != nil:
			return fmt.Errorf("persistence: account %q: read snapshot: %w", account, err)
		default:
			var derr error
			if err := item.Value(func(v []byte) error {
				l.Snapshot, derr = decodeSnapshot(v)
				return nil
			}); err != nil {
				return fmt.Errorf("persistence: account %q: read snapshot: %w", account, err)
			}
			if derr != nil {
				return fmt.Errorf("persistence: account %q: snapshot: %w", account, derr)
			}
		}
		if l.Snapshot.Seq == math.MaxUint64 {
			return nil
		}

		prefix := appendJournalPrefix(key[:0], account)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		from := appendJournalKey(nil, account, l.Snapshot.Seq+1)
		for it.Seek(from); it.ValidForPrefix(prefix); it.Next() {
			item := it.Item()
			seq, ok := journalKeySeq(item.Key(), prefix)
			if !ok {
				return fmt.Errorf("persistence: account %q: journal key %x: %w", account, item.Key(),
					corrupt("malformed key"))
			}
			var ev Event
			var derr error
			if err := item.Value(func(v []byte) error {
				ev, derr = decodeEvent(v)
				return nil
			}); err != nil {
				return fmt.Errorf("persistence: account %q: read journal seq %d: %w", account, seq, err)
			}
			if derr == nil && ev.Seq != seq {
				derr = corrupt(fmt.Sprintf("holds event seq %d", ev.Seq))
			}
			if derr != nil {
				return fmt.Errorf("persistence: account %q: journal seq %d: %w", account, seq, derr)
			}
			l.Events = append(l.Events, ev)
		}
		return nil
	})
	if err != nil {
		return Loaded{}, err
	}
	return l, nil
}

// Accounts calls fn with each account that has a snapshot or journal
// events, once, in byte order of the account IDs. It reads keys only, and
// skips an account's journal by seeking past it, so a scan runs in constant
// memory whatever the number of accounts and events. It does not see
// writes made after it started. fn may call Load and Write, but must not
// call Close (Close waits for the scan to end). Malformed keys are logged
// and skipped.
func (s *BadgerStore) Accounts(fn func(account string) error) error {
	if err := s.life.enter(); err != nil {
		return err
	}
	defer s.life.exit()

	return s.db.View(func(txn *badger.Txn) error {
		sPrefix, jPrefix := []byte{snapshotPrefix}, []byte{journalPrefix}
		sit := txn.NewIterator(badger.IteratorOptions{Prefix: sPrefix})
		defer sit.Close()
		jit := txn.NewIterator(badger.IteratorOptions{Prefix: jPrefix})
		defer jit.Close()

		var seek []byte
		sit.Rewind()
		jit.Rewind()
		for {
			var sAcct, jAcct []byte
			sOK, jOK := sit.ValidForPrefix(sPrefix), jit.ValidForPrefix(jPrefix)
			if sOK {
				sAcct = sit.Item().Key()[1:]
				if !validAccountBytes(sAcct) {
					s.log.Warn().Hex("key", sit.Item().Key()).Msg("skipping malformed snapshot key")
					sit.Next()
					continue
				}
			}
			if jOK {
				var ok bool
				if jAcct, ok = journalKeyAccount(jit.Item().Key()); !ok {
					s.log.Warn().Hex("key", jit.Item().Key()).Msg("skipping malformed journal key")
					jit.Next()
					continue
				}
			}
			if !sOK && !jOK {
				return nil
			}
			c := compareAccounts(sAcct, sOK, jAcct, jOK)
			var account string
			if c <= 0 {
				account = string(sAcct)
				sit.Next()
			} else {
				account = string(jAcct)
			}
			if c >= 0 {
				// Seek to "j" + account + "\x01", the first key after all of
				// account's journal keys.
				seek = append(append(append(seek[:0], journalPrefix), account...), journalSep+1)
				jit.Seek(seek)
			}
			if err := fn(account); err != nil {
				return err
			}
		}
	})
}

// compareAccounts orders the heads of the snapshot and journal scans; an
// exhausted scan sorts last.
func compareAccounts(sAcct []byte, sOK bool, jAcct []byte, jOK bool) int {
	switch {
	case !jOK:
		return -1
	case !sOK:
		return 1
	}
	return bytes.Compare(sAcct, jAcct)
}

// HighWater returns the largest high-water mark written (0 if none).
func (s *BadgerStore) HighWater() (int64, error) {
	if err := s.life.enter(); err != nil {
		return 0, err
	}
	defer s.life.exit()
	return s.highWater.Load(), nil
}

// Close waits for the calls in progress to return, then closes the Badger
// database. Later calls, including Close, return ErrClosed.
func (s *BadgerStore) Close() error {
	if err := s.life.close(); err != nil {
		return err
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("persistence: close badger: %w", err)
	}
	return nil
}

// validateBatch checks the parts of b that would corrupt the key space.
func validateBatch(b *Batch) error {
	if b == nil {
		return errors.New("persistence: write: nil batch")
	}
	for i := range b.Accounts {
		aw := &b.Accounts[i]
		if !ValidAccount(aw.Account) {
			return invalidAccount(aw.Account)
		}
		for j := range aw.Events {
			if aw.Events[j].Seq == 0 {
				return fmt.Errorf("persistence: account %q: write: event %d has seq 0", aw.Account, j)
			}
		}
	}
	return nil
}

// invalidAccount returns the error for an account ID that ValidAccount
// rejects, quoting at most a little more than MaxAccountLen bytes of it.
func invalidAccount(account string) error {
	return fmt.Errorf("%w %.*q (%d bytes)", ErrInvalidAccount, MaxAccountLen+1, account, len(account))
}

// lifecycle lets a store's methods run concurrently with each other and
// makes Close wait for those in progress. Methods call enter before using
// the underlying store and exit after. Unlike a sync.RWMutex held for
// reading, a method may call another (Accounts' callback may Load) while
// Close is waiting: the inner call fails with ErrClosed instead of blocking.
type lifecycle struct {
	mu     sync.Mutex
	idle   sync.Cond // signalled when active drops to zero
	active int
	closed bool
}

func (l *lifecycle) enter() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.active++
	return nil
}

func (l *lifecycle) exit() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active--
	if l.active == 0 {
		l.idle.Broadcast()
	}
}

// close marks the store closed and waits until no method is active. It
// returns ErrClosed if the store was already closed.
func (l *lifecycle) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	l.idle.L = &l.mu
	for l.active > 0 {
		l.idle.Wait()
	}
	return nil
}

var _ badger.Logger = badgerLogger{}

// badgerLogger sends Badger's log messages to zerolog. Badger logs routine
// progress at Info level, which becomes debug here; its Debug becomes trace.
type badgerLogger struct{ log zerolog.Logger }

func (l badgerLogger) Errorf(format string, args ...any)   { emit(l.log.Error(), format, args) }
func (l badgerLogger) Warningf(format string, args ...any) { emit(l.log.Warn(), format, args) }
func (l badgerLogger) Infof(format string, args ...any)    { emit(l.log.Debug(), format, args) }
func (l badgerLogger) Debugf(format string, args ...any)   { emit(l.log.Trace(), format, args) }

// emit formats a Badger message only when its level is enabled.
func emit(e *zerolog.Event, format string, args []any) {
	if !e.Enabled() {
		return
	}
	e.Msg(strings.TrimSpace(fmt.Sprintf(format, args...)))
}
