package schedule

import (
	"strings"
	"testing"
	"time"
)

// t0 is Monday 2026-11-16 12:00:00 UTC, a multiple of every window used
// here from the Unix epoch.
var t0 = time.Date(2026, time.November, 16, 12, 0, 0, 0, time.UTC)

func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// policyStep is one line of a step table: record calls at rec, then check
// Ready(now, waiting) and Count(now).
type policyStep struct {
	rec     []time.Time
	now     time.Time
	waiting int
	ready   time.Time
	count   int
}

type countingPolicy interface {
	Policy
	Count(now time.Time) int
}

func runPolicy(t *testing.T, p countingPolicy, steps []policyStep) {
	t.Helper()
	for i, s := range steps {
		for _, r := range s.rec {
			p.Record(r)
		}
		if got := p.Ready(s.now, s.waiting); !got.Equal(s.ready) {
			t.Errorf("step %d: Ready(%v, %d) = %v want %v", i, s.now.Format(time.TimeOnly), s.waiting,
				got.Format("15:04:05.000000000"), s.ready.Format("15:04:05.000000000"))
		}
		if got := p.Count(s.now); got != s.count {
			t.Errorf("step %d: Count(%v) = %d want %d", i, s.now.Format(time.TimeOnly), got, s.count)
		}
	}
}

