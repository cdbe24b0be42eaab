package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// The data directory holds:
//
//	DIR/engine       the engine's store: every account's pins (Badger)
//	DIR/links        linked accounts and their OAuth tokens (Badger,
//	                 encrypted with the key file)
//	DIR/sandbox.key  the sandbox's key for DIR/links, created by the sandbox
//	DIR/sandbox.log  the sandbox's logs
//	DIR/admin.token  the sandbox's token for its dashboard at /admin,
//	                 created by the sandbox
//	DIR/pinbot.sock  the control socket of the running bot or sandbox,
//	                 which serves online backups (pinbot backup) and the
//	                 listings of pinbot accounts and pinbot jobs
//
// The bot and the sandbox can share a data directory only if the bot's
// key file is DIR/sandbox.key: DIR/links is written with one key.
const (
	engineSubdir   = "engine"
	linksSubdir    = "links"
	sandboxKeyName = "sandbox.key"
	sandboxLogName = "sandbox.log"
	// sandboxAdminTokenName is the sandbox's dashboard token.
	sandboxAdminTokenName = "admin.token"
	controlName           = "pinbot.sock"
)

// layout names the parts of a data directory.
type layout struct{ dir string }

func (l layout) engine() string     { return filepath.Join(l.dir, engineSubdir) }
func (l layout) links() string      { return filepath.Join(l.dir, linksSubdir) }
func (l layout) sandboxKey() string { return filepath.Join(l.dir, sandboxKeyName) }
func (l layout) sandboxAdminToken() string {
	return filepath.Join(l.dir, sandboxAdminTokenName)
}
func (l layout) sandboxLog() string { return filepath.Join(l.dir, sandboxLogName) }
func (l layout) control() string    { return filepath.Join(l.dir, controlName) }

// errOldLayout is returned for a data directory whose engine store sits
// directly in it, as the first versions of pinbot wrote it.
var errOldLayout = errors.New("data directory has the layout of an earlier pinbot")

// checkExisting fails unless the data directory exists, is a directory
// and has the current layout (checkLayout): what reading its stores
// offline needs first.
func (l layout) checkExisting() error {
	switch fi, err := os.Stat(l.dir); {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("data directory %s does not exist", l.dir)
	case err != nil:
		return fmt.Errorf("data directory: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("data directory %s is not a directory", l.dir)
	}
	return l.checkLayout()
}

// checkLayout fails, wrapping errOldLayout, when the data directory holds
// Badger files itself rather than in its engine subdirectory.
func (l layout) checkLayout() error {
	if _, err := os.Stat(filepath.Join(l.dir, "MANIFEST")); err == nil {
		return fmt.Errorf("%w: %s holds the engine's store files directly; move them into %s", errOldLayout, l.dir, l.engine())
	}
	return nil
}

// prepare creates the data directory, readable by its owner only, and
// checks its layout.
func (l layout) prepare() error {
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return fmt.Errorf("creating the data directory: %w", err)
	}
	return l.checkLayout()
}

// keyError is a key file that cannot be used.
type keyError struct{ err error }

func (e *keyError) Error() string { return e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

// keyHelp says how to make a key file.
const keyHelp = "create a key with: head -c 32 /dev/urandom > pinbot.key && chmod 600 pinbot.key"

// ownerOnly fails when the secret file at path, of mode mode, may be read
// or changed by others than its owner, as ssh refuses such a private key
// (except on Windows, whose modes do not say). The error names the
// setting s and the file (what: "key file", "token file") and says how
// to fix it.
func ownerOnly(s *setting, what, path string, mode fs.FileMode) error {
	if perm := mode.Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return fmt.Errorf("%s: %s %s has mode %04o: others than its owner may read or change it; run: chmod 600 %s",
			s.name(), what, path, perm, path)
	}
	return nil
}

// readKeyFile reads the token store's key from the file the setting
// names. The file must hold exactly 16, 24 or 32 bytes (AES-128, -192 or
// -256) and, except on Windows, be neither readable nor writable by its
// group or others: pinbot refuses a key others may read, as ssh refuses
// such a private key. Its errors are *keyError and name the setting.
func readKeyFile(s *setting) ([]byte, error) {
	path := s.value
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &keyError{fmt.Errorf("%s: key file %s does not exist; %s", s.name(), path, keyHelp)}
	case err != nil:
		return nil, &keyError{fmt.Errorf("%s: %w", s.name(), err)}
	case !fi.Mode().IsRegular():
		return nil, &keyError{fmt.Errorf("%s: %s is not a regular file", s.name(), path)}
	}
	if err := ownerOnly(s, "key file", path, fi.Mode()); err != nil {
		return nil, &keyError{err}
	}
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, &keyError{fmt.Errorf("%s: %w", s.name(), err)}
	}
	if n := len(key); n != 16 && n != 24 && n != 32 {
		return nil, &keyError{fmt.Errorf("%s: key file %s holds %d bytes; want exactly 16, 24 or 32 raw bytes "+
			"(a key written as text, or with a trailing newline, does not fit); %s", s.name(), path, n, keyHelp)}
	}
	return key, nil
}

// readSecretFile reads a shared secret of at least min bytes from the file
// the setting names, refusing a file others than its owner may read.
func readSecretFile(s *setting, min int) ([]byte, error) {
	path := s.value
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: %s does not exist; make one with: head -c 32 /dev/urandom > %s && chmod 600 %s, and copy it to every member", s.name(), path, path, path)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", s.name(), err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s: %s is not a regular file", s.name(), path)
	}
	if err := ownerOnly(s, "secret file", path, fi.Mode()); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.name(), err)
	}
	if len(b) < min {
		return nil, fmt.Errorf("%s: %s holds %d bytes, want at least %d", s.name(), path, len(b), min)
	}
	return b, nil
}
