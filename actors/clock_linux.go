package actors

import (
	"os"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// bootIDFile holds a random ID the kernel draws at each boot.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// systemUptime reads CLOCK_BOOTTIME through elapsed: the boot time at
// start, plus the elapsed time since.
var systemUptime Uptime = newLinuxUptime()

type linuxUptime struct {
	id   string
	base int64 // CLOCK_BOOTTIME minus elapsed(), ns
}

func newLinuxUptime() *linuxUptime {
	bt, ok := readBoottime()
	if !ok {
		return &linuxUptime{base: -elapsed()}
	}
	u := &linuxUptime{base: bt - elapsed()}
	if b, err := os.ReadFile(bootIDFile); err == nil {
		u.id = strings.TrimSpace(string(b))
	}
	return u
}

func (u *linuxUptime) BootID() string { return u.id }

func (u *linuxUptime) Now() int64 { return (u.base + elapsed()) / int64(time.Millisecond) }

// elapsed returns the time since the process started, in nanoseconds, by
// CLOCK_BOOTTIME: monotonic like Go's own monotonic clock, but it keeps
// counting while the machine is suspended, so a pin made before a suspend
// is not counted as younger than it is, and one made after it is not
// stamped as older than it is. Where the kernel lacks it, Go's monotonic
// clock is used for the whole run.
//
// Reading CLOCK_BOOTTIME is a system call (x/sys/unix does not use the
// vDSO), far too slow for every decision. Go's monotonic clock is read
// instead, through the vDSO, plus the time spent suspended, which is
// measured again every bootResync, and at once when the wall clock jumps
// against the monotonic one: a suspend moves the wall clock on and not the
// monotonic clock, so the read right after a resume already counts it.
// (A suspend hidden by a wall clock set back by as much at the same moment
// would be caught at the next periodic measure.) The result never
// decreases.
var elapsed = func() func() int64 {
	b := newBootClock(readClocks, readBoottime)
	if b == nil {
		return fallbackElapsed
	}
	return b.elapsed
}()

const (
	bootResync = 100 * time.Millisecond
	// wallJump is how far the wall clock may move against the monotonic
	// clock between two reads before the suspended time is measured again.
	wallJump = time.Millisecond
)

// readClocks reads the wall clock (Unix ns) and the monotonic time since
// the process started (ns), in one call.
func readClocks() (wall, mono int64) {
	now := time.Now()
	return now.UnixNano(), int64(now.Sub(processStart))
}

// readBoottime reads CLOCK_BOOTTIME (ns); ok is false where it is missing.
func readBoottime() (int64, bool) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0, false
	}
	return ts.Nano(), true
}

type bootClock struct {
	suspended atomic.Int64 // ns the machine spent suspended (at least)
	checked   atomic.Int64 // monotonic reading of the last measure
	skew      atomic.Int64 // wall minus monotonic at the last measure
	base      int64        // CLOCK_BOOTTIME minus monotonic at start

	clocks func() (wall, mono int64)
	boot   func() (int64, bool)
}

// newBootClock returns a bootClock over the given clocks, or nil when
// there is no boot-time clock.
func newBootClock(clocks func() (wall, mono int64), boot func() (int64, bool)) *bootClock {
	bt, ok := boot()
	if !ok {
		return nil
	}
	b := &bootClock{clocks: clocks, boot: boot}
	wall, mono := clocks()
	// The clocks are read one after the other: every suspended time
	// measured against base is off by the difference between two read
	// gaps, microseconds either way.
	b.base = bt - mono
	b.checked.Store(mono)
	b.skew.Store(wall - mono)
	return b
}

func (b *bootClock) elapsed() int64 {
	wall, mono := b.clocks()
	skew := wall - mono
	if d := skew - b.skew.Load(); d > int64(wallJump) || d < -int64(wallJump) || mono-b.checked.Load() >= int64(bootResync) {
		// The new skew is stored only once the suspended time is measured:
		// a concurrent reader meanwhile still sees the jump, and measures
		// too, instead of returning a time without the suspend.
		b.resync()
		b.skew.Store(skew)
	}
	return mono + b.suspended.Load()
}

// resync measures the suspended time again. The difference between the
// boot-time and monotonic clocks only grows, by the time spent suspended.
func (b *bootClock) resync() {
	bt, ok := b.boot()
	_, mono := b.clocks()
	b.checked.Store(mono)
	if !ok {
		return
	}
	s := bt - mono - b.base
	for {
		old := b.suspended.Load()
		if s <= old || b.suspended.CompareAndSwap(old, s) {
			return
		}
	}
}
