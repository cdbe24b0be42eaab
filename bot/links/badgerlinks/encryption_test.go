package badgerlinks

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/internal/logtest"
)

var (
	secretAccess  = []byte("secret-access-XYZ")
	secretRefresh = []byte("secret-refresh-XYZ")
	key32         = bytes.Repeat([]byte{0x42}, 32)
	otherKey32    = bytes.Repeat([]byte{0x43}, 32)
)

func secretToken() *oauth2.Token {
	return &oauth2.Token{
		AccessToken:  string(secretAccess),
		RefreshToken: string(secretRefresh),
		TokenType:    "bearer",
		Expiry:       time.Date(2030, 2, 1, 0, 0, 0, 0, time.UTC),
	}
}

// filesHolding returns the files under dir whose raw bytes contain needle.
func filesHolding(t *testing.T, dir string, needle []byte) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, needle) {
			out = append(out, filepath.Base(path))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	return out
}

// linkSecret opens a store in dir (plain: without encryption), links the
// secret token, and returns the store still open.
func linkSecret(t *testing.T, dir string, key []byte, plain bool, log zerolog.Logger) *Store {
	t.Helper()
	s, err := open(dir, Options{EncryptionKey: key}, log, plain)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	ctx := context.Background()
	if err := s.Link(ctx, "u1", links.Account{ID: "1001", Username: "alice"}, secretToken()); err != nil {
		t.Fatalf("Link: %v", err)
	}
	if err := s.SetDefaultBoard(ctx, "u1", "1001", "b1", "Cats"); err != nil {
		t.Fatalf("SetDefaultBoard: %v", err)
	}
	return s
}

// TestGrepFindsPlainTokens shows that the search in TestTokensEncrypted
// can fail: without encryption the tokens are in the files, both while the
// store is open (write-ahead log) and after Close (table files).
func TestGrepFindsPlainTokens(t *testing.T) {
	dir := t.TempDir()
	s := linkSecret(t, dir, nil, true, zerolog.Nop())
	for _, secret := range [][]byte{secretAccess, secretRefresh} {
		if len(filesHolding(t, dir, secret)) == 0 {
			t.Errorf("open plain store: %q not found in any file", secret)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, secret := range [][]byte{secretAccess, secretRefresh} {
		if len(filesHolding(t, dir, secret)) == 0 {
			t.Errorf("closed plain store: %q not found in any file", secret)
		}
	}
	// An encrypted open of the plain store is refused, not silently
	// mixed.
	if _, err := Open(dir, Options{EncryptionKey: key32}, zerolog.Nop()); !errors.Is(err, links.ErrEncryptionKey) {
		t.Errorf("Open plain store with a key = %v, want links.ErrEncryptionKey", err)
	}
}

func TestTokensEncrypted(t *testing.T) {
	dir := t.TempDir()
	logs := &logtest.Buffer{}
	log := zerolog.New(logs).Level(zerolog.TraceLevel)
	s := linkSecret(t, dir, key32, false, log)
	for _, secret := range [][]byte{secretAccess, secretRefresh} {
		if f := filesHolding(t, dir, secret); len(f) > 0 {
			t.Errorf("open encrypted store: %q found in %v", secret, f)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, secret := range [][]byte{secretAccess, secretRefresh} {
		if f := filesHolding(t, dir, secret); len(f) > 0 {
			t.Errorf("closed encrypted store: %q found in %v", secret, f)
		}
		if bytes.Contains(logs.Bytes(), secret) {
			t.Errorf("%q found in the logs", secret)
		}
	}

	refused := []struct {
		name  string
		key   []byte
		plain bool
	}{
		{"wrong key", otherKey32, false},
		{"shorter key", key32[:16], false},
		{"no key", nil, false},
		{"no key, plain allowed", nil, true},
	}
	for _, r := range refused {
		s, err := open(dir, Options{EncryptionKey: r.key}, zerolog.Nop(), r.plain)
		if !errors.Is(err, links.ErrEncryptionKey) {
			t.Errorf("%s: open = %v, want links.ErrEncryptionKey", r.name, err)
		}
		if s != nil {
			_ = s.Close()
		}
	}

	// The right key gets everything back.
	s, err := Open(dir, Options{EncryptionKey: key32}, zerolog.Nop())
	if err != nil {
		t.Fatalf("reopen with the right key: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	tok, err := s.Token(ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	want := secretToken()
	if tok.AccessToken != want.AccessToken || tok.RefreshToken != want.RefreshToken ||
		tok.TokenType != want.TokenType || !tok.Expiry.Equal(want.Expiry) {
		t.Errorf("reopened token = %+v, want %+v", tok, want)
	}
	u, err := s.User(ctx, "u1")
	if err != nil || u.Active != "1001" || len(u.Accounts) != 1 {
		t.Errorf("reopened user = %+v, %v", u, err)
	}
	a, err := s.Account(ctx, "1001")
	if want := (links.Account{ID: "1001", Username: "alice", DefaultBoard: "b1", DefaultBoardName: "Cats"}); err != nil || a != want {
		t.Errorf("reopened account = %+v, %v; want %+v", a, err, want)
	}
}
