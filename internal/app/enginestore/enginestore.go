// Package enginestore opens the engine's store: the one place outside
// persistence/badgerstore that names it. The program (package app, and
// through it the commands that open a data directory without the bot:
// listings, the engine demo, backups and restores) and the benchmark and
// soak harness (cmd/pinbench) open it here, and see it as a Store.
package enginestore

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/internal/backup"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/badgerstore"
)

// Store is the engine's store: an engine runs on it, the listings read
// the rules it keeps, and a backup copies it.
type Store interface {
	persistence.Store
	persistence.RuleKeeper
	backup.EngineStore
}

var _ Store = (*badgerstore.Store)(nil)

// ErrDataDirInUse means another process holds the store.
var ErrDataDirInUse = errors.New("data directory is in use by another pinbot process")

// Options tune the store for the benchmark and soak harness; the program
// opens it with the zero Options.
type Options struct {
	// Relaxed acknowledges writes without waiting for the disk (no
	// fsync): fast, and not crash-safe.
	Relaxed bool
	// MemTableSize and SegmentSize, when not zero, replace the sizes of
	// the store's memtable and of its journal's log segments (small ones
	// fill a small disk quickly).
	MemTableSize, SegmentSize int64
}

func (o Options) badger() badgerstore.Options {
	return badgerstore.Options{Durable: !o.Relaxed, MemTableSize: o.MemTableSize, JournalSegmentSize: o.SegmentSize}
}

// Open opens (creating if needed) the store in dir: durable unless
// o.Relaxed. When another process holds the directory, the error wraps
// ErrDataDirInUse.
func Open(dir string, o Options, log zerolog.Logger) (Store, error) {
	store, err := badgerstore.Open(dir, o.badger(), log)
	if err == nil {
		return store, nil
	}
	if isLockError(err) {
		log.Debug().Err(err).Str("dir", dir).Msg("store directory locked")
		return nil, fmt.Errorf("%w (%s); stop it, then try again", ErrDataDirInUse, dir)
	}
	return nil, fmt.Errorf("opening the store in %s: %w", dir, err)
}

// isLockError reports whether err is Badger's failure to take the lock of
// its directory. Badger wraps the lock error as text only (neither the
// flock errno nor a sentinel survives), so its message is all there is to
// recognize: on Unix "Cannot acquire directory lock on ...", on Windows
// "Cannot create lock file ...", both followed by "Another process is using
// this Badger database".
func isLockError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Another process is using this Badger database") ||
		strings.Contains(msg, "Cannot acquire directory lock")
}

// Restore writes the store a backup holds (r) into the empty dir, as Open
// with the zero Options opens it.
func Restore(dir string, r io.Reader, log zerolog.Logger) error {
	return badgerstore.Restore(dir, r, Options{}.badger(), log)
}
