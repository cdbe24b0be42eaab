package scheduletest

import (
	"context"
	"testing"
	"time"
)

func TestClockTimers(t *testing.T) {
	t0 := time.Date(2026, time.November, 16, 12, 0, 0, 0, time.UTC)
	c := NewClock(t0)
	past := c.Timer(t0)
	a := c.Timer(t0.Add(time.Second))
	b := c.Timer(t0.Add(2 * time.Second))
	fired := func(tm interface{ C() <-chan time.Time }) bool {
		select {
		case <-tm.C():
			return true
		default:
			return false
		}
	}
	if !fired(past) {
		t.Error("a timer for the clock's time did not fire at once")
	}
	c.Advance(time.Second - time.Nanosecond)
	if fired(a) || c.Timers() != 2 {
		t.Errorf("before its instant: fired %v, %d pending want 2", fired(a), c.Timers())
	}
	c.Advance(time.Nanosecond)
	if !fired(a) || c.Timers() != 1 {
		t.Errorf("at its instant: not fired, or %d pending want 1", c.Timers())
	}
	if !b.Stop() || b.Stop() || c.Timers() != 0 {
		t.Error("Stop: want true once for a pending timer, then false, and none pending")
	}
	c.Set(t0.Add(time.Hour))
	if fired(b) {
		t.Error("a stopped timer fired")
	}
}

func TestClockWaitTimerAt(t *testing.T) {
	t0 := time.Date(2026, time.November, 16, 12, 0, 0, 0, time.UTC)
	c := NewClock(t0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.WaitTimerAt(ctx, t0.Add(time.Second)); err == nil {
		t.Error("no timer pending: WaitTimerAt returned nil")
	}
	// 10 s of real time is a hang, not a timing assumption.
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.WaitTimerAt(ctx, t0.Add(time.Second)) }()
	c.Timer(t0.Add(2 * time.Second))
	c.Timer(t0.Add(time.Second))
	if err := <-done; err != nil {
		t.Errorf("WaitTimerAt: %v", err)
	}
}
