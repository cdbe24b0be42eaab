package badgerstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/persistence"
)

// TestOpenAfterInterruptedOpen: a process killed while Badger created its
// new value log at open leaves an empty .vlog file, which Badger itself
// then refuses to open; OpenBadger removes it and opens, with every write
// still there. Found by the soak: a kill 13 ms after start.
func TestOpenAfterInterruptedOpen(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Events: []persistence.Event{reserve(1, 1, t0)}}}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// What the kill left: the next value log, created and still empty.
	names, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if err != nil || len(names) == 0 {
		t.Fatalf("value logs in %s: %v, %v", dir, names, err)
	}
	empty := filepath.Join(dir, "000999.vlog")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	// Badger alone cannot open the directory (if a release fixes that,
	// RemoveEmptyValueLogs can go).
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err == nil {
		db.Close()
		t.Fatal("badger opened the directory with an empty value log; RemoveEmptyValueLogs is no longer needed")
	}
	if !strings.Contains(err.Error(), "Create a new file") {
		t.Fatalf("badger.Open: %v, want its \"Create a new file\" error", err)
	}
	// Badger's failed open set the file up; make it empty again.
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir, testOptions())
	checkLoaded(t, s, "a", persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t0)}})
	if _, err := os.Stat(empty); !os.IsNotExist(err) {
		t.Fatalf("the empty value log is still there: %v", err)
	}
}
