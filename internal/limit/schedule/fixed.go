package schedule

import (
	"math"
	"time"
)

// FixedWindow allows reservoir calls per window, windows being aligned to
// multiples of the window length from the Unix epoch: the window of t is
// ⌊t/window⌋, and starts at windowStart(t) = ⌊t/window⌋·window.
//
// Ready is exact. With free = reservoir - (calls in the window of now), the
// k-th waiting job (k ≥ 0) can start at
//
//	ready(k) = now                                                  if k < free
//	ready(k) = windowStart(now) + (1 + ⌊(k-free)/reservoir⌋)·window  otherwise
//
// the first free jobs using what is left of the current window, the next
// reservoir jobs starting with the next window, and so on. The package
// documentation compares it with the estimate it replaces.
//
// The zero value is not usable; call NewFixedWindow or Rule.NewPolicy.
type FixedWindow struct {
	window    int64 // ns
	reservoir int   // calls allowed per window
	start     int64 // start of the window of the newest recorded call
	calls     int   // calls recorded in that window; 0 when none
}

// NewFixedWindow returns a policy allowing reservoir calls per window. It
// fails unless reservoir and window are positive.
func NewFixedWindow(reservoir int, window time.Duration) (*FixedWindow, error) {
	if err := (Rule{Kind: KindFixedWindow, Calls: reservoir, Per: window}).Validate(); err != nil {
		return nil, err
	}
	return newFixedWindow(reservoir, window), nil
}

func newFixedWindow(reservoir int, window time.Duration) *FixedWindow {
	return &FixedWindow{window: int64(window), reservoir: reservoir}
}

// windowStart returns ⌊t/w⌋·w, rounding toward -∞ for instants before the
// epoch too.
func windowStart(t, w int64) int64 {
	r := t % w
	if r < 0 {
		r += w
	}
	return t - r
}

// used returns the calls recorded in the window that starts at ws.
func (f *FixedWindow) used(ws int64) int {
	if f.calls > 0 && f.start == ws {
		return f.calls
	}
	return 0
}

// Ready returns the instant the job with waiting jobs ahead of it can
// start; see FixedWindow for the formula.
func (f *FixedWindow) Ready(now time.Time, waiting int) time.Time {
	return fromUnixNano(f.ready(unixNano(now), waiting))
}

func (f *FixedWindow) ready(now int64, waiting int) int64 {
	ws := windowStart(now, f.window)
	free := max(f.reservoir-f.used(ws), 0)
	if waiting < free {
		return now
	}
	return addSteps(ws, 1+(waiting-free)/f.reservoir, f.window)
}

// Count returns how many recorded calls count at now: those in the window
// of now.
func (f *FixedWindow) Count(now time.Time) int {
	return f.used(windowStart(unixNano(now), f.window))
}

// Record records a call at t. A call in a window before that of the
// newest recorded call is ignored: that window is over.
func (f *FixedWindow) Record(t time.Time) { f.record(unixNano(t)) }

func (f *FixedWindow) record(t int64) {
	switch ws := windowStart(t, f.window); {
	case f.calls == 0 || ws > f.start:
		f.start, f.calls = ws, 1
	case ws == f.start:
		f.calls++
	}
}

// Expiry returns the end of the window of the newest recorded call.
func (f *FixedWindow) Expiry() time.Time {
	if f.calls == 0 {
		return time.Time{}
	}
	return fromUnixNano(f.expiry())
}

func (f *FixedWindow) expiry() int64 {
	if f.calls == 0 {
		return math.MinInt64
	}
	return addSteps(f.start, 1, f.window)
}
