package badgerlinks

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/links"
)

// maxPendingLoads bounds the batches DB.Load has in flight while Restore
// loads a backup.
const maxPendingLoads = 16

// Backup writes every record of the store, as of one instant, to w in
// the format of Badger's DB.Backup, which Restore loads. Writes go on
// meanwhile; the backup sees each transaction whole or not at all.
//
// The records are written in the clear, OAuth tokens included: Badger
// encrypts its files, not its backups. The caller must encrypt what it
// keeps.
func (s *Store) Backup(w io.Writer) error {
	if err := s.life.enter(); err != nil {
		return err
	}
	defer s.life.exit()
	if _, err := s.db.Backup(w, 0); err != nil {
		return fmt.Errorf("links: backup: %w", err)
	}
	return nil
}

// Restore loads a backup that Backup wrote, read from r, into a new store
// in dir, which must not exist or be empty, encrypted at rest with
// opts.EncryptionKey, and closes it.
func Restore(dir string, r io.Reader, opts Options, log zerolog.Logger) error {
	if opts.InMemory {
		return fmt.Errorf("%w: restore: want a directory", links.ErrInvalid)
	}
	switch entries, err := os.ReadDir(dir); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("links: restore: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("%w: restore: %s is not empty", links.ErrInvalid, dir)
	}
	s, err := Open(dir, opts, log)
	if err != nil {
		return err
	}
	// Nothing else uses the store: DB.Load wants no concurrent
	// transaction.
	if err := s.db.Load(r, maxPendingLoads); err != nil {
		return errors.Join(fmt.Errorf("links: restore: load: %w", err), s.Close())
	}
	return s.Close()
}
