package schedule

import (
	"math"
	"time"
)

// SlidingLog allows limit calls in any rolling width: a call recorded at T
// counts at every instant now with T > now-width, that is until (not
// including) T+width, the semantics of actors.Window. It keeps the times
// of its newest limit calls, oldest first, which is all it can ever need:
// a log holding limit calls that count allows none.
//
// Ready is exact. Write e_0 ≤ … ≤ e_{limit-1} for the newest limit calls,
// the missing ones (fewer recorded) taken as -∞. The k-th waiting job
// (k ≥ 0) can start at
//
//	ready(k) = max(now, e_{k mod limit} + width) + ⌊k/limit⌋·width
//
// The first limit jobs each take the slot of one recorded call, freed when
// that call stops counting; from then on each job takes the slot of the
// job limit places ahead of it, one width later. This holds when every
// recorded call is at or before now (so that job 0, starting no earlier
// than now, frees its slot no earlier than e_{limit-1} does).
//
// The zero value is not usable; call NewSlidingLog or Rule.NewPolicy.
type SlidingLog struct {
	width int64   // ns
	limit int     // calls allowed per width
	ts    []int64 // ring of call times (Unix ns), grown on demand up to limit
	head  int     // index of the oldest entry
	n     int     // number of entries
}

// NewSlidingLog returns an empty log allowing limit calls per width. It
// fails unless limit and width are positive.
func NewSlidingLog(limit int, width time.Duration) (*SlidingLog, error) {
	if err := (Rule{Kind: KindSlidingLog, Calls: limit, Per: width}).Validate(); err != nil {
		return nil, err
	}
	return newSlidingLog(limit, width), nil
}

func newSlidingLog(limit int, width time.Duration) *SlidingLog {
	return &SlidingLog{width: int64(width), limit: limit}
}

// at returns the i-th oldest entry.
func (l *SlidingLog) at(i int) int64 {
	j := l.head + i
	if j >= len(l.ts) {
		j -= len(l.ts)
	}
	return l.ts[j]
}

func (l *SlidingLog) set(i int, t int64) {
	j := l.head + i
	if j >= len(l.ts) {
		j -= len(l.ts)
	}
	l.ts[j] = t
}

// Ready returns the instant the job with waiting jobs ahead of it can
// start; see SlidingLog for the formula.
func (l *SlidingLog) Ready(now time.Time, waiting int) time.Time {
	return fromUnixNano(l.ready(unixNano(now), waiting))
}

func (l *SlidingLog) ready(now int64, waiting int) int64 {
	r := now
	// Slot waiting%limit of the newest limit calls; the first limit-n
	// slots are empty.
	if j := waiting%l.limit - (l.limit - l.n); j >= 0 {
		if free := l.at(j) + l.width; free > r {
			r = free
		}
	}
	return addSteps(r, waiting/l.limit, l.width)
}

// Count returns how many recorded calls count at now.
func (l *SlidingLog) Count(now time.Time) int {
	cutoff := unixNano(now) - l.width
	c := 0
	for i := l.n - 1; i >= 0 && l.at(i) > cutoff; i-- {
		c++
	}
	return c
}

// Record records a call at t. Entries stay ascending whatever order they
// arrive in; when the log holds limit calls the oldest is dropped.
func (l *SlidingLog) Record(t time.Time) { l.record(unixNano(t)) }

func (l *SlidingLog) record(t int64) {
	if l.n == len(l.ts) && l.n < l.limit {
		ts := make([]int64, min(max(2*len(l.ts), 4), l.limit))
		for i := range l.n {
			ts[i] = l.at(i)
		}
		l.ts, l.head = ts, 0
	}
	if l.n == len(l.ts) { // full: drop the oldest
		if t <= l.at(0) {
			return // t is itself the oldest
		}
		l.head++
		if l.head == len(l.ts) {
			l.head = 0
		}
		l.n--
	}
	i := l.n // insert after the last entry ≤ t, almost always the tail
	for i > 0 && l.at(i-1) > t {
		l.set(i, l.at(i-1))
		i--
	}
	l.set(i, t)
	l.n++
}

// Expiry returns the instant the newest recorded call stops counting.
func (l *SlidingLog) Expiry() time.Time {
	if l.n == 0 {
		return time.Time{}
	}
	return fromUnixNano(l.expiry())
}

func (l *SlidingLog) expiry() int64 {
	if l.n == 0 {
		return math.MinInt64
	}
	return addSteps(l.at(l.n-1), 1, l.width)
}
