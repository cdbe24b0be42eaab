package badgerstore

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/internal/badgerutil"
	"github.com/pinbot/pinbot/persistence"
)

// ErrEncryptionKey is returned by Open when the store on disk was
// written with another encryption key, or encrypted while no key was given,
// or not encrypted while a key was given.
var ErrEncryptionKey = errors.New("badgerstore: encryption key does not match the store")

// Open opens (creating if needed) the Badger store in directory dir.
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
		return nil, errors.New("badgerstore: open badger: empty directory")
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
		if err := badgerutil.RemoveEmptyLogs(dir, log); err != nil {
			return nil, err
		}
	}
	db, err := badger.OpenManaged(bopts)
	if errors.Is(err, badger.ErrEncryptionKeyMismatch) {
		return nil, fmt.Errorf("%w (opening %q): %w", ErrEncryptionKey, dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("badgerstore: open badger %q: %w", dir, err)
	}
	s := &Store{db: db, log: log.With().Str("component", "persistence").Logger(), wal: newWALIndex(),
		walChunk: int(min(walChunkBytes, bopts.ValueThreshold/2)),
		dir:      dir, minFree: minFree, version: db.MaxVersion(), readers: make(map[uint64]int)}
	s.readTs = s.version
	s.aead, err = newAEAD(opts.EncryptionKey)
	if err == nil && !opts.InMemory {
		err = s.openJournal(dir, opts)
	}
	if err == nil {
		err = s.importLegacy()
	}
	var hw int64
	if err == nil {
		hw, err = s.loadHighWater()
	}
	if err != nil {
		if s.journal != nil {
			if cerr := s.journal.Close(); cerr != nil {
				s.log.Error().Err(cerr).Msg("close journal after failed open")
			}
		}
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
	if s.journal != nil {
		// Segments go whole, so a checkpoint more often than once a
		// segment frees nothing sooner; it only replays less at the next
		// open. Each one syncs Badger, and the log's fdatasyncs queue
		// behind that on the same disk (measured: the history of
		// docs/benchmarks.md).
		s.ckptEvery = max(int64(segmentSize(opts)), 1)
		s.ckptWake = make(chan struct{}, 1)
		s.ckptDone = make(chan struct{})
		go s.runCheckpoints()
	}
	return s, nil
}

// Close waits for the calls in progress to return, checkpoints the
// journal (see Checkpoint), then closes its log and the Badger database. Later calls, including Close, return ErrClosed.
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
	var errs []error
	if s.journal != nil {
		close(s.ckptWake)
		<-s.ckptDone
		if err := s.checkpoint(); err != nil {
			errs = append(errs, err)
		}
		if err := s.journal.Close(); err != nil {
			errs = append(errs, fmt.Errorf("badgerstore: close journal: %w", err))
		}
	}
	if err := s.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("badgerstore: close badger: %w", err))
	}
	return errors.Join(errs...)
}
