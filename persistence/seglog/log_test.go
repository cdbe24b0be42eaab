package seglog

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// open opens the log in dir and returns it with the payloads it read.
func open(t *testing.T, dir string, opts Options) (*Log, [][]byte) {
	t.Helper()
	var got [][]byte
	l, err := Open(dir, opts, func(seq uint64, p []byte) error {
		if want := uint64(len(got) + 1); seq != want {
			t.Fatalf("record seq %d, want %d", seq, want)
		}
		got = append(got, bytes.Clone(p))
		return nil
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l, got
}

func appendAll(t *testing.T, l *Log, payloads ...[]byte) {
	t.Helper()
	for _, p := range payloads {
		want := l.Next()
		seq, err := l.Append(p)
		if err != nil {
			t.Fatalf("Append: %v", err)
		}
		if seq != want {
			t.Fatalf("Append seq %d, want %d", seq, want)
		}
	}
}

func payloads(n int) [][]byte {
	var out [][]byte
	for i := range n {
		out = append(out, []byte(strings.Repeat(fmt.Sprint(i), 1+i%40)))
	}
	return out
}

func equal(t *testing.T, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d = %q, want %q", i+1, got[i], want[i])
		}
	}
}

func TestAppendReopen(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentSize: 256}
	l, got := open(t, dir, opts)
	if len(got) != 0 || l.Next() != 1 {
		t.Fatalf("new log: %d records, next %d", len(got), l.Next())
	}
	want := payloads(30)
	want = append(want, bytes.Repeat([]byte("x"), 1000)) // larger than a segment
	want = append(want, []byte{}, []byte("after"))
	appendAll(t, l, want...)
	if n := len(l.Segments()); n < 3 {
		t.Fatalf("%d segments, want several", n)
	}
	l.Close()
	l, got = open(t, dir, opts)
	equal(t, got, want)
	appendAll(t, l, []byte("more"))
	l.Close()
	_, got = open(t, dir, opts)
	equal(t, got, append(want, []byte("more")))
}

// segFiles returns the segment files of dir, oldest first.
func segFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+suffix))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// mangle changes the file at path with fn.
func mangle(t *testing.T, path string, fn func(b []byte)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fn(b)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// offsetOf returns the offset of record i (from 0) of a segment holding
// the payloads ps from its start.
func offsetOf(ps [][]byte, i int) int {
	off := 0
	for _, p := range ps[:i] {
		off += padded(headerLen + len(p))
	}
	return off
}

func TestTornTailTruncated(t *testing.T) {
	for _, tc := range []struct {
		name string
		tear func(b []byte, off int)
	}{
		{"payload", func(b []byte, off int) { b[off+headerLen] ^= 0xff }},
		{"header zero, payload written", func(b []byte, off int) { clear(b[off : off+headerLen]) }},
		{"length", func(b []byte, off int) { b[off+4] = 0xff }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := open(t, dir, Options{SegmentSize: 4096})
			want := payloads(3)
			appendAll(t, l, want...)
			l.Close()
			mangle(t, segFiles(t, dir)[0], func(b []byte) { tc.tear(b, offsetOf(want, 2)) })
			l, got := open(t, dir, Options{SegmentSize: 4096})
			equal(t, got, want[:2])
			appendAll(t, l, []byte("again"))
			l.Close()
			_, got = open(t, dir, Options{SegmentSize: 4096})
			equal(t, got, append(want[:2:2], []byte("again")))
		})
	}
}

func TestCorruptMiddleRefused(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir, Options{SegmentSize: 4096})
	want := payloads(3)
	appendAll(t, l, want...)
	l.Close()
	mangle(t, segFiles(t, dir)[0], func(b []byte) { b[offsetOf(want, 1)+headerLen] ^= 1 })
	_, err := Open(dir, Options{SegmentSize: 4096}, func(uint64, []byte) error { return nil })
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "bad record 2 at offset 24") {
		t.Fatalf("Open = %v, want ErrCorrupt naming record 2 at offset 24", err)
	}
}

