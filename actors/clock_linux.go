package actors

import "golang.org/x/sys/unix"

// elapsed reads CLOCK_BOOTTIME in nanoseconds: monotonic like Go's own
// monotonic clock, but it keeps counting while the machine is suspended, so
// a pin made before a suspend is not counted as younger than it is. Where
// the kernel lacks it, Go's monotonic clock is used for the whole run.
var elapsed = func() func() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return fallbackElapsed
	}
	return func() int64 {
		var ts unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) // worked at start
		return ts.Nano()
	}
}()
