package schedule

import (
	"math"
	"math/bits"
	"time"
)

// Policy is the rate-limit state of one group: the calls it has made and,
// from them, the instant each waiting job may start. A policy never reads
// a clock: every method takes the time. A Policy is not safe for
// simultaneous use. Rule.NewPolicy makes one; a Scheduler makes its own
// from the Rule of each group. It answers when a waiting job may start,
// for one group, where a limit.Policy answers whether a request may go
// now, per key: the two are different contracts.
type Policy interface {
	// Ready returns the earliest instant, not before now, at which a job
	// may start when waiting jobs are queued ahead of it, each of them
	// starting at its own earliest instant, in order, and recorded then.
	// now must not be before the newest recorded call.
	Ready(now time.Time, waiting int) time.Time
	// Record records a call made at t.
	Record(t time.Time)
	// Expiry returns the instant from which no recorded call constrains
	// any later call, so that the policy answers as a new one would: the
	// zero Time when nothing was recorded.
	Expiry() time.Time
}

var (
	_ Policy = (*SlidingLog)(nil)
	_ Policy = (*FixedWindow)(nil)
	_ policy = (*SlidingLog)(nil)
	_ policy = (*FixedWindow)(nil)
)

// policy is Policy in Unix nanoseconds, what the Scheduler calls.
type policy interface {
	ready(now int64, waiting int) int64
	record(t int64)
	// expiry returns math.MinInt64 when nothing was recorded.
	expiry() int64
}

// newPolicy returns a new policy enforcing r, which must be valid.
func newPolicy(r Rule) policy {
	if r.Kind == KindSlidingLog {
		return newSlidingLog(r.Calls, r.Per)
	}
	return newFixedWindow(r.Calls, r.Per)
}

// Policies and the Scheduler compute in Unix nanoseconds. maxTime is the
// last instant they can hold; a ready time past it saturates to it.
const maxTime = math.MaxInt64

func unixNano(t time.Time) int64 { return t.UnixNano() }

func fromUnixNano(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// addSteps returns base + n·step (n ≥ 0, step > 0), or maxTime when that
// is past maxTime.
func addSteps(base int64, n int, step int64) int64 {
	if n == 0 {
		return base
	}
	hi, lo := bits.Mul64(uint64(n), uint64(step))
	if hi != 0 || lo > math.MaxInt64 {
		return maxTime
	}
	d := int64(lo)
	if base > 0 && d > maxTime-base {
		return maxTime
	}
	return base + d
}
