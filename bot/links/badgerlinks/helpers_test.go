package badgerlinks_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
)

// t0 is the start of every test's clock.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// testKey is an AES-256 key for on-disk stores.
var testKey = bytes.Repeat([]byte{0x5a}, 32)

// newStore opens an in-memory store with opts (InMemory forced) and
// closes it when the test ends.
func newStore(t *testing.T, opts badgerlinks.Options) *badgerlinks.Store {
	t.Helper()
	opts.InMemory = true
	s, err := badgerlinks.Open("", opts, zerolog.Nop())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { closeStore(t, s) })
	return s
}

// openDisk opens an encrypted store in dir.
func openDisk(t *testing.T, dir string, log zerolog.Logger) *badgerlinks.Store {
	t.Helper()
	s, err := badgerlinks.Open(dir, badgerlinks.Options{EncryptionKey: testKey}, log)
	if err != nil {
		t.Fatalf("Open(%q): %v", dir, err)
	}
	return s
}

// closeStore closes s, accepting a store the test closed already.
func closeStore(t *testing.T, s *badgerlinks.Store) {
	t.Helper()
	if err := s.Close(); err != nil && !errors.Is(err, links.ErrClosed) {
		t.Errorf("Close: %v", err)
	}
}
