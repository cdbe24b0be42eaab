package backup

import (
	"errors"
	"fmt"
	"io"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/persistence/badgerstore"
)

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
	// restored store: their window and lease set the hold's length (see
	// actors.AfterRestore).
	Engine actors.Config
	Log    zerolog.Logger
}

// Result is what Restore did.
type Result struct {
	Info Info
	// Restored is what actors.AfterRestore did: the hold, the jobs.
	Restored actors.Restored
}

// Restore loads the backup read from r into t's directories, then readies
// the engine's store for its next run with actors.AfterRestore. Check the
// file with Verify first: Restore stops at the first fault, leaving what
// it wrote.
func Restore(r io.Reader, t Target) (Result, error) {
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
			err = badgerstore.Restore(t.EngineDir, sec, badgerstore.Options{Durable: true}, t.Log)
		case Links:
			if err = sec.Unlock(t.Key); err == nil {
				err = links.Restore(t.LinksDir, sec, links.Options{EncryptionKey: t.Key}, t.Log)
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
	store, err := badgerstore.Open(t.EngineDir, badgerstore.Options{Durable: true}, t.Log)
	if err != nil {
		return res, fmt.Errorf("backup: opening the restored engine store: %w", err)
	}
	res.Restored, err = actors.AfterRestore(t.Engine, store, t.Log)
	if cerr := store.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("backup: closing the restored engine store: %w", cerr))
	}
	return res, err
}
