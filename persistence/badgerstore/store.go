package badgerstore

import (
	"crypto/cipher"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/internal/badgerutil"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/seglog"
)

// Store is the persistence.Store kept in a Badger database.
//
// Keys are laid out as keys.go describes and values are encoded by
// persistence/codec. Every key written for an account expires at the
// account's ExpiresAt, rounded up to the second, by Badger's TTL; expired
// keys are invisible at once and removed by compaction. Badger measures
// TTLs against the wall clock, not the engine clock: the engine leaves a
// margin in ExpiresAt for the difference.
//
// Store is safe for simultaneous use by multiple goroutines; Writes are
// applied one at a time.
//
// The database is opened in Badger's managed mode: the store gives each
// transaction its commit timestamp itself, from a counter kept under
// writeMu, and reads at the last one made visible (see view). Badger's own
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
	// of the last transaction made visible, so a read sees every
	// transaction whole or not at all, and nothing written after it
	// began. readers counts the reads in progress per timestamp: Badger
	// may drop versions up to the oldest of them only (see committed).
	readMu  sync.Mutex
	readTs  uint64
	readers map[uint64]int

	// walMu guards wal and pending. A committed transaction becomes
	// visible to reads (readTs moves to it) in the same critical section
	// that puts its update in the index (see settle), and Load holds walMu
	// shared while it reads both, so Load never pairs a snapshot with
	// events of another moment.
	walMu    sync.RWMutex
	wal      walIndex
	walChunk int // largest WAL record, in bytes
	// pending, when not nil, is the index update of the last transaction
	// Write committed, at version pendingTs, not yet applied.
	pending   *walUpdate
	pendingTs uint64

	dir     string
	minFree int64 // see Options.MinFreeBytes; < 0: no check

	// upd, arena, ops, rec, walBuf and sealed are reused by every Write
	// (under writeMu).
	upd    walUpdate
	arena  []byte
	ops    []logOp
	rec    []byte
	walBuf []byte
	sealed []byte

	// journal is the log every Write goes to first (see log.go); nil
	// for an in-memory store. aead encrypts its records when the store is
	// encrypted.
	journal *seglog.Log
	aead    cipher.AEAD
	// applied is the last log record applied to Badger, and broken, once
	// Badger failed to apply one, the error of every later Write (both
	// under writeMu).
	applied uint64
	broken  error
	// ckptMu serializes checkpoints; ckpt is the applied mark stored by
	// the last one (under ckptMu). Write wakes ckptWake every ckptEvery
	// bytes logged (counted in sinceCkpt, under writeMu); the goroutine
	// that closes ckptDone when it exits checkpoints.
	ckptMu    sync.Mutex
	ckpt      uint64
	ckptWake  chan struct{}
	ckptDone  chan struct{}
	ckptEvery int64
	sinceCkpt int64
	// testApply, when set by a test, runs before Badger applies a logged
	// batch; its error stands for Badger's.
	testApply func() error

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

var (
	_ persistence.Store = (*Store)(nil)
	// The optional methods its users find by a type assertion: the
	// journal's (see Settle) and the engine's checkpoints' (see Stale).
	_ interface{ Settle() } = (*Store)(nil)
	_ interface {
		Stale(int, func(account string) error) error
	} = (*Store)(nil)
)
