package gcra_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/internal/limit"
	"github.com/pinbot/pinbot/internal/limit/gcra"
)

// Fixed instants of the step tables, in monotonic time (any origin).
const (
	t0 = 7 * time.Hour
	t1 = t0 + 1*time.Second
	t2 = t0 + 3*time.Second
	t3 = t0 + 4500*time.Millisecond
	t4 = t0 + 60*time.Second
)

type step struct {
	key  string
	at   time.Duration
	n    int
	want limit.Decision
}

// run applies steps in order to l and checks every result.
func run(t *testing.T, l *gcra.Limiter, steps []step) {
	t.Helper()
	for i, st := range steps {
		if got := l.AllowN(st.key, st.at, st.n); got != st.want {
			t.Errorf("step %d: AllowN(%q, t0+%v, %d) = %+v want %+v", i, st.key, st.at-t0, st.n, got, st.want)
		}
	}
}

func ok(remaining int, reset time.Duration) limit.Decision {
	return limit.Decision{Allowed: true, Limit: 3, Remaining: remaining, ResetAfter: reset}
}

func no(remaining int, reset, retry time.Duration) limit.Decision {
	return limit.Decision{Limit: 3, Remaining: remaining, ResetAfter: reset, RetryAfter: retry}
}

// TestAllowN steps through 3 a minute (one every 20 s, 3 at once) with
// costs: every figure is exact.
func TestAllowN(t *testing.T) {
	l := gcra.NewLimiter(gcra.Rate{Limit: 3, Period: time.Minute}, 10)
	s := time.Second
	run(t, l, []step{
		0:  {"a", t0, 1, ok(2, 20*s)},
		1:  {"a", t0, 1, ok(1, 40*s)},
		2:  {"a", t1, 1, ok(0, 59*s)},
		3:  {"a", t1, 1, no(0, 59*s, 19*s)},
		4:  {"b", t1, 2, ok(1, 40*s)}, // another key is not affected
		5:  {"a", t2, 2, no(0, 57*s, 37*s)},
		6:  {"a", t0 + 20*s, 1, ok(0, 60*s)},
		7:  {"a", t0 + 41*s, 2, no(1, 39*s, 19*s)}, // one left, two asked
		8:  {"a", t0 + 41*s, 1, ok(0, 59*s)},
		9:  {"a", t0 + 200*s, 5, ok(0, 60*s)}, // a cost above the burst costs the burst
		10: {"a", t0 + 200*s, 0, no(0, 60*s, 20*s)},
	})
}

// TestAllowNFractional: intervals below a second, and instants between
// units.
func TestAllowNFractional(t *testing.T) {
	l := gcra.NewLimiter(gcra.Rate{Limit: 2, Period: 3 * time.Second, Burst: 3}, 10)
	ms := time.Millisecond
	r := func(allowed bool, remaining int, reset, retry time.Duration) limit.Decision {
		return limit.Decision{Allowed: allowed, Limit: 3, Remaining: remaining, ResetAfter: reset, RetryAfter: retry}
	}
	run(t, l, []step{
		0: {"k", t0, 3, r(true, 0, 4500*ms, 0)},
		1: {"k", t1, 1, r(false, 0, 3500*ms, 500*ms)},
		2: {"k", t0 + 1500*ms, 1, r(true, 0, 4500*ms, 0)},
		3: {"k", t2, 1, r(true, 0, 4500*ms, 0)},
		4: {"k", t3, 1, r(true, 0, 4500*ms, 0)},
		5: {"k", t4, 1, r(true, 2, 1500*ms, 0)},
	})
}

// TestForgetsIdleKeys: a key whose burst has come back is dropped, so
// memory follows the keys still limited.
func TestForgetsIdleKeys(t *testing.T) {
	l := gcra.NewLimiter(gcra.Rate{Limit: 3, Period: time.Minute}, 1000)
	for i := range 100 {
		l.Allow(strconv.Itoa(i), t0)
	}
	if n := l.Len(); n != 100 {
		t.Fatalf("Len = %d, want 100", n)
	}
	l.Allow("late", t0+19*time.Second)
	if n := l.Len(); n != 101 {
		t.Fatalf("Len = %d before the keys' reset, want 101", n)
	}
	l.Allow("later", t0+20*time.Second)
	if n := l.Len(); n != 2 {
		t.Fatalf("Len = %d after the keys' reset, want 2", n)
	}
}

