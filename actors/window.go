package actors

import (
	"fmt"
	"math"
	"time"
)

// Default limits: Pinterest allows 100 pins per account in any rolling 12 hours.
const (
	DefaultLimit  = 100
	DefaultWindow = 12 * time.Hour
)

// Never is the instant returned when something cannot happen at any time.
const Never = int64(math.MaxInt64)

// Window is the sliding-window log of one account: a ring buffer holding the
// times (Unix milliseconds) of its newest pins, oldest first.
//
// A pin recorded at T counts at every instant now with T > now-width, that is
// until (not including) T+width: with a 12-hour window a pin at 12:00 Monday
// still counts at 23:59:59.999 and no longer at 00:00 Tuesday. A new pin is
// allowed while fewer than limit pins count.
//
// Window never reads a clock: every method takes now. It keeps at most limit
// entries, which is all the log can ever need, since a window that holds limit
// pins allows none. The zero value is not usable; call NewWindow. A Window is
// not safe for simultaneous use: the account actor that owns it serializes
// every call.
//
// Times are stored as 32-bit offsets from a base instant, half the memory of
// full timestamps (a full ring of 100 pins takes 400 bytes, not 800). So the
// entries span at most MaxWindow: a pin more than MaxWindow older than the
// newest one is forgotten. That changes no answer from the newest pin's
// instant on, which is every instant the engine asks about (its clock
// never runs behind a recorded pin): such a pin stopped counting before
// then, since the width is at most MaxWindow.
//
// A ring of up to smallRing entries is held inside the Window itself, not
// in an array of its own: an account with few pins then costs the
// collector no object for it. So a Window must not be copied once it holds
// pins (see ledger.clone).
type Window struct {
	width int64    // window length, ms
	base  int64    // instant of offset 0
	limit int      // pins allowed per window
	ts    []uint32 // ring storage (offsets from base), grown on demand up to limit entries: small, then an array of its own
	head  int      // index of the oldest entry
	n     int      // number of entries
	small [smallRing]uint32
}

// smallRing is the size of the ring a Window holds inside itself.
const smallRing = 4

// MaxWindow is the longest window a Window supports: 2^31 ms, about 24.8
// days.
const MaxWindow = time.Duration(maxSpan) * time.Millisecond

// maxSpan is MaxWindow in ms: how far below the newest pin offsets reach
// after a rebase, and as far above.
const maxSpan = 1 << 31

// NewWindow returns an empty window allowing limit pins per width. It
// fails unless limit is positive and width is between a millisecond and
// MaxWindow.
func NewWindow(limit int, width time.Duration) (*Window, error) {
	switch {
	case limit < 1:
		return nil, fmt.Errorf("actors: window limit %d: want at least 1", limit)
	case width < time.Millisecond || width > MaxWindow:
		return nil, fmt.Errorf("actors: window width %v: want 1ms to %v", width, MaxWindow)
	}
	w := &Window{}
	w.init(limit, width)
	return w, nil
}

func (w *Window) init(limit int, width time.Duration) {
	w.width = width.Milliseconds()
	w.limit = limit
	w.ts = nil
	w.base = 0
	w.head, w.n = 0, 0
}

// Limit is the number of pins the window allows.
func (w *Window) Limit() int { return w.limit }

// Width is the window length.
func (w *Window) Width() time.Duration { return time.Duration(w.width) * time.Millisecond }

// at returns the i-th oldest entry.
func (w *Window) at(i int) int64 {
	j := w.head + i
	if j >= len(w.ts) {
		j -= len(w.ts)
	}
	return w.base + int64(w.ts[j])
}

// firstLive returns the index (0 = oldest) of the first entry that still
// counts at now; entries from there on all count, since they are ascending.
func (w *Window) firstLive(now int64) int { return w.firstAfter(now - w.width) }

