package seglog

import (
	"testing"
	"time"

	"github.com/pinbot/pinbot/internal/benchlat"
)

// BenchmarkAppendSynced appends 4 KiB records one after another, each
// written and fdatasynced on its own: the disk's own latency for one
// durable record, under no other load of the process. A durable grant
// waits for at least one such sync (the one of its batch), often for the
// end of the one in progress too, so this is the floor of its latency.
//
// Besides the percentiles it reports slow-1ms-% and slow-2ms-%: the
// share of the time spent in syncs longer than 1 and 2 ms, which is about
// the chance that a record arriving at a random moment waits on one.
func BenchmarkAppendSynced(b *testing.B) {
	l, err := Open(b.TempDir(), Options{}, func(uint64, []byte) error { return nil })
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	rec := make([]byte, 4096-headerLen)
	lat := make([]time.Duration, b.N)
	// The first Append makes the first segment; the rest write in place.
	if _, err := l.Append(rec); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range lat {
		t := time.Now()
		if _, err := l.Append(rec); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t)
	}
	b.StopTimer()
	var total, over1, over2 time.Duration
	for _, d := range lat {
		total += d
		if d > time.Millisecond {
			over1 += d
		}
		if d > 2*time.Millisecond {
			over2 += d
		}
	}
	benchlat.Report(b, lat)
	b.ReportMetric(benchlat.Quantile(lat, 1), "max-ms")
	b.ReportMetric(100*float64(over1)/float64(total), "slow-1ms-%")
	b.ReportMetric(100*float64(over2)/float64(total), "slow-2ms-%")
}
