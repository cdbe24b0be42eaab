package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/internal/app"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/badgerstore"
	"github.com/rs/zerolog"
)

// shutdownTimeout bounds how long closing the engine may take: passivating
// every account actor writes its snapshot.
const shutdownTimeout = 15 * time.Second

// openStore opens (creating if needed) the durable Badger store in dir;
// when another process holds it, the error wraps app.ErrDataDirInUse and
// names dir.
func openStore(dir string, log zerolog.Logger) (*badgerstore.Store, error) {
	return app.OpenStore(dir, log)
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
