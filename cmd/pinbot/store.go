package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/badgerstore"
	"github.com/rs/zerolog"
)

// shutdownTimeout bounds how long closing the engine may take: passivating
// every account actor writes its snapshot.
const shutdownTimeout = 15 * time.Second

// errDataDirInUse is returned when another process holds the store's
// directory lock.
var errDataDirInUse = errors.New("data directory is in use by another pinbot process")

// openStore opens (creating if needed) the durable Badger store in dir.
// When another process holds the directory, the error wraps
// errDataDirInUse.
func openStore(dir string, log zerolog.Logger) (*badgerstore.Store, error) {
	store, err := badgerstore.Open(dir, badgerstore.Options{Durable: true}, log)
	if err == nil {
		return store, nil
	}
	if isLockError(err) {
		log.Debug().Err(err).Str("dir", dir).Msg("store directory locked")
		return nil, fmt.Errorf("%w (%s); stop it, then try again", errDataDirInUse, dir)
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

// shutdown closes eng, waiting at most shutdownTimeout, and then store,
// which eng uses: every account actor writes its state before the store
// goes. It returns the errors of both.
func shutdown(eng *actors.Engine, store persistence.Store) error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	var errs []error
	if err := eng.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("closing the engine: %w", err))
	}
	if err := store.Close(); err != nil {
		errs = append(errs, fmt.Errorf("closing the store: %w", err))
	}
	return errors.Join(errs...)
}
