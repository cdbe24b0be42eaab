package badgerutil

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/rs/zerolog"
)

// TestRemoveEmptyLogsLeavesALockedDirectory: while another holder
// has the directory locked (a running store), nothing is removed, even an
// empty value log: that store may be about to write its header.
func TestRemoveEmptyLogsLeavesALockedDirectory(t *testing.T) {
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
	if err := RemoveEmptyLogs(dir, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(empty); err != nil {
		t.Fatalf("an empty value log of a locked directory was removed: %v", err)
	}
	if err := RemoveEmptyLogs(filepath.Join(dir, "missing"), zerolog.Nop()); err != nil {
		t.Fatalf("a directory that does not exist: %v", err)
	}
}

// TestRemoveEmptyLogsRemovesOnlyEmptyLogs: the empty value-log and
// memtable files go; the non-empty ones and the other files, empty or
// not, stay.
func TestRemoveEmptyLogsRemovesOnlyEmptyLogs(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"000001.vlog": "", "000002.vlog": "v",
		"00003.mem": "", "00004.mem": "m",
		"000005.sst": "", "MANIFEST": "",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveEmptyLogs(dir, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		gone := os.IsNotExist(err)
		if want := content == "" && filepath.Ext(name) != ".sst" && name != "MANIFEST"; gone != want {
			t.Errorf("%s removed = %v (%v), want %v", name, gone, err, want)
		}
	}
}
