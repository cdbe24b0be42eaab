package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCopyDirCopiesFilesAndSubdirectories checks contents, sizes and
// permissions of a copy, a sparse file and an empty one included.
func TestCopyDirCopiesFilesAndSubdirectories(t *testing.T) {
	t.Parallel()
	src, dst := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "MANIFEST"), []byte("manifest"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "LOCK"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(src, "sub", "000001.vlog")
	writeSparse(t, sparse, 8<<20, map[int64]string{0: "head", 3<<20 + 17: "middle", 8<<20 - 4: "tail"})
	if err := copyDir(dst, src); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"MANIFEST", "LOCK", filepath.Join("sub", "000001.vlog")} {
		want, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil {
			t.Fatalf("%s not copied: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the copy differs (%d bytes, want %d)", name, len(got), len(want))
		}
		si, _ := os.Stat(filepath.Join(src, name))
		di, _ := os.Stat(filepath.Join(dst, name))
		if si.Mode() != di.Mode() {
			t.Errorf("%s: mode %v, want %v", name, di.Mode(), si.Mode())
		}
	}
	if err := copyDir(dst, src); err == nil {
		t.Errorf("copying over existing files succeeded")
	}
}

// writeSparse creates path with size bytes: the given strings at their
// offsets, holes elsewhere.
func writeSparse(t *testing.T, path string, size int64, at map[int64]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for off, s := range at {
		if _, err := f.WriteAt([]byte(s), off); err != nil {
			t.Fatal(err)
		}
	}
}
