package badgerlinks_test

import (
	"bytes"
	"context"
	"errors"
	"github.com/pinbot/pinbot/bot/links/linkstest"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
)

// TestBackupRestore: a restored store holds the users, accounts and
// tokens of the original, encrypted at rest with the key given, and
// opens with that key only; Restore refuses a directory that is not
// empty.
func TestBackupRestore(t *testing.T) {
	ctx := context.Background()
	s := openDisk(t, t.TempDir(), zerolog.Nop())
	defer closeStore(t, s)
	linkstest.Link(t, s, "u1", "acct1")
	linkstest.Link(t, s, "u1", "acct2")
	linkstest.Link(t, s, "u2", "acct2")
	if err := s.SetQueueWhenFull(ctx, "u2", true); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.Backup(&buf); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if !bytes.Contains(buf.Bytes(), []byte("refresh-acct1-0")) {
		t.Fatal("the backup stream does not hold the token in the clear: has Backup changed? (callers encrypt it)")
	}
	backup := buf.Bytes()

	dir := filepath.Join(t.TempDir(), "links")
	if err := badgerlinks.Restore(dir, bytes.NewReader(backup), badgerlinks.Options{EncryptionKey: testKey}, zerolog.Nop()); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if grepDir(t, dir, "refresh-acct1-0") {
		t.Error("the restored store holds a token in the clear")
	}
	other := bytes.Repeat([]byte{0x33}, 32)
	if _, err := badgerlinks.Open(dir, badgerlinks.Options{EncryptionKey: other}, zerolog.Nop()); !errors.Is(err, links.ErrEncryptionKey) {
		t.Errorf("Open with another key: %v, want ErrEncryptionKey", err)
	}
	r := openDisk(t, dir, zerolog.Nop())
	defer closeStore(t, r)
	for _, u := range []string{"u1", "u2"} {
		got, want := linkstest.MustUser(t, r, u), linkstest.MustUser(t, s, u)
		if got.Active != want.Active || len(got.Accounts) != len(want.Accounts) || got.QueueWhenFull != want.QueueWhenFull {
			t.Errorf("restored user %s = %+v, want %+v", u, got, want)
		}
	}
	for _, id := range []string{"acct1", "acct2"} {
		tok, _, err := r.Grant(ctx, id)
		if err != nil || !linkstest.SameToken(tok, linkstest.TokenFor(id, 0)) {
			t.Errorf("restored token of %s: %+v, %v", id, tok, err)
		}
	}
	// A restored store takes writes.
	linkstest.Link(t, r, "u3", "acct3")
	if u := linkstest.MustUser(t, r, "u3"); u.Active != "acct3" {
		t.Errorf("u3 after a link in the restored store: %+v", u)
	}

	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := badgerlinks.Restore(full, bytes.NewReader(backup), badgerlinks.Options{EncryptionKey: testKey}, zerolog.Nop()); !errors.Is(err, links.ErrInvalid) {
		t.Errorf("Restore into a non-empty directory: %v, want ErrInvalid", err)
	}
}

// grepDir reports whether a file under dir holds s.
func grepDir(t *testing.T, dir, s string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		found = found || bytes.Contains(b, []byte(s))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
