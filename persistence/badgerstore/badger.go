package badgerstore

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/internal/badgerutil"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

// Memory defaults of a BadgerStore. Badger's own defaults are tuned for
// large databases (256 MiB block cache, five 64 MiB memtables); account state
// is small, so the store keeps its resident memory to roughly
// NumMemtables*MemTableSize + BlockCacheSize + IndexCacheSize, about 48 MiB
// at most with these values, much less while the data is small.
const (
	// DefaultMemTableSize is the size of one Badger memtable, in bytes. The
	// largest Badger transaction is 15% of it (about 2.4 MiB, or roughly
	// 25,000 entries), which bounds the largest AccountWrite (a batch
	// larger than that is split, see Write).
	//
	// Smaller memtables are flushed more often, each flush shorter: a
	// flush builds a table file from the memtable and syncs it, and while
	// it does, the commits' own syncs wait behind it and its CPU work
	// competes with the engine's. With 16 MiB rather than 64 MiB, the p99
	// of a durable grant at half load fell from 141-166 ms to 18-102 ms
	// (18-22 ms with the memtable hold, see memtableHold) and steady-state
	// durable throughput rose by about 6% (docs/benchmarks.md); 4 and
	// 8 MiB did worse again.
	DefaultMemTableSize = 16 << 20
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
	// value in the value log instead of the LSM tree. Snapshots and WAL
	// records (at most walChunkBytes) are smaller; it must stay below 15% of
	// MemTableSize and at most 1 MiB, Badger's limits; with small memtables
	// it is a tenth of their size.
	valueThreshold = 1 << 20
	// numCompactors is the number of Badger compaction goroutines (its
	// minimum useful value).
	numCompactors = 2
)

// ErrEncryptionKey is returned by OpenBadger when the store on disk was
// written with another encryption key, or encrypted while no key was given,
// or not encrypted while a key was given.
var ErrEncryptionKey = errors.New("persistence: encryption key does not match the store")

// BadgerOptions configures OpenBadger. The zero value opens a non-durable,
// unencrypted store on disk with the default memory settings.
type Options struct {
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
	// MemTableSize is the size of one memtable, in bytes (0: DefaultMemTableSize, 16 MiB).
	MemTableSize int64
	// BlockCacheSize is the block cache size, in bytes (0: 16 MiB).
	BlockCacheSize int64
	// IndexCacheSize is the table index cache size, in bytes. 0 means
	// 16 MiB for an encrypted store and, for an unencrypted one, no cache:
	// every index stays in memory.
	IndexCacheSize int64
	// MinFreeBytes is the free space Write keeps in reserve on the store's
	// file system: below it, Write fails with ErrNoSpace before touching
	// Badger. Badger writes its memtable log through a memory-mapped file,
	// so a disk that fills up under it kills the process with SIGBUS
	// instead of returning an error; the reserve keeps that from
	// happening. 0 means two memtables plus one value-log file; negative
	// turns the check off.
	MinFreeBytes int64
}

func (o *Options) validate() error {
	switch len(o.EncryptionKey) {
	case 0, 16, 24, 32:
	default:
		return fmt.Errorf("persistence: Options.EncryptionKey is %d bytes, want 16, 24 or 32",
			len(o.EncryptionKey))
	}
	if o.MemTableSize < 0 {
		return fmt.Errorf("persistence: Options.MemTableSize %d is negative", o.MemTableSize)
	}
	if o.MemTableSize != 0 && o.MemTableSize < 1<<20 {
		return fmt.Errorf("persistence: Options.MemTableSize %d is below 1 MiB", o.MemTableSize)
	}
	if o.BlockCacheSize < 0 {
		return fmt.Errorf("persistence: Options.BlockCacheSize %d is negative", o.BlockCacheSize)
	}
	if o.IndexCacheSize < 0 {
		return fmt.Errorf("persistence: Options.IndexCacheSize %d is negative", o.IndexCacheSize)
	}
	return nil
}

