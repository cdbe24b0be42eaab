package actors

import (
	"context"
	"time"
)

// SleepUntil waits until the engine clock reads at or later, and returns
// nil then, or ctx's error once ctx ends first. On a ManualClock it
// returns once the clock is moved there (ManualClock.Waiters counts the
// wait); on a running clock it wakes by runtime timers, looking at the
// engine clock again at least once a minute, since the engine clock
// counts time the machine was suspended.
func (e *Engine) SleepUntil(ctx context.Context, at time.Time) error {
	target := at.UnixMilli()
	for e.clock.Now() < target {
		ch, stop := wakeAt(e.clock, target)
		select {
		case <-ch:
			stop()
		case <-ctx.Done():
			stop()
			return ctx.Err()
		}
	}
	return nil
}
