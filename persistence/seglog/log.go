// Package seglog is an append-only log of checksummed records kept in
// preallocated segment files, made for a journal with group commit: each
// Append is one write and one fdatasync, whatever the record holds.
//
// # Format
//
// A log is a directory of segment files named by the sequence number of
// their first record ("%020d.seg"). Each segment is preallocated to
// Options.SegmentSize bytes (fallocate), so that a full disk shows when a
// segment is created, never in the middle of a record, and holds records
// back to back, each aligned to 8 bytes:
//
//	crc32c (4, little-endian) over the 12 bytes that follow and the payload
//	payload length (4, little-endian)
//	seq (8, little-endian), one more than the record before it
//	payload
//	zero padding to a multiple of 8
//
// The preallocated rest of a segment reads as zeros.
//
// # Recovery
//
// Open reads every record. A record that fails its checksum (or a header
// that is not one) in the last segment, with no valid later record after
// it, is a write torn by a crash: it is zeroed and the log continues from
// there. A bad record anywhere else is corruption: Open fails with an error
// wrapping ErrCorrupt that names the segment and the offset.
//
// # Failures
//
// A failed write or fdatasync poisons the log: the kernel may have dropped
// the dirty pages, so nothing can be known durable any more, and every
// later Append fails until the log is opened again (which reads back what
// is really on disk).
//
// A Log is safe for simultaneous use by multiple goroutines; Appends are
// serialized.
package seglog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Errors of a Log.
var (
	// ErrCorrupt is wrapped by the error of Open for a log whose records
	// cannot be read back, other than a torn last record.
	ErrCorrupt = errors.New("seglog: corrupt log")
	// ErrPoisoned is wrapped by the error of every Append after a write or
	// fdatasync failed.
	ErrPoisoned = errors.New("seglog: log poisoned by an earlier write failure")
	// ErrClosed is returned by a Log used after Close.
	ErrClosed = errors.New("seglog: log closed")
)

