package actors

import (
	"sync"
	"time"
)

// Clock is the engine's source of "now", in Unix milliseconds. Decision
// logic never reads the wall clock directly: it asks a Clock, and tests pass
// a ManualClock.
type Clock interface {
	Now() int64
}

// RunningClock advances with a clock that only moves forward: it reads the
// wall clock once, at start, and from then on adds the elapsed time of the
// system's boot-time clock (monotonic, and counting time spent suspended).
// A wall-clock jump while running therefore neither expires pins early nor
// extends them. It is safe for simultaneous use.
type RunningClock struct {
	base  int64 // Unix ms at start
	start int64 // elapsed() at start, ns
}

// NewRunningClock returns a clock that starts at start (Unix ms), normally
// the wall time, or later when the stored state says time went backwards.
func NewRunningClock(start int64) *RunningClock {
	return &RunningClock{base: start, start: elapsed()}
}

// Now returns the current engine time in Unix milliseconds.
func (c *RunningClock) Now() int64 {
	return c.base + (elapsed()-c.start)/int64(time.Millisecond)
}

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
