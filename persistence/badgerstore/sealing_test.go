package badgerstore

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
)

// TestJournalEncrypted: an encrypted store's log holds no plain account
// name, and opening it with another key fails.
func TestJournalEncrypted(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	opts.EncryptionKey = []byte("0123456789abcdef")
	s := openStore(t, dir, opts)
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "plain-account-name", Events: []persistence.Event{reserve(1, 1, t0)}}}})
	crash(t, s)
	files, _ := filepath.Glob(filepath.Join(dir, journalDir, "*.seg"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("plain-account-name")) {
			t.Errorf("%s holds the account name in the clear", f)
		}
	}
	s = openStore(t, dir, opts)
	checkLoaded(t, s, "plain-account-name", persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t0)}})
	crash(t, s)
	opts.EncryptionKey = []byte("fedcba9876543210")
	if _, err := Open(dir, opts, zerolog.Nop()); err == nil {
		t.Fatal("Open with another key succeeded")
	}
}
