package sandbox

import (
	"crypto/rand"
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
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: creating the key file's directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sandbox: creating the key file: %w", err)
	}
	_, werr := f.Write(key)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("sandbox: writing the key file: %w", werr)
	}
	return key, nil
}