func TestCorruptOlderSegmentRefused(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir, Options{SegmentSize: 64})
	appendAll(t, l, payloads(6)...)
	l.Close()
	segs := segFiles(t, dir)
	if len(segs) < 2 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	mangle(t, segs[0], func(b []byte) { b[headerLen] ^= 1 })
	_, err := Open(dir, Options{SegmentSize: 64}, func(uint64, []byte) error { return nil })
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), segName(1)) {
		t.Fatalf("Open = %v, want ErrCorrupt naming the first segment", err)
	}
}

func TestMissingSegmentRefused(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir, Options{SegmentSize: 64})
	appendAll(t, l, payloads(8)...)
	l.Close()
	segs := segFiles(t, dir)
	if len(segs) < 3 {
		t.Fatalf("%d segments, want 3 or more", len(segs))
	}
	if err := os.Remove(segs[1]); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{SegmentSize: 64}, func(uint64, []byte) error { return nil })
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v, want ErrCorrupt", err)
	}
}

func TestReplayErrorStopsOpen(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir, Options{})
	appendAll(t, l, payloads(2)...)
	l.Close()
	boom := errors.New("boom")
	if _, err := Open(dir, Options{}, func(uint64, []byte) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Open = %v, want boom", err)
	}
}

func TestNoSpaceAtSegmentCreation(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir, Options{SegmentSize: 64})
	l.noSpare = true
	appendAll(t, l, []byte("one"))
	l.allocateHook = func(*os.File, int64) error { return syscall.ENOSPC }
	if _, err := l.Append(bytes.Repeat([]byte("y"), 60)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append with a full disk = %v, want ENOSPC", err)
	}
	if n := len(segFiles(t, dir)); n != 1 {
		t.Fatalf("%d segment files after the failed roll, want 1", n)
	}
	l.allocateHook = nil
	appendAll(t, l, []byte("two")) // not poisoned
	l.Close()
	_, got := open(t, dir, Options{SegmentSize: 64})
	equal(t, got, [][]byte{[]byte("one"), []byte("two")})
}

func TestSyncFailurePoisons(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir, Options{})
	l.noSpare = true
	appendAll(t, l, []byte("one"))
	l.syncHook = func(*os.File) error { return syscall.EIO }
	if _, err := l.Append([]byte("two")); !errors.Is(err, syscall.EIO) || !errors.Is(err, ErrPoisoned) {
		t.Fatalf("Append with failing fdatasync = %v, want EIO and ErrPoisoned", err)
	}
	l.syncHook = nil
	if _, err := l.Append([]byte("three")); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("Append after a failed fdatasync = %v, want ErrPoisoned", err)
	}
	l.Close()
	// Reopening reads what is on disk; the record whose sync failed may
	// or may not be there, but it was never acknowledged.
	l, got := open(t, dir, Options{})
	if len(got) < 1 || string(got[0]) != "one" {
		t.Fatalf("after reopen: %q", got)
	}
	appendAll(t, l, []byte("four"))
}

