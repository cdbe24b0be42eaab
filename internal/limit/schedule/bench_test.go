package schedule

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// benchGroups is how many groups the benchmarks spread jobs over.
const benchGroups = 100_000

// benchRules are a Discord channel (fixed window, 5 per 5 s) and a
// Pinterest account (sliding log, 100 per 12 h).
var benchRules = []struct {
	name string
	rule Rule
}{
	{"fixed", Rule{Kind: KindFixedWindow, Calls: DiscordChannelMessages, Per: DiscordChannelWindow}},
	{"sliding", Rule{KindSlidingLog, 100, 12 * time.Hour}},
}

func benchKeys() []string {
	keys := make([]string, benchGroups)
	for i := range keys {
		keys[i] = fmt.Sprintf("channel:%d", 1_000_000_000_000+i)
	}
	return keys
}

func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// BenchmarkSubmit submits b.N jobs round-robin to 100,000 groups that
// each have one job waiting already. Besides ns/op and B/op it reports
// the heap per group (with its first job) and per further waiting job.
func BenchmarkSubmit(b *testing.B) {
	keys := benchKeys()
	for _, br := range benchRules {
		b.Run(br.name, func(b *testing.B) {
			s := New[int]()
			before := heapInUse()
			for i, k := range keys {
				if _, err := s.Submit(t0, k, br.rule, JobID(i), i); err != nil {
					b.Fatal(err)
				}
			}
			groups := heapInUse()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Submit(t0, keys[i%benchGroups], br.rule, JobID(benchGroups+i), i); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			after := heapInUse()
			b.ReportMetric(float64(groups-before)/benchGroups, "B/group")
			b.ReportMetric(float64(after-groups)/float64(b.N), "B/waiting-job")
			runtime.KeepAlive(s)
		})
	}
}

// BenchmarkDue hands out b.N jobs waiting in 100,000 groups, calling Due
// at each instant Next reports: ns/op is per job handed out, recorded as
// a call, and its group dropped from memory when its limit allows.
func BenchmarkDue(b *testing.B) {
	keys := benchKeys()
	for _, br := range benchRules {
		b.Run(br.name, func(b *testing.B) {
			s := New[int]()
			for i := range b.N {
				if _, err := s.Submit(t0, keys[i%benchGroups], br.rule, JobID(i), i); err != nil {
					b.Fatal(err)
				}
			}
			var jobs []Job[int]
			b.ReportAllocs()
			b.ResetTimer()
			for handed := 0; handed < b.N; handed += len(jobs) {
				next, ok := s.Next()
				if !ok {
					b.Fatalf("%d of %d jobs handed out, none waiting", handed, b.N)
				}
				jobs = s.Due(next, jobs[:0])
			}
		})
	}
}
