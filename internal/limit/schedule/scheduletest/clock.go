// Package scheduletest provides a fake clock for tests of code that runs
// a schedule.Runner.
package scheduletest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pinbot/pinbot/internal/limit/schedule"
)

var _ schedule.Clock = (*Clock)(nil)

// Clock is a schedule.Clock that moves only when told: its timers fire
// when Set or Advance reaches their instant. It is safe for simultaneous
// use.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	timers  map[*timer]struct{} // pending
	changed chan struct{}       // closed and replaced when timers change
}

type timer struct {
	c  *Clock
	at time.Time
	ch chan time.Time
}

// NewClock returns a clock reading t.
func NewClock(t time.Time) *Clock {
	return &Clock{now: t, timers: make(map[*timer]struct{}), changed: make(chan struct{})}
}

// notify wakes WaitTimers; c.mu is held.
func (c *Clock) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// WaitTimers blocks until exactly n timers are pending, and returns ctx.Err() if
// ctx is done first. A test calls it to know that the code under test has
// armed its timer, that is, finished what it does before sleeping.
func (c *Clock) WaitTimers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		pending, changed := len(c.timers), c.changed
		c.mu.Unlock()
		if pending == n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("scheduletest: %d timers pending, waiting for %d: %w", pending, n, ctx.Err())
		}
	}
}

// WaitTimerAt blocks until a timer for instant at is pending, and returns
// ctx.Err() if ctx is done first. A test calls it to know that the code
// under test sleeps until at.
func (c *Clock) WaitTimerAt(ctx context.Context, at time.Time) error {
	for {
		c.mu.Lock()
		found, changed := false, c.changed
		for tm := range c.timers {
			if tm.at.Equal(at) {
				found = true
				break
			}
		}
		c.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("scheduletest: no timer pending for %v: %w", at, ctx.Err())
		}
	}
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
	c.notify()
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
	c.notify()
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
	if pending {
		delete(t.c.timers, t)
		t.c.notify()
	}
	return pending
}