// TestMaxKeys: beyond maxKeys the least recently used key is evicted and
// starts afresh; the others keep their state.
func TestMaxKeys(t *testing.T) {
	l := gcra.NewLimiter(gcra.Rate{Limit: 1, Period: time.Hour}, 3)
	for _, k := range []string{"a", "b", "c"} {
		l.Allow(k, t0)
	}
	l.Allow("a", t1) // refused, but used: "b" is now the oldest
	for i := range 1000 {
		l.Allow("spoof"+strconv.Itoa(i), t1)
		if n := l.Len(); n > 3 {
			t.Fatalf("Len = %d, want at most 3", n)
		}
	}
	if r := l.Allow("b", t1); !r.Allowed {
		t.Errorf("evicted key refused: %+v", r)
	}
	l2 := gcra.NewLimiter(gcra.Rate{Limit: 1, Period: time.Hour}, 3)
	l2.Allow("a", t0)
	l2.Allow("b", t0)
	l2.Allow("a", t1)
	l2.Allow("c", t1)
	l2.Allow("d", t1) // evicts "b"
	if r := l2.Allow("a", t1); r.Allowed {
		t.Errorf("recently used key lost its state: %+v", r)
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want gcra.Rate
		err  string
	}{
		{"20/m", gcra.Rate{Limit: 20, Period: time.Minute}, ""},
		{" 60/10m ", gcra.Rate{Limit: 60, Period: 10 * time.Minute}, ""},
		{"5/s,burst=20", gcra.Rate{Limit: 5, Period: time.Second, Burst: 20}, ""},
		{"100/d", gcra.Rate{Limit: 100, Period: 24 * time.Hour}, ""},
		{"3/90s, burst=1", gcra.Rate{Limit: 3, Period: 90 * time.Second, Burst: 1}, ""},
		{"20", gcra.Rate{}, "want N/PERIOD"},
		{"x/m", gcra.Rate{}, `"x" is not a whole number`},
		{"20/fortnight", gcra.Rate{}, `"fortnight" is not a period`},
		{"0/m", gcra.Rate{}, "limit 0 is not between 1"},
		{"20/-1m", gcra.Rate{}, "period -1m0s is not positive"},
		{"20/m,burst=0", gcra.Rate{}, `burst "0" is not a whole number from 1`},
		{"20/m,bust=3", gcra.Rate{}, "want N/PERIOD"},
		{"2000000/s", gcra.Rate{}, "limit 2000000 is not between 1"},
		{"1000001/s", gcra.Rate{}, "more than one a microsecond"},
		{"1/8784h,burst=1000000", gcra.Rate{}, "takes more than"},
	}
	for i, tt := range tests {
		got, err := gcra.ParseRate(tt.in)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("step %d: ParseRate(%q) = %+v, %v want %+v", i, tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), "gcra: ")):
			t.Errorf("step %d: ParseRate(%q) error %v, want one containing %q", i, tt.in, err, tt.err)
		}
	}
	r := gcra.Rate{Limit: 5, Period: time.Second, Burst: 20}
	if back, err := gcra.ParseRate(r.String()); err != nil || back != r {
		t.Errorf("ParseRate(%q) = %+v, %v", r.String(), back, err)
	}
}

// TestSince: Since's instants are the time the clock has moved since
// Since was called, and a Limiter runs on them.
func TestSince(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	elapsed := gcra.Since(func() time.Time { return now })
	if got := elapsed(); got != 0 {
		t.Fatalf("first instant %v, want 0", got)
	}
	l := gcra.NewLimiter(gcra.Rate{Limit: 1, Period: time.Minute}, 10)
	if r := l.Allow("a", elapsed()); !r.Allowed {
		t.Fatalf("first request refused: %+v", r)
	}
	now = now.Add(59 * time.Second)
	if got := elapsed(); got != 59*time.Second {
		t.Fatalf("instant %v, want 59s", got)
	}
	if r := l.Allow("a", elapsed()); r.Allowed || r.RetryAfter != time.Second {
		t.Fatalf("at 59 s: %+v, want refused for 1s", r)
	}
	mono := gcra.Since(time.Now)
	if a, b := mono(), mono(); a < 0 || b < a {
		t.Fatalf("Since(time.Now) read %v then %v", a, b)
	}
}

func BenchmarkAllow(b *testing.B) {
	l := gcra.NewLimiter(gcra.Rate{Limit: 20, Period: time.Minute}, 100_000)
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "198.51.100." + strconv.Itoa(i)
	}
	i := 0
	for b.Loop() {
		l.Allow(keys[i%len(keys)], t0+time.Duration(i)*time.Millisecond)
		i++
	}
}

func ExampleLimiter_AllowN() {
	l := gcra.NewLimiter(gcra.Rate{Limit: 60, Period: 10 * time.Minute}, 1000)
	now := 90 * time.Second // monotonic time since the clock's origin
	fmt.Println(l.AllowN("alice", now, 58))
	fmt.Println(l.AllowN("alice", now, 5))
	// Output:
	// {true 60 2 9m40s 0s}
	// {false 60 2 9m40s 30s}
}
