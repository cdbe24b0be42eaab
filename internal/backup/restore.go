package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/persistence"
)

// Loaders write the stores of a backup into new directories and open
// the restored engine store. Package internal/app has pinbot's
// (app.BackupLoaders).
type Loaders struct {
	// Engine loads the engine store's section, read from r, into a new
	// store in dir, which must not exist or be empty.
	Engine func(dir string, r io.Reader, log zerolog.Logger) error
	// Links loads the token store's section, read from r once decrypted,
	// into a new token store in dir encrypted at rest with key.
	Links func(dir string, r io.Reader, key []byte, log zerolog.Logger) error
	// OpenEngine opens the engine store Engine wrote, durable.
	OpenEngine func(dir string, log zerolog.Logger) (persistence.Store, error)
}

// Target is where Restore writes.
type Target struct {
	// EngineDir and LinksDir are the directories of the restored stores;
	// each must not exist or be empty. LinksDir is written only when the
	// backup holds a token store.
	EngineDir, LinksDir string
	// Key is the token store's key: the key it had when the backup was
	// taken, which decrypts its copy, and with which the restored store
	// is encrypted at rest. Required when the backup holds a token store.
	Key []byte
	// Engine is the configuration of the engines that will run on the
	// restored store: its window and lease set the hold's length, or the
	// rules the backup's store keeps in force do, whichever is longer (see
	// actors.AfterRestore): a window given never shortens the hold the
	// backup's own rules need.
	Engine actors.Config
	// BackupRule says that the window the restored store will run under
	// is not known: the hold then follows the backup's own rules alone,
	// Engine's limit, window and lease replaced by those of the rule the
	// backup's store ran under (when it names one).
	BackupRule bool
	// Loaders write and open the stores. Required.
	Loaders Loaders
	Log     zerolog.Logger
}

// Result is what Restore did.
type Result struct {
	Info Info
	// Window is the window of the engines the hold was sized for along
	// with the backup's rules: Engine's, or with BackupRule the window
	// the backup's store ran under.
	Window time.Duration
	// Restored is what actors.AfterRestore did: the hold, the jobs.
	Restored actors.Restored
}

// Restore loads the backup read from r into t's directories, then readies
// the engine's store for its next run with actors.AfterRestore. Check the
// file with Verify first: Restore stops at the first fault, leaving what
// it wrote.
func Restore(r io.Reader, t Target) (Result, error) {
	if t.Loaders.Engine == nil || t.Loaders.Links == nil || t.Loaders.OpenEngine == nil {
		return Result{}, errors.New("backup: Target.Loaders is incomplete")
	}
	br, err := NewReader(r)
	if err != nil {
		return Result{}, err
	}
	for {
		sec, err := br.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Result{}, err
		}
		switch sec.Kind {
		case Engine:
			err = t.Loaders.Engine(t.EngineDir, sec, t.Log)
		case Links:
			if err = sec.Unlock(t.Key); err == nil {
				err = t.Loaders.Links(t.LinksDir, sec, t.Key, t.Log)
			}
		}
		if err == nil {
			err = sec.Skip() // the load read to the end: this checks it
		}
		if err != nil {
			return Result{}, fmt.Errorf("backup: restoring the %v: %w", sec.Kind, err)
		}
	}
	res := Result{Info: br.Info()}
	if !res.Info.Has(Engine) {
		return res, fmt.Errorf("%w: the backup holds no engine store", ErrCorrupt)
	}
	store, err := t.Loaders.OpenEngine(t.EngineDir, t.Log)
	if err != nil {
		return res, fmt.Errorf("backup: opening the restored engine store: %w", err)
	}
	cfg := t.Engine
	if t.BackupRule {
		cfg, err = backupRule(cfg, store)
	}
	if err == nil {
		res.Window = cfg.Window
		res.Restored, err = actors.AfterRestore(context.Background(), cfg, store, t.Log)
	}
	if cerr := store.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("backup: closing the restored engine store: %w", cerr))
	}
	return res, err
}

// backupRule returns cfg with the limit, window and lease of the rule the
// restored store ran under when the backup was taken. A store that names
// none (empty, or written by a pinbot that kept no rules) leaves cfg as
// it is: actors.AfterRestore holds such a store's pins by the defaults
// that pinbot ran under.
func backupRule(cfg actors.Config, store persistence.Store) (actors.Config, error) {
	rk, ok := store.(persistence.RuleKeeper)
	if !ok {
		return cfg, nil
	}
	rules, err := rk.Rules(context.Background())
	if err != nil {
		return cfg, fmt.Errorf("backup: reading the rules of the restored engine store: %w", err)
	}
	if rules.Current.Limit == 0 {
		return cfg, nil
	}
	cfg.Limit = rules.Current.Limit
	cfg.Window = time.Duration(rules.Current.Window) * time.Millisecond
	if rules.Lease > 0 {
		cfg.Lease = time.Duration(rules.Lease) * time.Millisecond
	}
	return cfg, nil
}
