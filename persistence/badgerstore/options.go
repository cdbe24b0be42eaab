package badgerstore

import (
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/internal/badgerutil"
	"github.com/pinbot/pinbot/persistence/seglog"
)

// Memory defaults of a Store. Badger's own defaults are tuned for
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
	// competes with the engine's. 16 MiB gave durable grants a shorter
	// tail latency at half load and more steady-state throughput than
	// 64 MiB, and 4 or 8 MiB did worse again (the measurements are in
	// the history of docs/benchmarks.md, "Measurements behind the
	// defaults").
	DefaultMemTableSize = 16 << 20
	// DefaultBlockCacheSize is the size of the cache of decoded (and
	// decrypted) table blocks, in bytes.
	DefaultBlockCacheSize = 16 << 20
	// DefaultIndexCacheSize is the size of the table index cache, in bytes,
	// used when the store is encrypted. Unencrypted stores keep every table
	// index in memory (about 5% of the data size) unless
	// Options.IndexCacheSize says otherwise.
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
	// records a backup stores (at most walChunkBytes) are smaller; it must stay below 15% of
	// MemTableSize and at most 1 MiB, Badger's limits; with small memtables
	// it is a tenth of their size.
	valueThreshold = 1 << 20
	// numCompactors is the number of Badger compaction goroutines (its
	// minimum useful value).
	numCompactors = 2
)

// Options configures Open. The zero value opens a non-durable,
// unencrypted store on disk with the default memory settings.
type Options struct {
	// Durable makes Write fdatasync its journal record: a Write that
	// returns nil has reached the disk and survives a crash of the
	// machine. Without
	// it, a Write survives a crash of the process but the last writes before
	// a power loss may be lost. Each fsync waits for the disk
	// (docs/benchmarks.md gives the reference machine's), so durable
	// stores need batching to be fast.
	Durable bool
	// EncryptionKey, when not empty, encrypts every file of the store at
	// rest with AES-128, AES-192 or AES-256 (16, 24 or 32 bytes). A store
	// must always be opened with the key it was created with.
	EncryptionKey []byte
	// InMemory keeps everything in memory and nothing on disk, for tests;
	// the dir argument of Open is then ignored. Durable has no effect.
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
	// JournalSegmentSize is the size each segment of the journal's log is
	// preallocated to, in bytes (0: seglog.DefaultSegmentSize, 32 MiB).
	JournalSegmentSize int64
}

func (o *Options) validate() error {
	switch len(o.EncryptionKey) {
	case 0, 16, 24, 32:
	default:
		return fmt.Errorf("badgerstore: Options.EncryptionKey is %d bytes, want 16, 24 or 32",
			len(o.EncryptionKey))
	}
	if o.MemTableSize < 0 {
		return fmt.Errorf("badgerstore: Options.MemTableSize %d is negative", o.MemTableSize)
	}
	if o.MemTableSize != 0 && o.MemTableSize < 1<<20 {
		return fmt.Errorf("badgerstore: Options.MemTableSize %d is below 1 MiB", o.MemTableSize)
	}
	if o.JournalSegmentSize < 0 {
		return fmt.Errorf("badgerstore: Options.JournalSegmentSize %d is negative", o.JournalSegmentSize)
	}
	if o.BlockCacheSize < 0 {
		return fmt.Errorf("badgerstore: Options.BlockCacheSize %d is negative", o.BlockCacheSize)
	}
	if o.IndexCacheSize < 0 {
		return fmt.Errorf("badgerstore: Options.IndexCacheSize %d is negative", o.IndexCacheSize)
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
		WithSyncWrites(false). // the journal's log makes writes durable
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

// segmentSize is the journal's segment size opts ask for.
func segmentSize(opts Options) int64 {
	if opts.JournalSegmentSize == 0 {
		return seglog.DefaultSegmentSize
	}
	return opts.JournalSegmentSize
}
