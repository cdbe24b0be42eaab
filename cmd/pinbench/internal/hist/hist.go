// Package hist records latencies in a log-linear histogram: exact below
// 256 ns, and above that 128 buckets per power of two, so every recorded
// value is kept to within 1/128 (0.8%) of itself in constant memory and
// constant time per value.
//
// The layout follows HdrHistogram's: values below 2·S (S = 128 sub-buckets)
// each have their own bucket; above, the value's top eight significant bits
// pick the bucket within its power of two.
package hist

import (
	"math"
	"math/bits"
	"time"
)

const (
	subBits = 7
	subs    = 1 << subBits // sub-buckets per power of two
	// maxShift bounds the tracked range: values up to 2^(maxShift+subBits+1)
	// ns (about 73 minutes) have their own bucket; larger ones are counted in
	// the last bucket and still show in Max.
	maxShift = 34
	nBuckets = (maxShift + 2) * subs
)

// Histogram counts durations in log-linear buckets. The zero value is not
// usable; call New. A Histogram is not safe for simultaneous use: give each
// goroutine its own and Merge them.
type Histogram struct {
	counts []uint64
	n      uint64
	sum    float64 // ns
	min    int64   // ns
	max    int64   // ns
}

// New returns an empty histogram (about 36 KiB).
func New() *Histogram {
	return &Histogram{counts: make([]uint64, nBuckets), min: math.MaxInt64}
}

// index returns the bucket of v (ns, not negative).
func index(v uint64) int {
	if v < 2*subs {
		return int(v)
	}
	shift := bits.Len64(v) - (subBits + 1)
	if shift > maxShift {
		return nBuckets - 1
	}
	top := v >> uint(shift) // in [subs, 2·subs)
	return (shift+1)*subs + int(top) - subs
}

// bounds returns the smallest and largest value bucket i holds.
func bounds(i int) (lo, hi uint64) {
	if i < 2*subs {
		return uint64(i), uint64(i)
	}
	shift := i/subs - 1
	top := uint64(i%subs + subs)
	lo = top << uint(shift)
	return lo, lo + 1<<uint(shift) - 1
}

// Record adds one duration; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[index(uint64(v))]++
	h.n++
	h.sum += float64(v)
	h.min = min(h.min, v)
	h.max = max(h.max, v)
}

// Merge adds every value recorded in o to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// Count returns the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Min returns the smallest recorded value, exactly (0 when empty).
func (h *Histogram) Min() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.min)
}

// Max returns the largest recorded value, exactly (0 when empty).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean returns the mean of the recorded values, exactly (0 when empty).
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Quantile returns the value at quantile q (0 to 1): the smallest value v
// such that at least a fraction q of the recorded values are at most v, to
// within the bucket width (0.8%), never below Min nor above Max. It
// returns 0 for an empty histogram.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			if i == nBuckets-1 {
				return time.Duration(h.max) // values beyond the tracked range
			}
			_, hi := bounds(i)
			return time.Duration(min(max(int64(hi), h.min), h.max))
		}
	}
	return time.Duration(h.max)
}

// Point is one point of a latency distribution: the value at a quantile.
type Point struct {
	Quantile float64
	Value    time.Duration
}

// Spectrum returns the values at quantiles 0 and 1-10^(-k/steps) for k
// from 1 while the quantile stays within what Count values can resolve,
// ending at Max: the percentile spectrum a latency chart draws. steps is
// the number of points per factor of ten in the tail.
func (h *Histogram) Spectrum(steps int) []Point {
	if h.n == 0 {
		return nil
	}
	steps = max(steps, 1)
	pts := []Point{{0, h.Min()}}
	for k := 1; ; k++ {
		tail := math.Pow(10, -float64(k)/float64(steps))
		if tail*float64(h.n) < 1 {
			break
		}
		q := 1 - tail
		pts = append(pts, Point{q, h.Quantile(q)})
	}
	return append(pts, Point{1, h.Max()})
}
