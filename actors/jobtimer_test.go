package actors

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// TestJobTimerOrder: accounts come due in the order of their instants,
// each once, and a moved or removed entry follows.
func TestJobTimerOrder(t *testing.T) {
	tm := newJobTimer()
	r := rand.New(rand.NewPCG(1, 2))
	want := map[string]int64{}
	for i := range 1000 {
		acc := fmt.Sprintf("a%d", i)
		at := r.Int64N(10_000)
		tm.set(acc, at)
		want[acc] = at
	}
	for i := 0; i < 1000; i += 3 {
		acc := fmt.Sprintf("a%d", i)
		if i%2 == 0 {
			tm.set(acc, Never)
			delete(want, acc)
		} else {
			at := r.Int64N(10_000)
			tm.set(acc, at)
			want[acc] = at
		}
	}
	if tm.len() != len(want) {
		t.Fatalf("len %d, want %d", tm.len(), len(want))
	}
	var got []int64
	for now := int64(0); now <= 10_000; now += 100 {
		for _, acc := range tm.due(now) {
			at, ok := want[acc]
			if !ok || at > now || at <= now-100 {
				t.Fatalf("%s due at %d, its instant %d (known %v)", acc, now, at, ok)
			}
			delete(want, acc)
			got = append(got, at)
		}
	}
	if len(want) != 0 || !slices.IsSorted(got) {
		t.Fatalf("%d accounts never due; order sorted: %v", len(want), slices.IsSorted(got))
	}
}

// BenchmarkJobTimer measures setting an account's instant in a timer of
// 100k accounts, and the timer's memory per account.
func BenchmarkJobTimer(b *testing.B) {
	const accounts = 100_000
	names := make([]string, accounts)
	for i := range names {
		names[i] = fmt.Sprintf("%018d", i)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	tm := newJobTimer()
	for i, n := range names {
		tm.set(n, int64(i))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perAccount := float64(after.HeapAlloc-before.HeapAlloc) / accounts
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; b.Loop(); i++ {
		tm.set(names[i%accounts], r.Int64N(1<<40))
	}
	b.ReportMetric(perAccount, "B/account")
	runtime.KeepAlive(tm)
}
