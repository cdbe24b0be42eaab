package badgerstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"

	"github.com/dgraph-io/badger/v4"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

// maxPendingLoads bounds the batches DB.Load has in flight while Restore
// loads a backup.
const maxPendingLoads = 16

// Backup writes every key of the store to w, in the format of Badger's
// DB.Backup (length-prefixed protobuf lists of keys, values, versions and
// expiries), which Restore loads. Writes go on meanwhile. The backup is
// read at one version, taken when it begins: it holds every Write that
// returned before Backup was called, each whole, and nothing written
// after it began. It is therefore the state a crash at that instant would
// have left, which Open recovers from. Backup returns the version it read
// at.
//
// Journal events not yet folded into a snapshot live in the journal's
// log, not in Badger: Backup first stores them in Badger at its version,
// as WAL records of the older format, which opening the restored store
// imports into its log (see importLegacy), and deletes them afterwards.
func (s *Store) Backup(w io.Writer) (uint64, error) {
	if !s.life.Enter() {
		return 0, persistence.ErrClosed
	}
	defer s.life.Exit()
	ts, keys, err := s.exportEvents()
	if err != nil {
		return 0, fmt.Errorf("badgerstore: backup: %w", err)
	}
	defer s.readDone(ts)
	if ts != 0 {
		stream := s.db.NewStreamAt(ts)
		stream.LogPrefix = "badgerstore: backup"
		_, err = stream.Backup(w, 0)
	}
	if len(keys) > 0 {
		if derr := s.dropExport(keys); derr != nil {
			s.log.Warn().Err(derr).Msg("backup: exported WAL records left in Badger; the next open imports them")
		}
	}
	if err != nil {
		return 0, fmt.Errorf("badgerstore: backup: %w", err)
	}
	return ts, nil
}

// exportEvents stores the index's events in Badger as WAL records, at a
// version of their own made visible (when there are any), and returns the
// version Backup reads at, registered as a read in progress (readDone
// ends it), with the keys it wrote.
func (s *Store) exportEvents() (uint64, [][]byte, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.walMu.Lock()
	defer s.walMu.Unlock()
	s.settleLocked()
	var keys [][]byte
	var recs [][]byte
	var entries []codec.WALEntry
	size := 0
	flush := func() {
		if len(entries) > 0 {
			seq := uint64(len(recs) + 1)
			keys = append(keys, appendWALKey(nil, seq))
			recs = append(recs, codec.AppendWALRecord(nil, seq, entries))
			entries, size = nil, 0
		}
	}
	for _, acct := range slices.Sorted(maps.Keys(s.wal.tails)) {
		var evs []persistence.Event
		var exp uint32
		for _, te := range s.wal.tails[acct].all() {
			if len(evs) > 0 && (te.exp != exp || size+codec.WALEntryLen(acct, len(evs)+1) > s.walChunk) {
				entries = append(entries, codec.WALEntry{Account: acct, ExpiresAt: uint64(exp), Events: evs})
				size += codec.WALEntryLen(acct, len(evs))
				evs = nil
				if size > s.walChunk/2 {
					flush()
				}
			}
			evs, exp = append(evs, te.Event), te.exp
		}
		if len(evs) > 0 {
			entries = append(entries, codec.WALEntry{Account: acct, ExpiresAt: uint64(exp), Events: evs})
			size += codec.WALEntryLen(acct, len(evs))
		}
		if size > s.walChunk/2 {
			flush()
		}
	}
	flush()
	if len(keys) > 0 {
		ts := s.nextVersion()
		wb := s.db.NewWriteBatchAt(ts)
		defer wb.Cancel()
		for i := range keys {
			if err := wb.Set(keys[i], recs[i]); err != nil {
				return 0, nil, err
			}
		}
		if err := wb.Flush(); err != nil {
			return 0, nil, err
		}
		s.committed(ts)
	}
	s.readMu.Lock()
	ts := s.readTs
	s.readers[ts]++
	s.readMu.Unlock()
	return ts, keys, nil
}

// readDone ends a read in progress at ts.
func (s *Store) readDone(ts uint64) {
	s.readMu.Lock()
	if s.readers[ts]--; s.readers[ts] == 0 {
		delete(s.readers, ts)
	}
	s.readMu.Unlock()
}

// dropExport deletes the WAL records exportEvents wrote.
func (s *Store) dropExport(keys [][]byte) error {
	return s.writeVisible(func(wb *badger.WriteBatch) error {
		for _, k := range keys {
			if err := wb.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
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
		return errors.New("badgerstore: restore: want a directory")
	}
	switch entries, err := os.ReadDir(dir); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("badgerstore: restore: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("badgerstore: restore: %s is not empty", dir)
	}
	db, err := badger.OpenManaged(opts.badger(dir, log))
	if err != nil {
		return fmt.Errorf("badgerstore: restore: open badger %q: %w", dir, err)
	}
	if err := db.Load(r, maxPendingLoads); err != nil {
		return errors.Join(fmt.Errorf("badgerstore: restore: load: %w", err), db.Close())
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("badgerstore: restore: close badger: %w", err)
	}
	return nil
}