func TestSlidingLogReady(t *testing.T) {
	p, err := NewSlidingLog(3, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ns := time.Nanosecond
	runPolicy(t, p, []policyStep{
		// Empty: three free slots, then one width per three jobs.
		{now: sec(0), waiting: 0, ready: sec(0)},
		{now: sec(0), waiting: 2, ready: sec(0)},
		{now: sec(0), waiting: 3, ready: sec(10)},
		{now: sec(0), waiting: 5, ready: sec(10)},
		{now: sec(0), waiting: 6, ready: sec(20)},
		// One call: two slots free now, the third when it expires.
		{rec: []time.Time{sec(0)}, now: sec(1), waiting: 1, ready: sec(1), count: 1},
		{now: sec(1), waiting: 2, ready: sec(10), count: 1},
		{now: sec(1), waiting: 3, ready: sec(11), count: 1},
		{now: sec(1), waiting: 5, ready: sec(20), count: 1},
		// Full at 0, 1, 2 s: each slot frees 10 s after its call.
		{rec: []time.Time{sec(1), sec(2)}, now: sec(2), waiting: 0, ready: sec(10), count: 3},
		{now: sec(2), waiting: 1, ready: sec(11), count: 3},
		{now: sec(2), waiting: 2, ready: sec(12), count: 3},
		{now: sec(2), waiting: 3, ready: sec(20), count: 3},
		{now: sec(2), waiting: 7, ready: sec(31), count: 3},
		// A call at T counts until T+width, not at T+width.
		{now: sec(10).Add(-ns), waiting: 0, ready: sec(10), count: 3},
		{now: sec(10), waiting: 0, ready: sec(10), count: 2},
		{now: sec(10), waiting: 1, ready: sec(11), count: 2},
		// A new call at 10 s takes the freed slot; the ring drops 0 s.
		{rec: []time.Time{sec(10)}, now: sec(10), waiting: 0, ready: sec(11), count: 3},
		{now: sec(10), waiting: 2, ready: sec(20), count: 3},
		{now: sec(10), waiting: 3, ready: sec(21), count: 3},
		// Long after: all expired, ready at now.
		{now: sec(60), waiting: 2, ready: sec(60), count: 0},
		{now: sec(60), waiting: 3, ready: sec(70), count: 0},
	})
	if got, want := p.Expiry(), sec(20); !got.Equal(want) {
		t.Errorf("Expiry() = %v want %v", got, want)
	}
}

func TestSlidingLogOutOfOrder(t *testing.T) {
	p, _ := NewSlidingLog(3, 10*time.Second)
	runPolicy(t, p, []policyStep{
		{rec: []time.Time{sec(2), sec(0), sec(1)}, now: sec(2), waiting: 0, ready: sec(10), count: 3},
		{now: sec(2), waiting: 2, ready: sec(12), count: 3},
		// Older than the whole full log: dropped.
		{rec: []time.Time{sec(-1)}, now: sec(2), waiting: 0, ready: sec(10), count: 3},
	})
}

func TestFixedWindowReady(t *testing.T) {
	p, err := NewFixedWindow(5, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ns := time.Nanosecond
	runPolicy(t, p, []policyStep{
		// Empty, part-way through [0 s, 5 s): five free now.
		{now: sec(2), waiting: 0, ready: sec(2)},
		{now: sec(2), waiting: 4, ready: sec(2)},
		{now: sec(2), waiting: 5, ready: sec(5)},
		{now: sec(2), waiting: 9, ready: sec(5)},
		{now: sec(2), waiting: 10, ready: sec(10)},
		// Two calls made: free_now = 3. The seed's estimate would put
		// waiting 0-4 at 5 s and 5-9 at 10 s.
		{rec: []time.Time{sec(0.5), sec(1)}, now: sec(2), waiting: 0, ready: sec(2), count: 2},
		{now: sec(2), waiting: 2, ready: sec(2), count: 2},
		{now: sec(2), waiting: 3, ready: sec(5), count: 2},
		{now: sec(2), waiting: 7, ready: sec(5), count: 2},
		{now: sec(2), waiting: 8, ready: sec(10), count: 2},
		{now: sec(2), waiting: 12, ready: sec(10), count: 2},
		{now: sec(2), waiting: 13, ready: sec(15), count: 2},
		// Full: the next window.
		{rec: []time.Time{sec(2), sec(2), sec(2)}, now: sec(2), waiting: 0, ready: sec(5), count: 5},
		{now: sec(2), waiting: 4, ready: sec(5), count: 5},
		{now: sec(2), waiting: 5, ready: sec(10), count: 5},
		{now: sec(5).Add(-ns), waiting: 0, ready: sec(5), count: 5},
		// A new window: all five free again.
		{now: sec(5), waiting: 4, ready: sec(5), count: 0},
		{now: sec(5), waiting: 5, ready: sec(10), count: 0},
		{rec: []time.Time{sec(6)}, now: sec(6), waiting: 4, ready: sec(10), count: 1},
		{now: sec(6), waiting: 3, ready: sec(6), count: 1},
		// A call in a window that is over changes nothing.
		{rec: []time.Time{sec(4)}, now: sec(6), waiting: 3, ready: sec(6), count: 1},
	})
	if got, want := p.Expiry(), sec(10); !got.Equal(want) {
		t.Errorf("Expiry() = %v want %v", got, want)
	}
}

func TestFixedWindowBeforeEpoch(t *testing.T) {
	p, _ := NewFixedWindow(1, 5*time.Second)
	epoch := time.Unix(0, 0).UTC()
	runPolicy(t, p, []policyStep{
		// The window of -3 s is [-5 s, 0 s).
		{rec: []time.Time{epoch.Add(-4 * time.Second)}, now: epoch.Add(-3 * time.Second), waiting: 0, ready: epoch, count: 1},
		{now: epoch.Add(-3 * time.Second), waiting: 1, ready: epoch.Add(5 * time.Second), count: 1},
		{now: epoch, waiting: 0, ready: epoch, count: 0},
	})
}

func TestExpiryEmpty(t *testing.T) {
	for _, r := range []Rule{{KindSlidingLog, 2, time.Second}, {KindFixedWindow, 2, time.Second}} {
		p, _ := r.NewPolicy()
		if got := p.Expiry(); !got.IsZero() {
			t.Errorf("%v: Expiry() of a new policy = %v want the zero Time", r, got)
		}
	}
}

func TestReadySaturates(t *testing.T) {
	for _, r := range []Rule{{KindSlidingLog, 1, 12 * time.Hour}, {KindFixedWindow, 1, 12 * time.Hour}} {
		p := newPolicy(r)
		if got := p.ready(unixNano(t0), 1<<40); got != maxTime {
			t.Errorf("%v: ready(t0, 2^40) = %d want maxTime", r, got)
		}
	}
}

func TestRuleValidate(t *testing.T) {
	for _, c := range []struct {
		r    Rule
		want string // substring of the error; "" for none
	}{
		{DiscordChannel(), ""},
		{Rule{KindSlidingLog, 100, 12 * time.Hour}, ""},
		{Rule{0, 5, time.Second}, "Kind"},
		{Rule{KindFixedWindow, 0, time.Second}, "Calls"},
		{Rule{KindSlidingLog, 1, 0}, "Per"},
	} {
		err := c.r.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: Validate() = %v want nil", c.r, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "schedule: ")):
			t.Errorf("%v: Validate() = %v want an error naming %s", c.r, err, c.want)
		}
	}
	if _, err := NewSlidingLog(0, time.Second); err == nil {
		t.Error("NewSlidingLog(0, 1s) succeeded")
	}
	if _, err := NewFixedWindow(1, -time.Second); err == nil {
		t.Error("NewFixedWindow(1, -1s) succeeded")
	}
}
