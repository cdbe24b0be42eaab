package actors

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// elapsed returns the time since the process started, in nanoseconds, by
// CLOCK_BOOTTIME: monotonic like Go's own monotonic clock, but it keeps
// counting while the machine is suspended, so a pin made before a suspend
// is not counted as younger than it is. Where the kernel lacks it, Go's
// monotonic clock is used for the whole run.
//
// Reading CLOCK_BOOTTIME is a system call (x/sys/unix does not use the
// vDSO), far too slow for every decision. Go's monotonic clock is read
// instead, through the vDSO, plus the time spent suspended, which is
// re-measured at most every bootResync. Right after a resume the engine
// clock may lag by up to that much: pins then count a little longer, never
// shorter. The result never decreases.
var elapsed = func() func() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return fallbackElapsed
	}
	var b bootClock
	b.resync(fallbackElapsed())
	return b.elapsed
}()

const bootResync = 100 * time.Millisecond

type bootClock struct {
	suspended atomic.Int64 // ns the machine spent suspended (at least)
	checked   atomic.Int64 // monotonic reading of the last resync
	base      int64        // CLOCK_BOOTTIME minus monotonic at start
	once      atomic.Bool  // base is set
}

func (b *bootClock) elapsed() int64 {
	mono := fallbackElapsed()
	if mono-b.checked.Load() >= int64(bootResync) {
		b.resync(mono)
	}
	return mono + b.suspended.Load()
}

// resync measures the suspended time again. The difference between the
// boot-time and monotonic clocks only grows, by the time spent suspended.
func (b *bootClock) resync(mono int64) {
	b.checked.Store(mono)
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return
	}
	// Reading the monotonic clock after the boot-time clock makes diff an
	// underestimate: never ahead of the truth.
	diff := ts.Nano() - fallbackElapsed()
	if !b.once.Load() {
		b.base = diff
		b.once.Store(true)
		return
	}
	s := diff - b.base
	for {
		old := b.suspended.Load()
		if s <= old || b.suspended.CompareAndSwap(old, s) {
			return
		}
	}
}
