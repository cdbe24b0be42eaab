package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// allocated returns the bytes of disk path takes.
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// TestCopyDirKeepsHoles: Badger leaves a killed process' value-log file
// at 128 MiB with a few KiB written; the soak copies its data directory
// after every kill, so the copy must not write the holes out.
func TestCopyDirKeepsHoles(t *testing.T) {
	t.Parallel()
	src, dst := t.TempDir(), t.TempDir()
	const size = 128 << 20
	name := filepath.Join(src, "000001.vlog")
	writeSparse(t, name, size, map[int64]string{0: "head", 64 << 20: "middle"})
	if allocated(t, name) >= size/2 {
		t.Skipf("the file system under %s does not keep holes", src)
	}
	if err := copyDir(dst, src); err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(dst, "000001.vlog")
	info, err := os.Stat(copied)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() != size {
		t.Fatalf("the copy is %d bytes, want %d", info.Size(), size)
	}
	if a := allocated(t, copied); a >= size/2 {
		t.Errorf("the copy of a sparse %d-byte file takes %d bytes of disk: its holes were written out", size, a)
	}
}
