//go:build linux

package actors

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestBootClockConcurrentReadCountsSuspend: right after a resume, a second
// reader while the first is measuring the suspend must not return a time
// without it: the first stores the new wall/monotonic skew only once the
// suspend is measured, so the second still sees the jump.
func TestBootClockConcurrentReadCountsSuspend(t *testing.T) {
	var wall, mono, boot atomic.Int64
	wall.Store(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC).UnixNano())
	mono.Store(int64(time.Second))
	boot.Store(int64(time.Hour))
	var block atomic.Bool
	entered := make(chan struct{})
	release := make(chan struct{})
	clocks := func() (int64, int64) { return wall.Load(), mono.Load() }
	bootTime := func() (int64, bool) {
		if block.CompareAndSwap(true, false) {
			close(entered)
			<-release
		}
		return boot.Load(), true
	}
	b := newBootClock(clocks, bootTime)
	start := b.elapsed()

	// Suspended 8 h.
	wall.Add(int64(8 * time.Hour))
	boot.Add(int64(8 * time.Hour))

	block.Store(true)
	first := make(chan int64, 1)
	go func() { first <- b.elapsed() }() // sees the jump, measures (slowly)
	<-entered
	second := b.elapsed() // a read after the resume, while the first measures
	close(release)
	<-first
	if got := time.Duration(second - start); got < 8*time.Hour {
		t.Fatalf("a read after an 8 h suspend, concurrent with the first: elapsed moved %v, want at least 8h", got)
	}
}