func TestRemove(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir, Options{SegmentSize: 64})
	appendAll(t, l, payloads(10)...)
	segs := l.Segments()
	if len(segs) < 3 {
		t.Fatalf("%d segments, want 3 or more", len(segs))
	}
	if n, err := l.Remove(segs[0].Last - 1); n != 0 || err != nil {
		t.Fatalf("Remove below the first segment's end = %d, %v", n, err)
	}
	if n, err := l.Remove(segs[1].Last); n != 2 || err != nil {
		t.Fatalf("Remove(%d) = %d, %v; want 2 segments", segs[1].Last, n, err)
	}
	if n, err := l.Remove(1 << 62); err != nil || len(l.Segments()) != 1 || n != len(segs)-3 {
		t.Fatalf("Remove(all) = %d, %v: %d segments left, want the last kept", n, err, len(l.Segments()))
	}
	appendAll(t, l, []byte("on"))
	l.Close()
	_, err := Open(dir, Options{SegmentSize: 64}, func(seq uint64, p []byte) error {
		if seq < segs[len(segs)-1].First {
			return fmt.Errorf("record %d of a removed segment", seq)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestEmptyLastSegmentReused(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir, Options{SegmentSize: 64})
	appendAll(t, l, payloads(2)...)
	l.Close()
	// A crash between creating a segment and writing to it.
	if err := os.WriteFile(filepath.Join(dir, segName(3)), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	l, got := open(t, dir, Options{SegmentSize: 64})
	equal(t, got, payloads(2))
	appendAll(t, l, []byte("third"))
	l.Close()
	_, got = open(t, dir, Options{SegmentSize: 64})
	equal(t, got, append(payloads(2), []byte("third")))
}

func TestClosed(t *testing.T) {
	l, _ := open(t, t.TempDir(), Options{})
	l.Close()
	if _, err := l.Append(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v", err)
	}
	if err := l.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Close twice = %v", err)
	}
}

// TestSpareSegment: after a segment is made, the next one is prepared
// ahead, zeroed, and the next roll takes it by a rename; a spare left by
// a crash is removed on open.
func TestSpareSegment(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir, Options{SegmentSize: 64})
	appendAll(t, l, []byte("one"))
	l.spareDone.Wait()
	spare := filepath.Join(dir, spareName)
	b, err := os.ReadFile(spare)
	if err != nil || len(b) != 64 || !allZero(b) {
		t.Fatalf("spare: %d bytes, zero %v, %v; want 64 zero bytes", len(b), allZero(b), err)
	}
	appendAll(t, l, bytes.Repeat([]byte("t"), 40)) // does not fit: rolls
	if _, err := os.Stat(spare); err == nil {
		l.spareDone.Wait()
		if len(l.Segments()) != 2 {
			t.Fatalf("%d segments, want 2", len(l.Segments()))
		}
	}
	l.Close()
	if _, err := os.Stat(spare); err != nil {
		t.Fatalf("no spare after the roll and Close: %v", err)
	}
	_, got := open(t, dir, Options{SegmentSize: 64})
	equal(t, got, [][]byte{[]byte("one"), bytes.Repeat([]byte("t"), 40)})
	if _, err := os.Stat(spare); err == nil {
		t.Error("spare left after Open")
	}
}

// syncCounter counts the fdatasyncs of each file, by base name.
type syncCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *syncCounter) hook(f *os.File) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[filepath.Base(f.Name())]++
	return nil
}

func (c *syncCounter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// TestSpareZeroedInChunks: the spare is zeroed a chunk at a time, each
// chunk synced before the next, so that the log's own fdatasync never
// waits for a whole segment of zeros to reach the disk.
func TestSpareZeroedInChunks(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir, Options{SegmentSize: 256})
	var syncs syncCounter
	l.syncHook = syncs.hook
	l.spareChunk, l.sparePause = 64, 0
	appendAll(t, l, []byte("one"))
	l.spareDone.Wait()
	// Three chunks synced after them, then the whole file once more.
	if n := syncs.get(spareName); n != 4 {
		t.Fatalf("spare synced %d times, want 4 (one per chunk of 64 bytes in 256)", n)
	}
	b, err := os.ReadFile(filepath.Join(dir, spareName))
	if err != nil || len(b) != 256 || !allZero(b) {
		t.Fatalf("spare: %d bytes, zero %v, %v; want 256 zero bytes", len(b), allZero(b), err)
	}
}

// TestCloseStopsSpare: Close does not wait for a spare being zeroed to be
// done; the part-made spare is removed, and the log opens again whole.
func TestCloseStopsSpare(t *testing.T) {
	dir := t.TempDir()
	l, _ := open(t, dir, Options{SegmentSize: 256})
	l.spareChunk, l.sparePause = 64, time.Hour
	appendAll(t, l, []byte("one"))
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, spareName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("part-made spare after Close: %v", err)
	}
	_, got := open(t, dir, Options{SegmentSize: 256})
	equal(t, got, [][]byte{[]byte("one")})
}
