// Package benchlat reports latency percentiles from benchmarks.
package benchlat

import (
	"slices"
	"testing"
	"time"
)

// Report sorts lat and reports its p50, p99 and p99.9 in milliseconds
// (p50-ms, p99-ms, p99.9-ms). lat must not be empty.
func Report(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	for _, p := range []struct {
		q    float64
		unit string
	}{{0.50, "p50-ms"}, {0.99, "p99-ms"}, {0.999, "p99.9-ms"}} {
		b.ReportMetric(Quantile(lat, p.q), p.unit)
	}
}

// Quantile returns the q quantile of sorted, in milliseconds.
func Quantile(sorted []time.Duration, q float64) float64 {
	return float64(sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]) / float64(time.Millisecond)
}
