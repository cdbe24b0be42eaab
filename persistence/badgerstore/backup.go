package badgerstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/dgraph-io/badger/v4"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
)

// maxPendingLoads bounds the batches DB.Load has in flight while Restore
// loads a backup.
const maxPendingLoads = 16

// Backup writes every key of the store to w, in the format of Badger's
// DB.Backup (length-prefixed protobuf lists of keys, values, versions and
// expiries), which Restore loads. Writes go on meanwhile. The backup is
// read at one version, that of the last write made visible when it
// begins: it holds every Write that returned before Backup was called,
// each whole, and nothing written after it began. It is therefore the
// state a crash at that instant would have left, which Open recovers
// from. Backup returns the version it read at.
func (s *Store) Backup(w io.Writer) (uint64, error) {
	if !s.life.Enter() {
		return 0, persistence.ErrClosed
	}
	defer s.life.Exit()
	// Every Write that returned is settled: reads run at its version.
	s.rlockIndex()
	s.walMu.RUnlock()
	var version uint64
	err := s.readAt(func(ts uint64) error {
		version = ts
		if ts == 0 {
			return nil // nothing was ever written: an empty backup
		}
		stream := s.db.NewStreamAt(ts)
		stream.LogPrefix = "persistence: backup"
		_, err := stream.Backup(w, 0)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("persistence: backup: %w", err)
	}
	return version, nil
}

// readAt runs fn with the version of the last visible write, registered
// as a read in progress for as long as fn runs, as view does: Badger
// keeps every version fn may read.
func (s *Store) readAt(fn func(ts uint64) error) error {
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
	return fn(ts)
}

// Restore loads a backup that Backup wrote, read from r, into a new store
// in dir, which must not exist or be empty, and closes it; Open opens it
// then, reading its write-ahead log as after a crash. Keys keep their
// versions and expiries: a key that expired since the backup stays
// invisible. opts are those of the stores that will open dir (Durable
// makes the load reach the disk before Restore returns).
func Restore(dir string, r io.Reader, opts Options, log zerolog.Logger) error {
	if err := opts.validate(); err != nil {
		return err
	}
	if opts.InMemory || dir == "" {
		return errors.New("persistence: restore: want a directory")
	}
	switch entries, err := os.ReadDir(dir); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("persistence: restore: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("persistence: restore: %s is not empty", dir)
	}
	db, err := badger.OpenManaged(opts.badger(dir, log))
	if err != nil {
		return fmt.Errorf("persistence: restore: open badger %q: %w", dir, err)
	}
	if err := db.Load(r, maxPendingLoads); err != nil {
		return errors.Join(fmt.Errorf("persistence: restore: load: %w", err), db.Close())
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("persistence: restore: close badger: %w", err)
	}
	return nil
}
