package sandbox

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// keySize is the size of the key the sandbox creates: AES-256.
const keySize = 32

// loadOrCreateKey returns the token store's key from path, creating the
// file with keySize random bytes and mode 0600 when it does not exist.
// The key must be 16, 24 or 32 bytes.
func loadOrCreateKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	switch {
	case err == nil:
		if n := len(key); n != 16 && n != 24 && n != 32 {
			return nil, fmt.Errorf("sandbox: key file %s holds %d bytes, want 16, 24 or 32", path, n)
		}
		return key, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("sandbox: reading the key file: %w", err)
	}

	key = make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("sandbox: making a key: %w", err)
	}
	if err := createSecretFile(path, key); err != nil {
		return nil, fmt.Errorf("sandbox: the key file: %w", err)
	}
	return key, nil
}

// loadOrCreateAdminToken returns the operator dashboard's token from
// path, creating the file with 64 random hexadecimal digits and mode
// 0600 when it does not exist. A token in the file is trimmed of its
// line break and must be at least minAdminToken printable characters.
func loadOrCreateAdminToken(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		token := bytes.TrimRight(b, "\r\n")
		if len(token) < minAdminToken || bytes.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return nil, fmt.Errorf("sandbox: admin token file %s must hold one line of at least %d printable characters; delete it to get a new one", path, minAdminToken)
		}
		return token, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("sandbox: reading the admin token file: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("sandbox: making an admin token: %w", err)
	}
	token := []byte(hex.EncodeToString(raw))
	if err := createSecretFile(path, append(token, '\n')); err != nil {
		return nil, fmt.Errorf("sandbox: the admin token file: %w", err)
	}
	return token, nil
}

// minAdminToken is the shortest admin token the sandbox accepts from a
// file, as the bot does.
const minAdminToken = 16

// createSecretFile creates path, which must not exist, with content and
// mode 0600, and syncs it; on failure it leaves no file behind.
func createSecretFile(path string, content []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating its directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("creating it: %w", err)
	}
	_, werr := f.Write(content)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
		return fmt.Errorf("writing it: %w", werr)
	}
	return nil
}
