package dashboard

import "time"

// snapshot is a reading and the instant it was taken.
type snapshot struct {
	at time.Time
	r  reading
}

// history is a ring of snapshots of the cumulative counters, at least
// every apart, reaching back just past keep: the latest snapshot at or
// before now-keep and every one after it, so at most keep/every+2. A
// window's figures are the difference between the latest reading and
// the snapshot at or just before the window's start.
//
// The counters were all zero at started (the process's start), which
// stands for a snapshot of zeros there. history never reads the clock;
// it is not safe for simultaneous use.
type history struct {
	started     time.Time
	every, keep time.Duration
	snaps       []snapshot
}

// due reports whether a snapshot taken at now would be kept.
func (h *history) due(now time.Time) bool {
	n := len(h.snaps)
	return n == 0 || now.Before(h.snaps[n-1].at) || now.Sub(h.snaps[n-1].at) >= h.every
}

// record keeps r, taken at now, when a snapshot is due, and drops the
// snapshots no window reaches any more. Snapshots after now (a clock
// that went back) are dropped first: they could never be a window's
// start again.
func (h *history) record(now time.Time, r reading) {
	for n := len(h.snaps); n > 0 && h.snaps[n-1].at.After(now); n-- {
		h.snaps = h.snaps[:n-1]
	}
	if !h.due(now) {
		return
	}
	h.snaps = append(h.snaps, snapshot{at: now, r: r})
	drop := 0
	for drop+1 < len(h.snaps) && !h.snaps[drop+1].at.After(now.Add(-h.keep)) {
		drop++
	}
	if drop > 0 {
		h.snaps = append(h.snaps[:0], h.snaps[drop:]...)
	}
}

// base returns the snapshot a window of length ending at now counts
// from: the latest at or before now-length. fromStart is set when the
// process is younger than the window: the base is then the zeros at
// started. Without a snapshot old enough the base is also the zeros at
// started, which are older than the window's start.
func (h *history) base(now time.Time, length time.Duration) (s snapshot, fromStart bool) {
	start := now.Add(-length)
	if h.started.After(start) {
		return snapshot{at: h.started}, true
	}
	for i := len(h.snaps) - 1; i >= 0; i-- {
		if !h.snaps[i].at.After(start) {
			return h.snaps[i], false
		}
	}
	return snapshot{at: h.started}, false
}
