package schedule

import (
	"testing"
	"time"
)

// seedReady is the estimate of the seed design (Discord rate limiting with
// a delayed queue): the next window's start plus one window per reservoir
// jobs waiting ahead, whatever is left of the current window.
func seedReady(now time.Time, waiting, reservoir int, window time.Duration) time.Time {
	next := windowStart(unixNano(now), int64(window)) + int64(window)
	return fromUnixNano(next).Add(time.Duration(waiting/reservoir) * window)
}

// TestBurstFixedWindow sends 1,000 jobs at once into one Discord channel
// (DiscordChannel: 5 messages per 5 s) 2 s into a window in which 2
// messages went out already. Every job must start at the instant Submit
// predicted, 5 per window at most; the seed's estimate, which ignores the
// 3 messages left in the current window, is compared with the same starts.
func TestBurstFixedWindow(t *testing.T) {
	const jobs = 1000
	rule := Rule{Kind: KindFixedWindow, Calls: DiscordChannelMessages, Per: DiscordChannelWindow}
	reservoir, window := rule.Calls, rule.Per
	s := New[int]()
	// Two messages already sent in [0 s, 5 s).
	mustSubmit(t, s, sec(0.5), "channel", rule, 1_000_000, 0)
	s.Due(sec(0.5), nil)
	mustSubmit(t, s, sec(1), "channel", rule, 1_000_001, 0)
	s.Due(sec(1), nil)

	now := sec(2)
	free := reservoir - 2
	predicted := make([]time.Time, jobs)
	for k := range jobs {
		predicted[k] = mustSubmit(t, s, now, "channel", rule, JobID(k), k)
	}
	actual := make([]time.Time, jobs)
	perWindow := map[int64]int{}
	for {
		next, ok := s.Next()
		if !ok {
			break
		}
		for _, j := range s.Due(next, nil) {
			actual[j.Value] = j.At
			perWindow[windowStart(unixNano(j.At), int64(window))]++
		}
	}
	for k := range jobs {
		if !actual[k].Equal(predicted[k]) {
			t.Fatalf("job %d: started %v, predicted %v", k, actual[k].Sub(t0), predicted[k].Sub(t0))
		}
	}
	for ws, n := range perWindow {
		// The first window also holds the 2 earlier messages.
		if ws == unixNano(t0) {
			n += 2
		}
		if n > reservoir {
			t.Fatalf("window at %v: %d messages, limit %d", fromUnixNano(ws).Sub(t0), n, reservoir)
		}
	}

	var sum, worst time.Duration
	wrong := 0
	for k := range jobs {
		e := seedReady(now, k, reservoir, window).Sub(actual[k])
		if e < 0 {
			t.Errorf("job %d: the seed's estimate %v is before the actual start %v", k, e, actual[k].Sub(t0))
		}
		if e != 0 {
			wrong++
		}
		sum += e
		worst = max(worst, e)
	}
	mean := sum / jobs
	t.Logf("burst of %d into %d per %v, %d free in the current window: last start +%v after the burst",
		jobs, reservoir, window, free, actual[jobs-1].Sub(now))
	t.Logf("our prediction: exact for %d of %d jobs", jobs, jobs)
	t.Logf("seed's estimate: wrong for %d of %d jobs, late by %v on average, %v at most", wrong, jobs, mean, worst)
	// The 3 jobs that fit the current window are put 3 s late (at 5 s, not
	// 2 s); after them, 3 of every 5 are put one window (5 s) late:
	// (3·3 s + 597·5 s) / 1000 = 2.994 s.
	if wrong != 600 || mean != 2994*time.Millisecond || worst != window {
		t.Errorf("seed's estimate: %d wrong, mean %v, max %v; want 600, 2.994s, %v", wrong, mean, worst, window)
	}

	// The seed's flow lets the jobs that fit the current window run at
	// once (its call counter allows them) and counts only the others as
	// waiting; for this one burst that gives the same starts.
	for k := range jobs {
		want := now
		if k >= free {
			want = seedReady(now, k-free, reservoir, window)
		}
		if !want.Equal(actual[k]) {
			t.Errorf("job %d: seed's flow %v, actual %v", k, want.Sub(t0), actual[k].Sub(t0))
		}
	}
}