const (
	headerLen = 16
	align     = 8
	suffix    = ".seg"
	// DefaultSegmentSize is the size of a segment when Options.SegmentSize
	// is 0.
	DefaultSegmentSize = 32 << 20
	// MaxRecordLen bounds a record's payload.
	MaxRecordLen = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Options configures Open.
type Options struct {
	// SegmentSize is the size each segment is preallocated to, in bytes
	// (0: DefaultSegmentSize). A record larger than a segment gets a
	// segment of its own, as large as it needs.
	SegmentSize int64
	// NoSync skips the fdatasync of each Append: records then survive a
	// crash of the process, not of the machine.
	NoSync bool
}

// Segment describes one segment file: the records First..Last (Last is
// First-1 while it holds none).
type Segment struct {
	First, Last uint64
}

// Log is an open log.
type Log struct {
	dir  string
	opts Options

	mu       sync.Mutex
	segs     []Segment // ascending; the last is the one written to
	f        *os.File  // the last segment
	off      int64     // where the next record goes in f
	capacity int64     // f's preallocated size
	next     uint64    // seq of the next record
	poison   error
	closed   bool
	buf      []byte

	// A spare segment, zeroed ahead of need by a goroutine of the log's
	// (see prepareSpare), becomes the next one by a rename. spareReady
	// says the file is there; preparing that the goroutine runs.
	spareReady bool
	preparing  bool
	spareDone  sync.WaitGroup
	stop       chan struct{} // closed by Close: the spare's zeroing stops
	spareChunk int64         // spareChunk, but for tests
	sparePause time.Duration // spareChunkPause, but for tests
	noSpare    bool          // tests: always create segments on the spot

	// Test hooks standing in for the system calls, nil in production.
	syncHook     func(f *os.File) error
	allocateHook func(f *os.File, size int64) error
}

// spareName is the file of the spare segment.
const spareName = "spare.tmp"

// Open opens the log in dir, creating dir and the log if needed, and
// calls fn with every record in order; fn must not keep payload, and an
// error of fn stops Open and is returned. A log that is empty starts at
// seq 1.
func Open(dir string, opts Options, fn func(seq uint64, payload []byte) error) (*Log, error) {
	if opts.SegmentSize < 0 {
		return nil, fmt.Errorf("seglog: Options.SegmentSize %d is negative", opts.SegmentSize)
	}
	if opts.SegmentSize == 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if opts.SegmentSize < 2*headerLen {
		return nil, fmt.Errorf("seglog: Options.SegmentSize %d is below %d bytes", opts.SegmentSize, 2*headerLen)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("seglog: %w", err)
	}
	l := &Log{dir: dir, opts: opts, next: 1, stop: make(chan struct{}), spareChunk: spareChunk, sparePause: spareChunkPause}
	// A spare left by the last run is made again: it may not be whole.
	if err := os.Remove(filepath.Join(dir, spareName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("seglog: %w", err)
	}
	firsts, err := l.list()
	if err != nil {
		return nil, err
	}
	for i, first := range firsts {
		last := i == len(firsts)-1
		if i > 0 && first != l.next {
			return nil, fmt.Errorf("%w: segment %s starts at record %d, want %d", ErrCorrupt, segName(first), first, l.next)
		}
		if i == 0 {
			l.next = first
		}
		if err := l.read(first, last, fn); err != nil {
			if l.f != nil {
				l.f.Close()
			}
			return nil, err
		}
	}
	if l.f == nil {
		// The first segment is made now, not on the first Append.
		if err := l.roll(0); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// list returns the first seqs of the segments in dir, ascending.
func (l *Log) list() ([]uint64, error) {
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("seglog: %w", err)
	}
	var firsts []uint64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, suffix) {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(name, suffix), 10, 64)
		if err != nil || n == 0 || segName(n) != name {
			return nil, fmt.Errorf("%w: unexpected file %q", ErrCorrupt, name)
		}
		firsts = append(firsts, n)
	}
	slices.Sort(firsts)
	return firsts, nil
}

func segName(first uint64) string { return fmt.Sprintf("%020d%s", first, suffix) }

func (l *Log) path(first uint64) string { return filepath.Join(l.dir, segName(first)) }

// read reads the segment starting at record first; last says it is the
// last one, which is kept open for writing.
func (l *Log) read(first uint64, last bool, fn func(uint64, []byte) error) error {
	name := segName(first)
	data, err := os.ReadFile(l.path(first))
	if err != nil {
		return fmt.Errorf("seglog: %w", err)
	}
	seg := Segment{First: first, Last: first - 1}
	off := 0
	for {
		n, ok := parse(data[off:], seg.Last+1)
		if !ok {
			break
		}
		payload := data[off+headerLen : off+headerLen+int(binary.LittleEndian.Uint32(data[off+4:]))]
		if err := fn(seg.Last+1, payload); err != nil {
			return err
		}
		seg.Last++
		off += n
	}
	if !allZero(data[off:]) {
		if !last || laterRecord(data, off+align, seg.Last+1) {
			return fmt.Errorf("%w: segment %s: bad record %d at offset %d", ErrCorrupt, name, seg.Last+1, off)
		}
		// A torn last write: zero it, so that the next record is written
		// over zeros as everywhere else.
		if err := l.zero(first, int64(off), data[off:]); err != nil {
			return err
		}
	}
	if seg.Last < seg.First && !last {
		return fmt.Errorf("%w: segment %s holds no record", ErrCorrupt, name)
	}
	l.segs = append(l.segs, seg)
	l.next = seg.Last + 1
	if last {
		f, err := os.OpenFile(l.path(first), os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("seglog: %w", err)
		}
		l.f, l.off, l.capacity = f, int64(off), int64(len(data))
	}
	return nil
}

// parse reports whether b starts with a valid record numbered seq, and its
// length with padding.
func parse(b []byte, seq uint64) (int, bool) {
	if len(b) < headerLen {
		return 0, false
	}
	n := int(binary.LittleEndian.Uint32(b[4:]))
	if binary.LittleEndian.Uint64(b[8:]) != seq || n > len(b)-headerLen || n > MaxRecordLen {
		return 0, false
	}
	if crc32.Checksum(b[4:headerLen+n], castagnoli) != binary.LittleEndian.Uint32(b) {
		return 0, false
	}
	// A segment cut short may end inside the padding.
	return min(padded(headerLen+n), len(b)), true
}

// laterRecord reports whether data holds, at an aligned offset from off
// on, a valid record numbered seq or more (up to a bound that covers any
// record the segment can hold).
func laterRecord(data []byte, off int, seq uint64) bool {
	for p := off; p+headerLen <= len(data); p += align {
		s := binary.LittleEndian.Uint64(data[p+8:])
		if s < seq || s > seq+uint64(len(data)/headerLen) {
			continue
		}
		if _, ok := parse(data[p:], s); ok {
			return true
		}
	}
	return false
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func padded(n int) int { return (n + align - 1) &^ (align - 1) }

// zero overwrites the non-zero bytes of bad, found at off in the segment
// starting at first, with zeros, durably.
func (l *Log) zero(first uint64, off int64, bad []byte) error {
	end := len(bad)
	for end > 0 && bad[end-1] == 0 {
		end--
	}
	f, err := os.OpenFile(l.path(first), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("seglog: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, end), off); err != nil {
		return fmt.Errorf("seglog: zero torn record: %w", err)
	}
	if err := l.sync(f); err != nil {
		return fmt.Errorf("seglog: zero torn record: %w", err)
	}
	return nil
}

// Next returns the seq the next Append will get.
func (l *Log) Next() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// Segments returns the segments, oldest first.
func (l *Log) Segments() []Segment {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.segs)
}

// Append writes payload as the next record and, unless Options.NoSync,
// fdatasyncs it; it returns the record's seq. A failure to create a
// segment (a full disk: the error wraps syscall.ENOSPC) leaves the log as
// it was; a failed write or fdatasync poisons it.
func (l *Log) Append(payload []byte) (uint64, error) {
	if len(payload) > MaxRecordLen {
		return 0, fmt.Errorf("seglog: record of %d bytes exceeds %d", len(payload), MaxRecordLen)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return 0, ErrClosed
	case l.poison != nil:
		return 0, l.poison
	}
	need := int64(padded(headerLen + len(payload)))
	if l.f == nil || l.off+need > l.capacity {
		if err := l.roll(need); err != nil {
			return 0, err
		}
	}
	seq := l.next
	b := l.buf[:0]
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint64(b, seq)
	b = append(b, payload...)
	binary.LittleEndian.PutUint32(b, crc32.Checksum(b[4:], castagnoli))
	for len(b)%align != 0 {
		b = append(b, 0)
	}
	l.buf = b
	if _, err := l.f.WriteAt(b, l.off); err != nil {
		return 0, l.poisonWith("write", err)
	}
	if err := l.sync(l.f); err != nil {
		return 0, l.poisonWith("fdatasync", err)
	}
	l.off += need
	l.next++
	l.segs[len(l.segs)-1].Last = seq
	if !l.spareReady && !l.preparing && !l.noSpare {
		l.preparing = true
		l.spareDone.Add(1)
		go l.prepareSpare()
	}
	return seq, nil
}

func (l *Log) poisonWith(what string, err error) error {
	l.poison = fmt.Errorf("%w: %s %s: %w", ErrPoisoned, what, l.f.Name(), err)
	return l.poison
}

// roll makes a new segment, starting at l.next, large enough for a record
// of need bytes, the one written to. Nothing changes if it fails.
func (l *Log) roll(need int64) error {
	size := max(l.opts.SegmentSize, need)
	path := l.path(l.next)
	// The last segment may be an empty one left by a crash or failed
	// roll before; it is replaced.
	if l.f != nil && len(l.segs) > 0 && l.segs[len(l.segs)-1].First == l.next {
		if err := l.f.Close(); err != nil {
			return fmt.Errorf("seglog: %w", err)
		}
		l.f = nil
		l.segs = l.segs[:len(l.segs)-1]
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("seglog: %w", err)
		}
	}
	var f *os.File
	if l.spareReady && size == l.opts.SegmentSize {
		l.spareReady = false
		if err := os.Rename(filepath.Join(l.dir, spareName), path); err != nil {
			return fmt.Errorf("seglog: create segment: %w", err)
		}
		var err error
		if f, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
			return fmt.Errorf("seglog: create segment: %w", err)
		}
		if err := l.syncDir(); err != nil {
			f.Close()
			return fmt.Errorf("seglog: sync directory of segment %s: %w", segName(l.next), err)
		}
	} else {
		var err error
		if f, err = l.create(path, size, false); err != nil {
			return fmt.Errorf("seglog: segment %s: %w", segName(l.next), err)
		}
		if err := l.syncDir(); err != nil {
			f.Close()
			os.Remove(path)
			return fmt.Errorf("seglog: sync directory of segment %s: %w", segName(l.next), err)
		}
	}
	if l.f != nil {
		if err := l.f.Close(); err != nil {
			f.Close()
			return fmt.Errorf("seglog: %w", err)
		}
	}
	l.f, l.off, l.capacity = f, 0, size
	l.segs = append(l.segs, Segment{First: l.next, Last: l.next - 1})
	return nil
}

