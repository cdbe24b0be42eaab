package clusterrpc

import (
	"testing"
	"time"
)

func TestReplayCache(t *testing.T) {
	const s = int64(time.Second)
	t0 := int64(1_700_000_000) * s
	n := func(b byte) [nonceSize]byte { return [nonceSize]byte{b} }
	c := newReplayCache(30*time.Second, 3)
	steps := []struct {
		now, ts int64
		nonce   [nonceSize]byte
		want    string
		size    int
	}{
		{t0, t0, n(1), "", 1},
		{t0, t0, n(1), ReasonReplay, 1},                  // same nonce again
		{t0, t0 - 30*s, n(2), "", 2},                     // at the window's past edge
		{t0, t0 - 30*s - 1, n(3), ReasonStale, 2},        // past it
		{t0, t0 + 30*s, n(3), "", 3},                     // at its future edge
		{t0, t0 + 30*s + 1, n(4), ReasonStale, 3},        // past it
		{t0 + 1, t0 + 1, n(4), "", 3},                    // n(2) is out of the window, forgotten
		{t0 + 1, t0 + 2, n(5), "", 3},                    // full: forgets n(1), the oldest, and refuses its instant from now on
		{t0 + 1, t0, n(6), ReasonStale, 3},               // at n(1)'s instant
		{t0 + 1, t0, n(1), ReasonStale, 3},               // n(1) itself: forgotten, but stale for good
		{t0 - 3600*s, t0 - 3600*s, n(6), ReasonStale, 3}, // the clock set back: the floor stays
		{t0 + 40*s, t0 + 30*s, n(3), ReasonReplay, 1},    // n(3) is still in the window
		{t0 + 61*s, t0 + 30*s, n(3), ReasonStale, 0},     // and out of it
	}
	for i, st := range steps {
		if got := c.admit(st.now, st.ts, st.nonce); got != st.want {
			t.Errorf("step %d: admit(now %+d s, ts %+d ns) = %q, want %q", i, (st.now-t0)/s, st.ts-t0, got, st.want)
		}
		if got := c.size(); got != st.size {
			t.Errorf("step %d: size %d, want %d", i, got, st.size)
		}
	}
}
