package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/internal/app"
	"github.com/pinbot/pinbot/internal/control"
	"github.com/pinbot/pinbot/persistence"
)

// shutdownTimeout bounds how long closing the engine may take: passivating
// every account actor writes its snapshot.
const shutdownTimeout = 15 * time.Second

// openStore opens (creating if needed) the durable engine store in dir;
// when another process holds it, the error wraps app.ErrDataDirInUse and
// names dir.
func openStore(dir string, log zerolog.Logger) (app.EngineStore, error) {
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

// errNoEngineStore means the data directory holds no engine store: no
// account was ever stored there.
var errNoEngineStore = errors.New("no engine store")

// withListing opens the stores of the data directory dir for a listing
// no running pinbot serves, calls f with them, and closes them. The
// engine runs under the limit and window the store was last run under
// (see storedRule), replays nothing on its own and runs no queued pin;
// clock, when not nil, is its clock. The token store is opened when it
// exists and its key can be read; otherwise the source's NoNames says
// why, when there is something to say. dir must exist: a mistyped
// directory must not become an empty store. It fails with
// errNoEngineStore, without calling f, when dir holds no engine store,
// and names the control socket when another process holds the stores.
func withListing(dir layout, keyFile *setting, clock actors.Clock, log zerolog.Logger, f func(control.Source) error) (err error) {
	if err := dir.checkExisting(); err != nil {
		return err
	}
	if _, err := os.Stat(dir.engine()); errors.Is(err, fs.ErrNotExist) {
		return errNoEngineStore
	}
	store, err := openStore(dir.engine(), log)
	if errors.Is(err, app.ErrDataDirInUse) {
		return fmt.Errorf("%w, and it answers on no control socket (%s): pinbot demo, or a pinbot whose socket could not be made? stop it, then try again",
			app.ErrDataDirInUse, dir.control())
	}
	if err != nil {
		return err
	}
	cfg := actors.DefaultConfig()
	cfg.Recover = false
	cfg.Clock = clock
	storedRule(store, &cfg)
	eng, err := actors.New(cfg, store, log)
	if err != nil {
		if cerr := store.Close(); cerr != nil {
			log.Error().Err(cerr).Msg("closing the store after a failed start")
		}
		return fmt.Errorf("starting the engine: %w", err)
	}
	defer func() {
		if cerr := shutdown(eng, store); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	src := control.Source{Engine: eng, Store: store, Log: log}
	ls, why := openNames(dir, keyFile, log)
	if ls != nil {
		defer func() {
			if err := ls.Close(); err != nil {
				log.Warn().Err(err).Msg("closing the token store")
			}
		}()
		src.Links = ls
	}
	src.NoNames = why
	return f(src)
}

// openNames opens the token store of the data directory, which names the
// accounts, with the key the setting names, or else with the sandbox's
// key when there is one. Without a token store it returns nil and no
// reason; without a key, or when the store cannot be opened, nil and
// why.
func openNames(dir layout, keyFile *setting, log zerolog.Logger) (app.TokenStore, string) {
	if _, err := os.Stat(dir.links()); err != nil {
		log.Debug().Err(err).Msg("no token store: listing account ids only")
		return nil, ""
	}
	var key []byte
	var err error
	switch {
	case keyFile.value != "":
		key, err = readKeyFile(keyFile)
	default:
		sk := setting{opt: &keyFileOption, value: dir.sandboxKey(), from: "the sandbox's key"}
		if _, serr := os.Stat(sk.value); serr != nil {
			return nil, fmt.Sprintf("no key for the token store (set %s)", keyFileOption.env)
		}
		key, err = readKeyFile(&sk)
	}
	if err != nil {
		return nil, err.Error()
	}
	ls, err := app.OpenTokenStore(dir.links(), key, log)
	if err != nil {
		return nil, fmt.Sprintf("the token store cannot be opened: %v", err)
	}
	return ls, ""
}

// storedRule sets cfg's limit, window and lease to those the store was
// last run under, when it keeps them; an unreadable value is left for
// actors.New to report. A listing runs under them: the settings of the
// bot are not those of the command, and a listing must not count as a
// change of the rule.
func storedRule(store persistence.RuleKeeper, cfg *actors.Config) {
	r, err := store.Rules(context.Background())
	if err != nil || r.Current.Limit == 0 {
		return
	}
	cfg.Limit = r.Current.Limit
	cfg.Window = time.Duration(r.Current.Window) * time.Millisecond
	if r.Lease > 0 {
		cfg.Lease = time.Duration(r.Lease) * time.Millisecond
	}
}
