// Package scheduletest provides a fake clock for tests of code that runs
// a schedule.Runner.
package scheduletest

import (
	"sync"
	"time"

	"github.com/pinbot/pinbot/actors/schedule"
)

var _ schedule.Clock = (*Clock)(nil)

// Clock is a schedule.Clock that moves only when told: its timers fire
// when Set or Advance reaches their instant. It is safe for simultaneous
// use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*timer]struct{} // pending
}

type timer struct {
	c  *Clock
	at time.Time
	ch chan time.Time
}

// NewClock returns a clock reading t.
func NewClock(t time.Time) *Clock {
	return &Clock{now: t, timers: make(map[*timer]struct{})}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Timer returns a timer that fires once the clock reads at or after at;
// at once if it does already.
func (c *Clock) Timer(at time.Time) schedule.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: at, ch: make(chan time.Time, 1)}
	if !at.After(c.now) {
		t.ch <- c.now
		return t
	}
	c.timers[t] = struct{}{}
	return t
}

// Set moves the clock to t and fires the timers due at or before t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	for tm := range c.timers {
		if !tm.at.After(t) {
			delete(c.timers, tm)
			tm.ch <- t
		}
	}
}

// Advance moves the clock forward by d; see Set.
func (c *Clock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Timers returns the number of timers that have not fired or been
// stopped.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, pending := t.c.timers[t]
	delete(t.c.timers, t)
	return pending
}
