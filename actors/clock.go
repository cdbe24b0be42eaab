package actors

import (
	"sync"
	"time"
)

var _ Clock = (*RunningClock)(nil)

// Clock is the engine's source of "now", in Unix milliseconds. Decision
// logic never reads the wall clock directly: it asks a Clock, and tests pass
// a ManualClock.
type Clock interface {
	Now() int64
}

// RunningClock advances with a clock that only moves forward: it starts at
// a given instant and from then on adds the elapsed time of an Uptime,
// normally the system's boot-time clock (monotonic, and counting time spent
// suspended). A wall-clock jump while running therefore neither expires
// pins early nor extends them. It is safe for simultaneous use.
type RunningClock struct {
	up    Uptime
	base  int64 // Unix ms at start
	start int64 // up.Now() at start, ms
}

// NewRunningClock returns a clock that starts at start (Unix ms) and runs
// with SystemUptime.
func NewRunningClock(start int64) *RunningClock {
	return newRunningClock(start, SystemUptime(), SystemUptime().Now())
}

// newRunningClock returns a clock reading start when up reads upAt.
func newRunningClock(start int64, up Uptime, upAt int64) *RunningClock {
	return &RunningClock{up: up, base: start, start: upAt}
}

// Now returns the current engine time in Unix milliseconds.
func (c *RunningClock) Now() int64 {
	return c.base + c.up.Now() - c.start
}

// Uptime is the machine's boot-time clock. The engine runs on it, and
// stores with its time where it stood on it, so that a restart on the same
// boot measures the time that passed without the wall clock.
type Uptime interface {
	// BootID names the machine's current boot; "" when it cannot be told,
	// and then no time is carried across restarts.
	BootID() string
	// Now returns the time since boot in milliseconds, counting time
	// suspended. It never decreases within a boot.
	Now() int64
}

// SystemUptime returns the machine's Uptime: on Linux, the boot ID of
// /proc/sys/kernel/random/boot_id and CLOCK_BOOTTIME; elsewhere, a
// monotonic clock and no boot ID.
func SystemUptime() Uptime { return systemUptime }

// ManualClock is a Clock that moves only when told; for tests and
// simulations. The zero value reads 0. It is safe for simultaneous use.
type ManualClock struct {
	mu  sync.Mutex
	now int64
}

// NewManualClock returns a ManualClock reading t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{now: t.UnixMilli()} }

// Now returns the clock's time in Unix milliseconds.
func (c *ManualClock) Now() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (backward for a negative d).
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now += d.Milliseconds()
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t.UnixMilli()
	c.mu.Unlock()
}
