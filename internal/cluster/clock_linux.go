package cluster

import (
	"time"

	"golang.org/x/sys/unix"
)

var monoStart = time.Now()

// boottime says whether CLOCK_BOOTTIME can be read; decided once, so that
// the clock never switches between the two.
var boottime = func() bool {
	var ts unix.Timespec
	return unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) == nil
}()

// now reads CLOCK_BOOTTIME, or Go's monotonic clock where the kernel
// lacks it.
func now() time.Duration {
	if !boottime {
		return time.Since(monoStart)
	}
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return time.Duration(ts.Nano())
}