// firstAfter returns the index (0 = oldest) of the first entry later than
// cutoff, or n when there is none.
func (w *Window) firstAfter(cutoff int64) int {
	lo, hi := 0, w.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if w.at(mid) > cutoff {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// Count returns how many recorded pins count at now.
func (w *Window) Count(now int64) int { return w.n - w.firstLive(now) }

// Allow reports whether one more pin may be recorded at now.
func (w *Window) Allow(now int64) bool { return w.Count(now) < w.limit }

// Record adds a pin at t. Entries stay ascending whatever order they arrive
// in. When the ring is full the oldest entry is dropped; callers record only
// what Allow permitted, so that entry no longer counts. Entries more than
// MaxWindow older than the newest are dropped too (see Window).
func (w *Window) Record(t int64) {
	if w.n == 0 || t > w.base+math.MaxUint32 {
		w.rebase(t)
	}
	if t < w.base {
		return // more than MaxWindow older than the newest: never counts again
	}
	if w.n == len(w.ts) && w.n < w.limit {
		w.grow()
	}
	if w.n == len(w.ts) {
		if t <= w.at(0) {
			return // t is itself the oldest: it is the one to drop
		}
		w.head++
		if w.head == len(w.ts) {
			w.head = 0
		}
		w.n--
	}
	// Insert after the last entry <= t (almost always at the tail).
	i := w.n
	for i > 0 && w.at(i-1) > t {
		i--
	}
	for k := w.n; k > i; k-- {
		w.set(k, w.at(k-1))
	}
	w.set(i, t)
	w.n++
}

// Move moves a pin recorded at from to to, keeping the entries ascending;
// when no pin is recorded at from (it was dropped, being too old to count),
// it records a pin at to.
func (w *Window) Move(from, to int64) {
	w.Remove(from)
	w.Record(to)
}

// Remove removes one pin recorded at t and reports whether there was one.
func (w *Window) Remove(t int64) bool {
	for i := w.n - 1; i >= 0; i-- {
		switch at := w.at(i); {
		case at == t:
			for k := i; k < w.n-1; k++ {
				w.set(k, w.at(k+1))
			}
			w.n--
			return true
		case at < t:
			return false
		}
	}
	return false
}

// grow enlarges the ring (it starts empty: most accounts pin rarely, and an
// idle account should cost little memory), keeping the entries in order.
// The first smallRing entries fit in the Window itself.
func (w *Window) grow() {
	size := min(max(2*len(w.ts), smallRing), w.limit)
	var ts []uint32
	if size <= smallRing && len(w.ts) == 0 {
		ts = w.small[:size]
	} else {
		ts = make([]uint32, size)
	}
	for i := 0; i < w.n; i++ {
		ts[i] = uint32(w.at(i) - w.base)
	}
	w.ts, w.head = ts, 0
}

// set stores t, which must lie in [base, base+MaxUint32], as the i-th
// oldest entry.
func (w *Window) set(i int, t int64) {
	j := w.head + i
	if j >= len(w.ts) {
		j -= len(w.ts)
	}
	w.ts[j] = uint32(t - w.base)
}

// rebase moves the base to maxSpan before newest, which is later than
// every entry (or the window is empty): from then on entries from the new
// base to maxSpan-1 ms after newest fit. Entries older than the new base
// are dropped: they are more than MaxWindow older than newest.
func (w *Window) rebase(newest int64) {
	base := newest - maxSpan
	drop := 0
	for drop < w.n && w.at(drop) < base {
		drop++
	}
	if drop > 0 {
		w.head = (w.head + drop) % len(w.ts)
		w.n -= drop
	}
	shift := base - w.base // positive when entries are kept: base only moves forward then
	for i := 0; i < w.n; i++ {
		j := w.head + i
		if j >= len(w.ts) {
			j -= len(w.ts)
		}
		w.ts[j] = uint32(int64(w.ts[j]) - shift)
	}
	w.base = base
}

// FreeAt returns the earliest instant, not before now, at which at least k
// slots are free, assuming no new pins are recorded. It returns now when k
// slots are free already and Never when k exceeds the limit.
func (w *Window) FreeAt(now int64, k int) int64 {
	if k > w.limit {
		return Never
	}
	first := w.firstLive(now)
	used := w.n - first
	need := k - (w.limit - used)
	if need <= 0 {
		return now
	}
	// The need-th oldest live pin must stop counting.
	return w.at(first+need-1) + w.width
}

// NextFree returns the instant the next slot is free: now if one is free.
func (w *Window) NextFree(now int64) int64 { return w.FreeAt(now, 1) }

// Times appends the recorded pins that count at now to dst, oldest first.
func (w *Window) Times(dst []int64, now int64) []int64 {
	for i := w.firstLive(now); i < w.n; i++ {
		dst = append(dst, w.at(i))
	}
	return dst
}

// Newest returns the newest recorded pin, or 0 when there is none.
func (w *Window) Newest() int64 {
	if w.n == 0 {
		return 0
	}
	return w.at(w.n - 1)
}

// offsets appends the entries, oldest first, as offsets from the window's
// base (see Window), to dst: with the base, limit and width, the whole
// window (see restoreOffsets).
func (w *Window) offsets(dst []uint32) []uint32 {
	for i := 0; i < w.n; i++ {
		j := w.head + i
		if j >= len(w.ts) {
			j -= len(w.ts)
		}
		dst = append(dst, w.ts[j])
	}
	return dst
}

// restoreOffsets makes w, initialized with its width, hold the entries
// offs (offsets from base, oldest first, as offsets returned them) under
// limit, which is at least len(offs).
func (w *Window) restoreOffsets(base int64, limit int, offs []uint32) {
	w.base, w.limit = base, limit
	w.head, w.n = 0, len(offs)
	switch {
	case len(offs) == 0:
		w.ts = nil
	case len(offs) <= smallRing:
		w.ts = w.small[:min(smallRing, limit)]
	default:
		size := smallRing
		for size < len(offs) {
			size *= 2
		}
		w.ts = make([]uint32, min(size, limit))
	}
	copy(w.ts, offs)
}