// spareChunk is how much of the spare segment is zeroed between two of
// its fdatasyncs: the log's own fdatasync, on the same disk, then waits
// for at most this much of the spare's data to reach the disk, instead of
// the whole segment at once (docs/benchmarks.md has what that did to the
// tail).
const spareChunk = 256 << 10

// spareChunkPause is the pause after each chunk of the spare: it spreads
// the zeroing of a 32 MiB segment over a second or so, long before a
// segment at any likely rate of records fills, so that the log's
// fdatasyncs rarely queue behind it.
const spareChunkPause = 8 * time.Millisecond

// create makes a segment file at path: preallocated, zeroed and synced,
// so that the records written to it later overwrite data in place and
// their fdatasync has no metadata to write (writing into extents that
// fallocate left unwritten makes each one a journal commit of the file
// system). A spare segment, made while records are written, is synced
// every spareChunk bytes (see spareChunk).
func (l *Log) create(path string, size int64, spare bool) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	fail := func(what string, err error) (*os.File, error) {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := l.allocate(f, size); err != nil {
		return fail("preallocate", err)
	}
	chunk := int64(1 << 20)
	if spare {
		chunk = l.spareChunk
	}
	zeros := make([]byte, min(size, chunk))
	for off := int64(0); off < size; off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), size-off)], off); err != nil {
			return fail("zero", err)
		}
		if spare && off+int64(len(zeros)) < size {
			if err := l.sync(f); err != nil {
				return fail("sync", err)
			}
			select {
			case <-l.stop:
				return fail("zero", ErrClosed)
			case <-time.After(l.sparePause):
			}
		}
	}
	if err := l.sync(f); err != nil {
		return fail("sync", err)
	}
	return f, nil
}

