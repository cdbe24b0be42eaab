package badgerutil

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/rs/zerolog"
)

// TestRemoveEmptyValueLogsLeavesALockedDirectory: while another holder
// has the directory locked (a running store), nothing is removed, even an
// empty value log: that store may be about to write its header.
func TestRemoveEmptyValueLogsLeavesALockedDirectory(t *testing.T) {
	dir := t.TempDir()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	empty := filepath.Join(dir, "000999.vlog")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := RemoveEmptyValueLogs(dir, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(empty); err != nil {
		t.Fatalf("an empty value log of a locked directory was removed: %v", err)
	}
	if err := RemoveEmptyValueLogs(filepath.Join(dir, "missing"), zerolog.Nop()); err != nil {
		t.Fatalf("a directory that does not exist: %v", err)
	}
}
