package actors

import (
	"context"
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
	mu      sync.Mutex
	now     int64
	waiters []clockWaiter
	armed   chan struct{} // closed and replaced when a wait is armed
}

type clockWaiter struct {
	at int64
	ch chan struct{}
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
	c.fireLocked()
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t.UnixMilli()
	c.fireLocked()
	c.mu.Unlock()
}

// fireLocked closes the channels of the waiters whose instant has come.
func (c *ManualClock) fireLocked() {
	keep := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at <= c.now {
			close(w.ch)
		} else {
			keep = append(keep, w)
		}
	}
	clear(c.waiters[len(keep):])
	c.waiters = keep
}

// wakeAt returns a channel closed once the clock reads at or later, and a
// function that stops waiting.
func (c *ManualClock) wakeAt(at int64) (<-chan struct{}, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	if at <= c.now {
		close(ch)
		return ch, func() {}
	}
	c.waiters = append(c.waiters, clockWaiter{at: at, ch: ch})
	if c.armed != nil {
		close(c.armed)
		c.armed = nil
	}
	return ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, w := range c.waiters {
			if w.ch == ch {
				c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
				return
			}
		}
	}
}

// Waiters returns how many waits on the clock are armed: tests use it to
// know that the engine is waiting for an instant before they move the
// clock.
func (c *ManualClock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// WaitWaiters returns once at least n waits are armed on the clock, or
// with ctx's error: tests use it to know that something waits for an
// instant before they move the clock.
func (c *ManualClock) WaitWaiters(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		if len(c.waiters) >= n {
			c.mu.Unlock()
			return nil
		}
		if c.armed == nil {
			c.armed = make(chan struct{})
		}
		armed := c.armed
		c.mu.Unlock()
		select {
		case <-armed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// waker is a Clock that can wake a waiter at an instant of its own:
// ManualClock. The engine waits on other clocks with timers of the
// runtime.
type waker interface {
	wakeAt(at int64) (<-chan struct{}, func())
}

// maxTimerSleep bounds one sleep of a runtime timer on the engine clock:
// the engine clock counts time suspended and runtime timers may not, so a
// waiter looks at the clock again at least this often.
const maxTimerSleep = time.Minute

// wakeAt returns a channel closed once clock reads at or later (or, for a
// clock that cannot wake waiters itself, once at most maxTimerSleep has
// passed: the caller looks at the clock again), and a stop function.
func wakeAt(clock Clock, at int64) (<-chan struct{}, func()) {
	if w, ok := clock.(waker); ok {
		return w.wakeAt(at)
	}
	d := min(time.Duration(at-clock.Now())*time.Millisecond, maxTimerSleep)
	ch := make(chan struct{})
	t := time.AfterFunc(d, func() { close(ch) })
	return ch, func() { t.Stop() }
}
