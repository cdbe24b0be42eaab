package hist

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestBucketBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(v uint64) {
		t.Helper()
		i := index(v)
		lo, hi := bounds(i)
		if i == nBuckets-1 && v > hi {
			return // beyond the tracked range: clamped into the last bucket
		}
		if v < lo || v > hi {
			t.Fatalf("value %d in bucket %d = [%d, %d]", v, i, lo, hi)
		}
		if width := hi - lo + 1; width > 1 && width > v/subs {
			t.Fatalf("value %d: bucket [%d, %d] wider than 1/%d of it", v, lo, hi, subs)
		}
		if i > 0 {
			_, prevHi := bounds(i - 1)
			if prevHi+1 != lo {
				t.Fatalf("bucket %d starts at %d, previous ends at %d", i, lo, prevHi)
			}
		}
	}
	for v := uint64(0); v < 5000; v++ {
		check(v)
	}
	for range 100_000 {
		check(r.Uint64N(1 << 42))
	}
}

// run records values and checks the quantiles in steps, each within the
// histogram's precision above the exact answer.
func TestQuantileKnownInputs(t *testing.T) {
	type step struct {
		q    float64
		want time.Duration
	}
	tests := []struct {
		name   string
		values func(record func(time.Duration))
		steps  []step
	}{
		{
			name: "1..100 ns, exact buckets",
			values: func(rec func(time.Duration)) {
				for v := 1; v <= 100; v++ {
					rec(time.Duration(v))
				}
			},
			steps: []step{{0, 1}, {0.01, 1}, {0.5, 50}, {0.99, 99}, {0.999, 100}, {1, 100}},
		},
		{
			name: "1..100000 µs",
			values: func(rec func(time.Duration)) {
				for v := 1; v <= 100_000; v++ {
					rec(time.Duration(v) * time.Microsecond)
				}
			},
			steps: []step{
				{0.5, 50 * time.Millisecond},
				{0.9, 90 * time.Millisecond},
				{0.99, 99 * time.Millisecond},
				{0.999, 99_900 * time.Microsecond},
				{1, 100 * time.Millisecond},
			},
		},
		{
			name: "99 fast, 1 slow",
			values: func(rec func(time.Duration)) {
				for range 99 {
					rec(200 * time.Microsecond)
				}
				rec(3 * time.Second)
			},
			steps: []step{{0.5, 200 * time.Microsecond}, {0.99, 200 * time.Microsecond}, {0.995, 3 * time.Second}, {1, 3 * time.Second}},
		},
		{
			name:   "one value",
			values: func(rec func(time.Duration)) { rec(1234567) },
			steps:  []step{{0, 1234567}, {0.5, 1234567}, {1, 1234567}},
		},
	}
	for _, tt := range tests {
		h := New()
		tt.values(h.Record)
		for i, s := range tt.steps {
			got := h.Quantile(s.q)
			slack := s.want / subs
			if got < s.want || got > s.want+slack {
				t.Errorf("%s: step %d: Quantile(%v) = %v want %v (up to +%v)", tt.name, i, s.q, got, s.want, slack)
			}
		}
	}
}

func TestSummary(t *testing.T) {
	h := New()
	if h.Quantile(0.5) != 0 || h.Min() != 0 || h.Max() != 0 || h.Mean() != 0 || h.Spectrum(5) != nil {
		t.Fatal("empty histogram: want zeros")
	}
	for _, v := range []time.Duration{10, 20, 30, -5} {
		h.Record(v)
	}
	if h.Count() != 4 || h.Min() != 0 || h.Max() != 30 || h.Mean() != 15 {
		t.Fatalf("count %d min %v max %v mean %v; want 4 0s 30ns 15ns", h.Count(), h.Min(), h.Max(), h.Mean())
	}
	h.Record(5 * time.Hour) // beyond the tracked range
	if h.Max() != 5*time.Hour || h.Quantile(1) != 5*time.Hour {
		t.Fatalf("max %v, p100 %v; want 5h", h.Max(), h.Quantile(1))
	}
}

func TestMergeMatchesSingle(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	all, a, b := New(), New(), New()
	for i := range 50_000 {
		v := time.Duration(r.ExpFloat64() * float64(time.Millisecond))
		all.Record(v)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	a.Merge(b)
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 0.999, 1} {
		if x, y := all.Quantile(q), a.Quantile(q); x != y {
			t.Errorf("Quantile(%v): merged %v, single %v", q, y, x)
		}
	}
	if all.Count() != a.Count() || all.Min() != a.Min() || all.Max() != a.Max() {
		t.Errorf("merged count/min/max %d/%v/%v, single %d/%v/%v", a.Count(), a.Min(), a.Max(), all.Count(), all.Min(), all.Max())
	}
}

func TestSpectrum(t *testing.T) {
	h := New()
	for v := 1; v <= 10_000; v++ {
		h.Record(time.Duration(v) * time.Microsecond)
	}
	pts := h.Spectrum(2)
	// Quantiles 0, 1-10^-0.5, 0.9, ..., 0.9999 (1/10,000 of 10,000 values is
	// still one value), then 1.
	if len(pts) != 10 {
		t.Fatalf("%d points, want 10: %v", len(pts), pts)
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].Quantile <= pts[i-1].Quantile || pts[i].Value < pts[i-1].Value {
			t.Fatalf("spectrum not ascending at %d: %v", i, pts)
		}
	}
	if pts[0].Value != time.Microsecond || pts[len(pts)-1].Value != 10*time.Millisecond {
		t.Fatalf("ends %v .. %v, want 1µs .. 10ms", pts[0].Value, pts[len(pts)-1].Value)
	}
}

func BenchmarkRecord(b *testing.B) {
	h := New()
	for i := 0; b.Loop(); i++ {
		h.Record(time.Duration(i&0xfffff) * 7)
	}
}
