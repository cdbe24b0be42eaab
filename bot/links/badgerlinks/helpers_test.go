package badgerlinks_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

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

// tokenFor returns a distinct token for account id, generation gen.
func tokenFor(id string, gen int) *oauth2.Token {
	g := string(rune('0' + gen%10))
	return &oauth2.Token{
		AccessToken:  "access-" + id + "-" + g,
		RefreshToken: "refresh-" + id + "-" + g,
		TokenType:    "bearer",
		Expiry:       t0.Add(30 * 24 * time.Hour),
	}
}

// link links account id (username "user"+id) for user with tokenFor(id, 0).
func link(t *testing.T, s *badgerlinks.Store, user, id string) {
	t.Helper()
	if err := s.Link(context.Background(), user, links.Account{ID: id, Username: "user" + id}, tokenFor(id, 0)); err != nil {
		t.Fatalf("Link(%s, %s): %v", user, id, err)
	}
}

// mustUser returns the stored User.
func mustUser(t *testing.T, s *badgerlinks.Store, id string) links.User {
	t.Helper()
	u, err := s.User(context.Background(), id)
	if err != nil {
		t.Fatalf("User(%s): %v", id, err)
	}
	return u
}

// sameToken reports whether a and b carry the same stored fields.
func sameToken(a, b *oauth2.Token) bool {
	return a.AccessToken == b.AccessToken && a.RefreshToken == b.RefreshToken &&
		a.TokenType == b.TokenType && a.Expiry.Equal(b.Expiry)
}
