package app

import (
	"errors"
	"fmt"
	"io"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
	"github.com/pinbot/pinbot/internal/app/enginestore"
	"github.com/pinbot/pinbot/internal/backup"
	"github.com/pinbot/pinbot/persistence"
)

// This file and package enginestore are the one place outside the stores'
// own packages that names their implementations: Build and the commands
// that open a data directory without the bot (listings, the engine demo,
// backups and restores) all open the stores here, and see them through
// the interfaces below.

// EngineStore is the engine's store: an engine runs on it, the listings
// read the rules it keeps, and a backup copies it.
type EngineStore = enginestore.Store

// TokenStore is the token store: the bot and the listings read it, and
// a backup copies it.
type TokenStore interface {
	links.Store
	backup.LinksStore
}

var _ TokenStore = (*badgerlinks.Store)(nil)

// OpenStore opens (creating if needed) the durable engine store in dir.
// When another process holds the directory, the error wraps
// ErrDataDirInUse.
func OpenStore(dir string, log zerolog.Logger) (EngineStore, error) {
	return enginestore.Open(dir, enginestore.Options{}, log)
}

// OpenTokenStore opens (creating if needed) the token store in dir,
// encrypted at rest with key (16, 24 or 32 bytes). Its errors are the
// store's own: another process holding it wraps links.ErrLocked, a store
// written with another key links.ErrEncryptionKey; callers word them.
func OpenTokenStore(dir string, key []byte, log zerolog.Logger) (TokenStore, error) {
	st, err := badgerlinks.Open(dir, badgerlinks.Options{EncryptionKey: key}, log)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// openLinks opens the token store in dir with key. Another process
// holding it fails with ErrDataDirInUse; a store written with another key
// fails with an error wrapping links.ErrEncryptionKey.
func openLinks(dir string, key []byte, log zerolog.Logger) (TokenStore, error) {
	st, err := OpenTokenStore(dir, key, log)
	switch {
	case err == nil:
		return st, nil
	case errors.Is(err, links.ErrLocked):
		log.Debug().Err(err).Str("dir", dir).Msg("token store locked")
		return nil, fmt.Errorf("%w (%s); stop it, then try again: %w", ErrDataDirInUse, dir, err)
	}
	return nil, fmt.Errorf("opening the token store in %s: %w", dir, err)
}

// BackupLoaders returns how a restore writes pinbot's stores and opens
// the restored engine store: durable, as OpenStore opens it, the token
// store encrypted with the key it is given.
func BackupLoaders() backup.Loaders {
	return backup.Loaders{
		Engine: enginestore.Restore,
		Links: func(dir string, r io.Reader, key []byte, log zerolog.Logger) error {
			return badgerlinks.Restore(dir, r, badgerlinks.Options{EncryptionKey: key}, log)
		},
		OpenEngine: func(dir string, log zerolog.Logger) (persistence.Store, error) {
			return OpenStore(dir, log)
		},
	}
}
