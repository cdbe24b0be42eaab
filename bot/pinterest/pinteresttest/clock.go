package pinteresttest

import (
	"sync"
	"time"
)

// Clock is a clock that moves only when told to, for the Server and the
// code under test to share. Like a machine's, it keeps two readings: the
// wall clock (Now), which Set and Step move back or forward as an
// operator or NTP does, and monotonic time (Elapsed), which only Advance
// moves, and only forward, as time passes. The zero value reads as the
// zero time. A Clock is safe for simultaneous use by multiple goroutines.
type Clock struct {
	mu   sync.Mutex
	t    time.Time
	mono time.Duration
}

// NewClock returns a Clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the wall clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Elapsed returns the monotonic time the clock has moved since it was
// made.
func (c *Clock) Elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono
}

// Advance lets d pass: the wall clock and monotonic time move forward by
// d. A negative d sets the wall clock back alone, as Step does. It returns
// the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.mono += max(d, 0)
	return c.t
}

// Step sets the wall clock forward by d (back if d is negative) with no
// time passing: monotonic time does not move.
func (c *Clock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set sets the wall clock to t, as Step does.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}
