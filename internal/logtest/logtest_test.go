package logtest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestBufferConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				fmt.Fprintf(&b, "%d\n", i)
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Fatalf("%d lines, want 800", n)
	}
	if got := len(b.Bytes()); got != 1600 {
		t.Fatalf("Bytes: %d bytes, want 1600", got)
	}
	b.Reset()
	if b.String() != "" {
		t.Fatalf("after Reset: %q", b.String())
	}
}