// prepareSpare makes the spare segment, off the write path.
func (l *Log) prepareSpare() {
	defer l.spareDone.Done()
	f, err := l.create(filepath.Join(l.dir, spareName), l.opts.SegmentSize, true)
	if err == nil {
		err = f.Close()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.preparing = false
	// On failure (a full disk) the next roll creates its segment itself,
	// and reports the error if it fails again.
	l.spareReady = err == nil
}

// Remove deletes the oldest segments, as long as every record in them is
// at or below seq; the segment written to is never deleted.
func (l *Log) Remove(seq uint64) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	n := 0
	for len(l.segs) > 1 && l.segs[0].Last <= seq {
		if err := os.Remove(l.path(l.segs[0].First)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("seglog: remove segment: %w", err)
		}
		l.segs = l.segs[1:]
		n++
	}
	return n, nil
}

// Close closes the log; later calls fail with ErrClosed.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	close(l.stop)
	l.mu.Unlock()
	l.spareDone.Wait()
	l.mu.Lock()
	if l.f == nil {
		return nil
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("seglog: %w", err)
	}
	return nil
}

// sync fdatasyncs f, unless the log is not synced at all.
func (l *Log) sync(f *os.File) error {
	if l.opts.NoSync {
		return nil
	}
	if l.syncHook != nil {
		return l.syncHook(f)
	}
	return fdatasync(f)
}

func (l *Log) allocate(f *os.File, size int64) error {
	if l.allocateHook != nil {
		return l.allocateHook(f, size)
	}
	return preallocate(f, size)
}

func (l *Log) syncDir() error {
	if l.opts.NoSync {
		return nil
	}
	return syncDir(l.dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// Synced reports whether Append fdatasyncs (Options.NoSync is off).
func (l *Log) Synced() bool { return !l.opts.NoSync }