func (o *Options) badger(dir string, log zerolog.Logger) badger.Options {
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
		WithLogger(badgerutil.NewLogger(log.With().Str("component", "badger").Logger())).
		WithNumVersionsToKeep(1).
		WithDetectConflicts(false).
		WithMemTableSize(memTable).
		WithNumMemtables(numMemtables).
		WithBlockCacheSize(blockCache).
		WithIndexCacheSize(indexCache).
		WithValueLogFileSize(valueLogFileSize).
		WithValueThreshold(min(valueThreshold, memTable/10)).
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
//
// The database is opened in Badger's managed mode: the store gives each
// transaction its commit timestamp itself, from a counter kept under
// writeMu, and reads at the last committed one (see view). Badger's own
// timestamp oracle makes every new write transaction wait until a
// watermark goroutine has marked the previous commit done; on a loaded
// machine that goroutine waits its turn behind every runnable caller, and
// this wait was most of the time a group commit spent outside fsync.
// Every write already goes through writeMu one at a time, so the oracle's
// ordering adds nothing.
type Store struct {
	db  *badger.DB
	log zerolog.Logger

	life badgerutil.Lifecycle

	writeMu   sync.Mutex   // serializes Write
	highWater atomic.Int64 // stored high-water mark; written under writeMu
	// version is the commit timestamp of the last write transaction
	// (under writeMu); it starts at the newest version on disk.
	version uint64

	// readMu guards readTs and readers. Reads run at readTs, the version
	// of the last transaction that committed, so a read sees every
	// transaction whole or not at all, and nothing written after it
	// began. readers counts the reads in progress per timestamp: Badger
	// may drop versions up to the oldest of them only (see committed).
	readMu  sync.Mutex
	readTs  uint64
	readers map[uint64]int

	// walMu guards wal. Write holds it exclusively from the commit of its
	// transaction to the update of the index, and Load holds it shared
	// while it reads both, so Load never pairs a snapshot with events of
	// another moment.
	walMu    sync.RWMutex
	wal      walIndex
	walChunk int // largest WAL record, in bytes

	dir     string
	minFree int64 // see BadgerOptions.MinFreeBytes; < 0: no check

	// upd and arena are reused by every Write (under writeMu).
	upd   walUpdate
	arena []byte

	// hold keeps Badger's flushed memtables from being deleted under its
	// lock (see memtableHold); nil for an in-memory store. Write wakes
	// holdWake every holdEvery bytes (counted in sinceHold, under writeMu),
	// and the goroutine that closes holdDone when it exits refreshes it.
	hold      *memtableHold
	holdWake  chan struct{}
	holdDone  chan struct{}
	holdEvery int64
	sinceHold int64
}

// checkSpace fails with ErrNoSpace when the store's file system has less
// than minFree bytes available.
func (s *Store) checkSpace() error {
	if s.minFree < 0 {
		return nil
	}
	free, err := freeBytes(s.dir)
	if err != nil {
		// Not knowing is no reason to refuse; Badger reports real errors.
		s.log.Warn().Err(err).Msg("cannot read free disk space")
		return nil
	}
	if free < uint64(s.minFree) {
		return fmt.Errorf("persistence: %q has %d bytes free, less than the %d kept in reserve: %w",
			s.dir, free, s.minFree, persistence.ErrNoSpace)
	}
	return nil
}

var _ persistence.Store = (*Store)(nil)

// OpenBadger opens (creating if needed) the Badger store in directory dir.
// Badger's log messages go to log, tagged component=badger; its
// informational chatter is logged at debug level and its debug messages at
// trace level. A store written with another encryption key fails with an
// error wrapping ErrEncryptionKey; a corrupt stored high-water mark fails
// with an error wrapping ErrCorrupt.
func Open(dir string, opts Options, log zerolog.Logger) (*Store, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if dir == "" && !opts.InMemory {
		return nil, errors.New("persistence: open badger: empty directory")
	}
	bopts := opts.badger(dir, log)
	minFree := opts.MinFreeBytes
	if minFree == 0 {
		minFree = 2*bopts.MemTableSize + valueLogFileSize
	}
	if opts.InMemory {
		minFree = -1
	}
	if !opts.InMemory {
		if err := badgerutil.RemoveEmptyValueLogs(dir, log); err != nil {
			return nil, err
		}
	}
	db, err := badger.OpenManaged(bopts)
	if errors.Is(err, badger.ErrEncryptionKeyMismatch) {
		return nil, fmt.Errorf("%w (opening %q): %w", ErrEncryptionKey, dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("persistence: open badger %q: %w", dir, err)
	}
	s := &Store{db: db, log: log.With().Str("component", "persistence").Logger(), wal: newWALIndex(),
		walChunk: int(min(walChunkBytes, bopts.ValueThreshold/2)),
		dir:      dir, minFree: minFree, version: db.MaxVersion(), readers: make(map[uint64]int)}
	s.readTs = s.version
	hw, err := s.loadHighWater()
	if err == nil {
		err = s.loadWAL()
	}
	if err != nil {
		if cerr := db.Close(); cerr != nil {
			s.log.Error().Err(cerr).Msg("close badger after failed open")
		}
		return nil, err
	}
	s.highWater.Store(hw)
	// Versions older than the newest ones on disk are dead from the start.
	s.committed(s.version)
	if !opts.InMemory {
		s.hold = &memtableHold{db: db}
		s.hold.refresh()
		s.holdEvery = max(bopts.MemTableSize/holdsPerMemtable, 1)
		s.holdWake = make(chan struct{}, 1)
		s.holdDone = make(chan struct{})
		go s.runHold()
	}
	return s, nil
}

// holdsPerMemtable is how often, at least, the memtable hold is refreshed
// while one memtable fills: every MemTableSize/holdsPerMemtable bytes
// written, each entry counted with entryOverhead bytes more than its key
// and value, about what it takes in a memtable.
const (
	holdsPerMemtable = 8
	entryOverhead    = 128
)

// runHold refreshes the memtable hold each time Write asks, until Close,
// which closes holdWake only once no Write can run and waits for runHold
// to return before it closes the database.
func (s *Store) runHold() {
	defer close(s.holdDone)
	for range s.holdWake {
		s.hold.refresh()
	}
}

// wrote counts bytes written to Badger and, every holdEvery bytes, asks
// runHold to refresh the memtable hold. It is called under writeMu.
func (s *Store) wrote(entries, bytes int) {
	if s.hold == nil {
		return
	}
	s.sinceHold += int64(bytes + entries*entryOverhead)
	if s.sinceHold < s.holdEvery {
		return
	}
	s.sinceHold = 0
	select {
	case s.holdWake <- struct{}{}:
	default:
	}
}

func (s *Store) loadHighWater() (int64, error) {
	var hw int64
	err := s.view(func(txn *badger.Txn) error {
		item, err := txn.Get(highWaterKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("persistence: read high water: %w", err)
		}
		var derr error
		if err := item.Value(func(v []byte) error {
			hw, derr = codec.DecodeHighWater(v)
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

// Write applies b: for each AccountWrite in order, its events are appended
// to the write-ahead log (see wal.go), then, if it has a Snapshot, the
// snapshot is stored and every journal event of the account with Seq up to
// Snapshot.Seq is superseded (events of the same AccountWrite in that range
// are not stored at all). The snapshot key expires at the AccountWrite's
// ExpiresAt, and so, for Load, do the events it carries. The high-water
// mark is stored only when b.HighWater exceeds the stored one.
//
// A batch is normally one Badger transaction, so it lands whole or not at
// all. A batch too large for one transaction (see DefaultMemTableSize) is
// split in halves, recursively, at AccountWrite boundaries only: each
// AccountWrite stays atomic, the high-water mark lands with the first
// transaction, and if a later transaction fails, the returned error says
// how many AccountWrites were committed. A failed batch is not to be
// written again (the journal never does): its committed part would be
// stored twice. A single AccountWrite too large for one transaction fails
// without storing anything of it.
//
// Write fails without writing anything if an account ID is invalid (the
// error wraps ErrInvalidAccount) or an event has Seq 0.
func (s *Store) Write(b *persistence.Batch) error {
	if err := b.Validate(); err != nil {
		return err
	}
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	defer s.life.Exit()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	writeHW := b.HighWater > s.highWater.Load()
	if len(b.Accounts) == 0 && !writeHW {
		return nil
	}
	if err := s.checkSpace(); err != nil {
		return err
	}
	n, err := s.write(b.Accounts, writeHW, b.HighWater, b.Durable)
	if err != nil && n > 0 {
		return fmt.Errorf("persistence: write: batch split: %d of %d account writes committed, the rest not: %w",
			n, len(b.Accounts), err)
	}
	return err
}

// write commits accounts, splitting them in halves while they do not fit
// in one transaction, and returns how many of them were committed. durable
// (may be nil) is Batch.Durable: called when accounts commit in one
// transaction, never for the parts of a split.
func (s *Store) write(accounts []persistence.AccountWrite, hw bool, highWater int64, durable func()) (int, error) {
	err := s.commit(accounts, hw, highWater, durable)
	switch {
	case err == nil:
		return len(accounts), nil
	case !errors.Is(err, badger.ErrTxnTooBig):
		return 0, err
	case len(accounts) <= 1:
		var name string
		var events int
		if len(accounts) == 1 {
			name, events = accounts[0].Account, len(accounts[0].Events)
		}
		return 0, fmt.Errorf("persistence: account %q: write of %d events does not fit in one transaction: %w",
			name, events, err)
	}
	half := len(accounts) / 2
	n, err := s.write(accounts[:half], hw, highWater, nil)
	if err != nil {
		return n, err
	}
	m, err := s.write(accounts[half:], false, highWater, nil)
	return n + m, err
}

// commit writes accounts and, if hw is set, the high-water mark in one
// transaction. Errors of Badger's that say the transaction is too big are
// returned as they are, so that write can recognize them.
func (s *Store) commit(accounts []persistence.AccountWrite, hw bool, highWater int64, durable func()) error {
	// Only Write changes the index, and Writes are serialized, so planning
	// may read it without walMu.
	u := &s.upd
	s.wal.plan(accounts, s.walChunk, u)
	// Badger keeps the keys and values until the commit: each is carved
	// from arena without overwriting earlier ones (when arena grows, they
	// keep pointing into the old array).
	arena := s.arena[:0]
	carve := func(grown []byte) []byte {
		start := len(arena)
		arena = grown
		return grown[start:len(grown):len(grown)]
	}
	defer func() { s.arena = arena[:0] }()
	// Writes read nothing, so the read timestamp does not matter.
	txn := s.db.NewTransactionAt(math.MaxUint64, true)
	defer txn.Discard()
	snapshots, snapshotBytes := 0, 0
	if hw {
		if err := txn.SetEntry(badger.NewEntry(highWaterKey, codec.AppendHighWater(nil, highWater))); err != nil {
			return wrapTxn("write high water", err)
		}
	}
	for _, r := range u.recs {
		k := carve(appendWALKey(arena, r.seq))
		v := carve(codec.AppendWALRecord(arena, r.seq, r.entries))
		if err := txn.SetEntry(badger.NewEntry(k, v)); err != nil {
			return wrapTxn(walRecordName(r.seq), err)
		}
	}
	for i := range accounts {
		aw := &accounts[i]
		if aw.Snapshot == nil {
			continue
		}
		k := appendSnapshotKey(make([]byte, 0, 1+len(aw.Account)), aw.Account)
		v := codec.AppendSnapshot(make([]byte, 0, codec.SnapshotLen(aw.Snapshot)), aw.Snapshot)
		exp := aw.ExpirySecond()
		if ce, ok := u.coveredExp[aw.Account]; ok && exp != 0 && (ce == 0 || ce > exp) {
			exp = ce
		}
		if err := txn.SetEntry(newEntry(k, v, exp)); err != nil {
			return wrapTxn(fmt.Sprintf("account %q: snapshot", aw.Account), err)
		}
		snapshots++
		snapshotBytes += len(k) + len(v)
	}
	for _, rec := range u.dead {
		if err := txn.Delete(appendWALKey(nil, rec)); err != nil {
			return wrapTxn("delete "+walRecordName(rec), err)
		}
	}
	entries, bytes := len(u.recs)+len(u.dead), len(arena)+len(u.dead)*walKeyLen
	if hw {
		entries++
	}
	s.walMu.Lock()
	defer s.walMu.Unlock()
	ts := s.nextVersion()
	if err := txn.CommitAt(ts, nil); err != nil {
		return fmt.Errorf("persistence: write: commit: %w", err)
	}
	s.committed(ts)
	if hw {
		s.highWater.Store(highWater)
	}
	if durable != nil {
		// Before the index is updated: nothing that reads it can run
		// until walMu is released, and the writers' callers go on
		// meanwhile.
		durable()
	}
	s.wal.apply(u)
	s.wrote(entries+snapshots, bytes+snapshotBytes)
	return nil
}

// wrapTxn adds context to an error of a transaction being built, except
// badger.ErrTxnTooBig, which Write handles by splitting the batch.
func wrapTxn(what string, err error) error {
	if errors.Is(err, badger.ErrTxnTooBig) {
		return err
	}
	return fmt.Errorf("persistence: write: %s: %w", what, err)
}

func newEntry(k, v []byte, expiresAt uint64) *badger.Entry {
	e := badger.NewEntry(k, v)
	e.ExpiresAt = expiresAt
	return e
}

// Load returns the stored state of account: its snapshot, if any, and its
// journal events with Seq above the snapshot's, in Seq order. Expired state
// is not seen. A snapshot that cannot be decoded yields an error wrapping
// ErrCorrupt that names the account; other accounts are not affected.
func (s *Store) Load(account string) (persistence.Loaded, error) {
	if err := persistence.CheckAccount(account); err != nil {
		return persistence.Loaded{}, err
	}
	if !s.life.Enter() {
		return persistence.Loaded{}, persistence.ErrClosed
	}
	defer s.life.Exit()

	s.walMu.RLock()
	defer s.walMu.RUnlock()
	var l persistence.Loaded
	err := s.view(func(txn *badger.Txn) error {
		var err error
		l.Snapshot, _, err = s.readSnapshot(txn, account)
		return err
	})
	if err != nil {
		return persistence.Loaded{}, err
	}
	l.Events = s.wal.events(account, l.Snapshot.Seq, wallSeconds())
	return l, nil
}

// readSnapshot reads account's snapshot; found is false when it has none.
func (s *Store) readSnapshot(txn *badger.Txn, account string) (snap persistence.Snapshot, found bool, err error) {
	item, err := txn.Get(appendSnapshotKey(make([]byte, 0, 1+len(account)), account))
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return persistence.Snapshot{}, false, nil
	case err != nil:
		return persistence.Snapshot{}, false, fmt.Errorf("persistence: account %q: read snapshot: %w", account, err)
	}
	var derr error
	if err := item.Value(func(v []byte) error {
		snap, derr = codec.DecodeSnapshot(v)
		return nil
	}); err != nil {
		return persistence.Snapshot{}, false, fmt.Errorf("persistence: account %q: read snapshot: %w", account, err)
	}
	if derr != nil {
		return persistence.Snapshot{}, false, fmt.Errorf("persistence: account %q: snapshot: %w", account, derr)
	}
	return snap, true, nil
}

// wallSeconds is the wall-clock Unix second, the clock Badger's TTL uses.
func wallSeconds() uint64 { return uint64(max(time.Now().Unix(), 0)) }

// loadWAL reads the whole write-ahead log into the index, dropping the
// events that snapshots cover or that expired, and deletes the records
// left with none.
func (s *Store) loadWAL() error {
	now := wallSeconds()
	covered := make(map[string]uint64)
	var dead []uint64
	records, events := 0, 0
	err := s.view(func(txn *badger.Txn) error {
		prefix := []byte{walPrefix}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.ValidForPrefix(prefix); it.Next() {
			item := it.Item()
			seq, ok := walKeySeq(item.Key())
			if !ok {
				return fmt.Errorf("persistence: WAL key %x: %w", item.Key(), codec.Corrupt("malformed key"))
			}
			var entries []codec.WALEntry
			var got uint64
			var derr error
			if err := item.Value(func(v []byte) error {
				got, entries, derr = codec.DecodeWALRecord(v)
				return nil
			}); err != nil {
				return fmt.Errorf("persistence: read %s: %w", walRecordName(seq), err)
			}
			if derr == nil && got != seq {
				derr = codec.Corrupt(fmt.Sprintf("holds record %d", got))
			}
			if derr != nil {
				return fmt.Errorf("persistence: %s: %w", walRecordName(seq), derr)
			}
			records++
			s.wal.next = max(s.wal.next, seq+1)
			live := 0
			for _, e := range entries {
				if expiredAt(e.ExpiresAt, now) {
					continue
				}
				upTo, ok := covered[e.Account]
				if !ok {
					snap, _, err := s.readSnapshot(txn, e.Account)
					if err != nil {
						// Keep every event: Load will report the account
						// as corrupt, and nothing is dropped meanwhile.
						s.log.Error().Err(err).Str("account", e.Account).Msg("snapshot unreadable while reading the WAL")
					}
					upTo = snap.Seq
					covered[e.Account] = upTo
				}
				for _, ev := range e.Events {
					if ev.Seq > upTo {
						s.wal.add(e.Account, tailEvent{Event: ev, rec: seq, exp: tailExpiry(e.ExpiresAt)})
						live++
					}
				}
			}
			events += live
			if live > 0 {
				s.wal.live[seq] = live
			} else {
				dead = append(dead, seq)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.deleteRecords(dead, "spent"); errors.Is(err, persistence.ErrNoSpace) {
		// The records are out of the index; a later open deletes them.
		s.log.Warn().Err(err).Int("records", len(dead)).Msg("spent WAL records left on disk: no space to delete them")
	} else if err != nil {
		return err
	}
	if records > 0 {
		s.log.Info().Int("records", records).Int("events", events).Int("accounts", len(s.wal.tails)).
			Int("spent", len(dead)).Msg("write-ahead log read")
	}
	return nil
}

// Accounts calls fn with each account that has a snapshot or journal
// events, once, in byte order of the account IDs. It reads snapshot keys
// only, so a scan runs in constant memory beyond the accounts with journal
// events. It does not see writes made after it started. fn may call Load
// and Write, but must not call Close (Close waits for the scan to end).
// Malformed keys are logged and skipped.
func (s *Store) Accounts(fn func(account string) error) error {
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	defer s.life.Exit()

	s.walMu.RLock()
	tail := s.wal.accounts(wallSeconds())
	s.walMu.RUnlock()
	return s.view(func(txn *badger.Txn) error {
		prefix := []byte{snapshotPrefix}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		it.Rewind()
		for {
			var snapAcct []byte
			snapOK := it.ValidForPrefix(prefix)
			if snapOK {
				snapAcct = it.Item().Key()[1:]
				if !persistence.ValidAccount(snapAcct) {
					s.log.Warn().Hex("key", it.Item().Key()).Msg("skipping malformed snapshot key")
					it.Next()
					continue
				}
			}
			tailOK := len(tail) > 0
			var account string
			switch {
			case !snapOK && !tailOK:
				return nil
			case snapOK && (!tailOK || string(snapAcct) <= tail[0]):
				account = string(snapAcct)
				if tailOK && account == tail[0] {
					tail = tail[1:]
				}
				it.Next()
			default:
				account, tail = tail[0], tail[1:]
			}
			if err := fn(account); err != nil {
				return err
			}
		}
	})
}

// Stale implements Checkpointer: it calls fn for each account with events
// in the WAL records older than the newest keep live ones. It first drops
// the events that have expired from the index and deletes the records they
// leave empty.
func (s *Store) Stale(keep int, fn func(account string) error) error {
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	defer s.life.Exit()
	if err := s.purgeExpired(); err != nil {
		// The records stay on disk; opening the store drops them.
		s.log.Error().Err(err).Msg("deleting expired WAL records failed")
	}
	s.walMu.RLock()
	list := s.wal.stale(keep)
	s.walMu.RUnlock()
	for _, a := range list {
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

// purgeExpired drops expired events from the WAL index and deletes the
// records left without a live event.
func (s *Store) purgeExpired() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.walMu.Lock()
	dead := s.wal.purge(wallSeconds())
	s.walMu.Unlock()
	return s.deleteRecords(dead, "expired")
}

// deleteRecords deletes WAL records left without a live event (what says
// why, for errors), in one write batch. Below the free-space reserve it
// deletes nothing and fails with an error wrapping ErrNoSpace.
func (s *Store) deleteRecords(recs []uint64, what string) error {
	if len(recs) == 0 {
		return nil
	}
	if err := s.checkSpace(); err != nil {
		return err
	}
	ts := s.nextVersion()
	wb := s.db.NewWriteBatchAt(ts)
	defer wb.Cancel()
	for _, rec := range recs {
		if err := wb.Delete(appendWALKey(nil, rec)); err != nil {
			return fmt.Errorf("persistence: delete %s: %w", walRecordName(rec), err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("persistence: delete %s WAL records: %w", what, err)
	}
	s.committed(ts)
	return nil
}

// nextVersion returns the commit timestamp of the next write transaction.
// It is called under writeMu, or while opening, and a timestamp is never
// given out twice, even when its transaction fails.
func (s *Store) nextVersion() uint64 {
	s.version++
	return s.version
}

// committed records that the transaction at ts committed: reads begun
// from now on see it. It tells Badger that versions superseded at or
// below the oldest read in progress (or at ts, when none is) may be
// dropped by compaction, as an unmanaged database does: the store reads
// nothing older.
func (s *Store) committed(ts uint64) {
	s.readMu.Lock()
	s.readTs = max(s.readTs, ts)
	discard := s.readTs
	for r := range s.readers {
		discard = min(discard, r)
	}
	s.readMu.Unlock()
	s.db.SetDiscardTs(discard)
}

// view runs fn in a read-only transaction at the version of the last
// committed write.
func (s *Store) view(fn func(txn *badger.Txn) error) error {
	s.readMu.Lock()
	ts := s.readTs
	s.readers[ts]++
	s.readMu.Unlock()
	defer func() {
		s.readMu.Lock()
		if s.readers[ts]--; s.readers[ts] == 0 {
			delete(s.readers, ts)
		}
		s.readMu.Unlock()
	}()
	if s.db.IsClosed() {
		return badger.ErrDBClosed
	}
	txn := s.db.NewTransactionAt(ts, false)
	defer txn.Discard()
	return fn(txn)
}

// Records returns how many WAL records are live (not yet deleted).
func (s *Store) Records() int {
	s.walMu.RLock()
	defer s.walMu.RUnlock()
	return len(s.wal.live)
}

// Journaled calls fn with each account that has journal events not folded
// into a snapshot, in byte order, from a list taken when it starts. It
// reads nothing from disk.
func (s *Store) Journaled(fn func(account string) error) error {
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	defer s.life.Exit()
	s.walMu.RLock()
	list := s.wal.accounts(wallSeconds())
	s.walMu.RUnlock()
	for _, a := range list {
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

// HighWater returns the largest high-water mark written (0 if none).
func (s *Store) HighWater() (int64, error) {
	if !s.life.Enter() {
		return 0, persistence.ErrClosed
	}
	defer s.life.Exit()
	return s.highWater.Load(), nil
}

// Anchor returns the stored clock anchor (zero if none).
func (s *Store) Anchor() (persistence.ClockAnchor, error) {
	if !s.life.Enter() {
		return persistence.ClockAnchor{}, persistence.ErrClosed
	}
	defer s.life.Exit()
	var a persistence.ClockAnchor
	err := s.view(func(txn *badger.Txn) error {
		item, err := txn.Get(anchorKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("persistence: read clock anchor: %w", err)
		}
		var derr error
		if err := item.Value(func(v []byte) error {
			a, derr = codec.DecodeAnchor(v)
			return nil
		}); err != nil {
			return fmt.Errorf("persistence: read clock anchor: %w", err)
		}
		if derr != nil {
			return fmt.Errorf("persistence: clock anchor: %w", derr)
		}
		return nil
	})
	return a, err
}

// SetAnchor stores a in a transaction of its own, durable when the store
// is.
func (s *Store) SetAnchor(a persistence.ClockAnchor) error {
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	defer s.life.Exit()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.checkSpace(); err != nil {
		return err
	}
	txn := s.db.NewTransactionAt(math.MaxUint64, true)
	defer txn.Discard()
	if err := txn.SetEntry(badger.NewEntry(anchorKey, codec.AppendAnchor(nil, a))); err != nil {
		return wrapTxn("write clock anchor", err)
	}
	s.walMu.Lock()
	defer s.walMu.Unlock()
	ts := s.nextVersion()
	if err := txn.CommitAt(ts, nil); err != nil {
		return fmt.Errorf("persistence: write clock anchor: commit: %w", err)
	}
	s.committed(ts)
	return nil
}

// Close waits for the calls in progress to return, then closes the Badger
// database. Later calls, including Close, return ErrClosed.
func (s *Store) Close() error {
	if !s.life.Close() {
		return persistence.ErrClosed
	}
	if s.hold != nil {
		// No Write is in progress or can start: nothing sends on holdWake.
		close(s.holdWake)
		<-s.holdDone
		s.hold.release()
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("persistence: close badger: %w", err)
	}
	return nil
}
