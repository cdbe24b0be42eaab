package cluster

import "time"

// Clock is the monotonic clock a member times its lease with. Its origin
// is its own: only differences between its readings mean anything.
type Clock interface {
	// Now returns the time since the clock's origin. It never decreases.
	Now() time.Duration
	// Wake returns a channel closed once Now reads at or past at, or
	// sooner (the caller looks at the clock again), and a function that
	// releases the wait.
	Wake(at time.Duration) (<-chan struct{}, func())
}

// maxTimerSleep bounds one sleep of a runtime timer on the system clock:
// the system clock counts time the machine spent suspended and runtime
// timers may not, so a waiter looks at the clock again at least this
// often.
const maxTimerSleep = 250 * time.Millisecond

// SystemClock returns the machine's clock: on Linux CLOCK_BOOTTIME, which
// keeps counting while the machine is suspended (etcd's leases expire
// meanwhile), elsewhere Go's monotonic clock. It is safe for simultaneous
// use.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Duration { return now() }

func (systemClock) Wake(at time.Duration) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	d := min(at-now(), maxTimerSleep)
	if d <= 0 {
		close(ch)
		return ch, func() {}
	}
	t := time.AfterFunc(d, func() { close(ch) })
	return ch, func() { t.Stop() }
}
