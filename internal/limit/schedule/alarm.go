package schedule

import (
	"math"
	"time"
)

// Alarm is a function a Runner calls once, at an instant, on the timer it
// runs jobs on; Runner.At files one. It is safe for simultaneous use.
type Alarm struct {
	at    int64  // Unix ns
	seq   uint64 // filing order, among the alarms of one instant
	owner alarmOwner

	// Guarded by the owner's lock.
	fn    func(now time.Time) // nil once taken to be called, or stopped
	index int                 // in the owner's alarmHeap; -1 in none
}

// alarmOwner is the Runner that filed an alarm.
type alarmOwner interface {
	stop(a *Alarm) bool
}

// At returns the instant the alarm was filed for.
func (a *Alarm) At() time.Time { return fromUnixNano(a.at) }

// Stop keeps the alarm from firing and reports whether it did so: false
// when the alarm was stopped before, or its instant has come and Run has
// taken it to call (the call may not have returned yet).
func (a *Alarm) Stop() bool { return a.owner.stop(a) }

// alarmNano returns t in Unix ns, saturated to the range an int64 holds:
// an alarm's instant is a wish, not a limit, so it is never refused.
func alarmNano(t time.Time) int64 {
	switch {
	case t.Before(fromUnixNano(math.MinInt64)):
		return math.MinInt64
	case t.After(fromUnixNano(math.MaxInt64)):
		return math.MaxInt64
	}
	return unixNano(t)
}

// alarmHeap is a min-heap of alarms by instant, then filing order; each
// alarm knows its index, so that Stop removes it in O(log n).
type alarmHeap []*Alarm

func (h alarmHeap) less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}

func (h alarmHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h alarmHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down moves h[i] down and reports whether it moved.
func (h alarmHeap) down(i int) bool {
	start := i
	for {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if r := c + 1; r < len(h) && h.less(r, c) {
			c = r
		}
		if !h.less(c, i) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}

func (h *alarmHeap) push(a *Alarm) {
	a.index = len(*h)
	*h = append(*h, a)
	h.up(a.index)
}

// remove removes h[i].
func (h *alarmHeap) remove(i int) {
	old := *h
	last := len(old) - 1
	a := old[i]
	if i != last {
		old[i] = old[last]
		old[i].index = i
	}
	old[last] = nil
	*h = old[:last]
	if i != last && !(*h).down(i) {
		(*h).up(i)
	}
	a.index = -1
}
