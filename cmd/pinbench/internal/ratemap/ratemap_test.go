package ratemap

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestBurstThenRefill(t *testing.T) {
	m := New(100, 12*time.Hour)
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for i := range 100 {
		if !m.AllowAt("a", t0) {
			t.Fatalf("step %d: AllowAt(a, t0) = false want true (burst of 100)", i)
		}
	}
	if m.AllowAt("a", t0) {
		t.Fatal("step 100: AllowAt(a, t0) = true want false (burst used)")
	}
	if !m.AllowAt("b", t0) {
		t.Fatal("AllowAt(b, t0) = false: keys must not share a bucket")
	}
	// One token every 12h/100 = 7m12s.
	if m.AllowAt("a", t0.Add(7*time.Minute)) {
		t.Fatal("AllowAt(a, t0+7m) = true want false")
	}
	if !m.AllowAt("a", t0.Add(7*time.Minute+12*time.Second)) {
		t.Fatal("AllowAt(a, t0+7m12s) = false want true")
	}
	if m.Len() != 2 {
		t.Fatalf("Len() = %d want 2", m.Len())
	}
}

func TestConcurrentKeys(t *testing.T) {
	m := New(10, time.Hour)
	now := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := map[string]int{}
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				key := fmt.Sprint("k", (g+i)%20)
				if m.AllowAt(key, now) {
					mu.Lock()
					granted[key]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for k, n := range granted {
		if n != 10 {
			t.Errorf("%s: %d granted at one instant, want the burst of 10", k, n)
		}
	}
	if len(granted) != 20 {
		t.Errorf("%d keys granted, want 20", len(granted))
	}
}
