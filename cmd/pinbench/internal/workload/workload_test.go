package workload

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSpecValidate(t *testing.T) {
	ok := Spec{Accounts: 1000, Callers: 8, Dist: Uniform, Ops: 10}
	tests := []struct {
		mutate func(*Spec)
		want   string // "" for valid
	}{
		{func(*Spec) {}, ""},
		{func(s *Spec) { s.Accounts = 0 }, "Accounts 0 out of range"},
		{func(s *Spec) { s.Accounts = MaxAccounts + 1 }, "Accounts 1000001 out of range"},
		{func(s *Spec) { s.Callers = 0 }, "Callers 0 out of range"},
		{func(s *Spec) { s.Callers = 1025 }, "Callers 1025 out of range"},
		{func(s *Spec) { s.Dist = "pareto" }, `unknown distribution "pareto"`},
		{func(s *Spec) { s.Dist, s.ZipfS, s.ZipfV = Zipf, 1, 1 }, "ZipfS 1 must be greater than 1"},
		{func(s *Spec) { s.Dist, s.ZipfS, s.ZipfV = Zipf, 1.1, 0.5 }, "ZipfV 0.5 must be at least 1"},
		{func(s *Spec) { s.Ops = -1 }, "Ops -1 is negative"},
		{func(s *Spec) { s.Ops, s.Duration = 0, 0 }, "neither Ops nor Duration"},
		{func(s *Spec) { s.Rate = -3 }, "Rate -3 is negative"},
	}
	for i, tt := range tests {
		s := ok
		tt.mutate(&s)
		err := s.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("step %d: Validate() = %v want nil", i, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("step %d: Validate() = %v want an error containing %q", i, err, tt.want)
		}
	}
	if _, err := ParseDist("zipf"); err != nil {
		t.Errorf("ParseDist(zipf) = %v", err)
	}
	if _, err := ParseDist("normal"); err == nil || !strings.Contains(err.Error(), `"normal"`) {
		t.Errorf("ParseDist(normal) = %v, want an error naming it", err)
	}
}

// counter is a target that counts the decisions per account and grants
// every other one.
type counter struct {
	mu   sync.Mutex
	seen map[int]int
	n    atomic.Int64
}

func (c *counter) Decide(_ context.Context, acc int) (bool, error) {
	c.mu.Lock()
	c.seen[acc]++
	c.mu.Unlock()
	return c.n.Add(1)%2 == 0, nil
}

func TestSameWorkloadWhateverTarget(t *testing.T) {
	ctx := context.Background()
	base := Spec{Accounts: 500, Callers: 7, Dist: Zipf, ZipfS: 1.2, ZipfV: 1, Ops: 3000, Seed: 42}
	first := &counter{seen: map[int]int{}}
	r1, err := Run(ctx, base, first, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Other callers, pacing and target: the same accounts are asked about.
	other := base
	other.Callers, other.Rate = 3, 200_000
	second := &counter{seen: map[int]int{}}
	r2, err := Run(ctx, other, second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Ops != 3000 || r2.Ops != 3000 || r1.Latency.Count() != 3000 {
		t.Fatalf("ops %d and %d, latencies %d; want 3000", r1.Ops, r2.Ops, r1.Latency.Count())
	}
	if r1.Granted != 1500 || r1.Denied != 1500 {
		t.Fatalf("granted %d denied %d, want 1500 each", r1.Granted, r1.Denied)
	}
	if r1.Fingerprint != r2.Fingerprint {
		t.Fatalf("fingerprints differ: %x and %x", r1.Fingerprint, r2.Fingerprint)
	}
	for acc, n := range first.seen {
		if second.seen[acc] != n {
			t.Fatalf("account %d asked %d times, then %d times", acc, n, second.seen[acc])
		}
	}
	// The accounts are the ones drawn for decisions 0..Ops-1.
	k := newKeys(base)
	want := map[int]int{}
	for i := range base.Ops {
		want[k.account(i)]++
	}
	for acc, n := range want {
		if first.seen[acc] != n {
			t.Fatalf("account %d asked %d times, want %d", acc, first.seen[acc], n)
		}
	}
	// Zipf: account 0 is the hottest.
	for acc, n := range first.seen {
		if n > first.seen[0] {
			t.Fatalf("account %d asked %d times, more than account 0 (%d)", acc, n, first.seen[0])
		}
	}
	reseeded := base
	reseeded.Seed = 43
	r3, err := Run(ctx, reseeded, &counter{seen: map[int]int{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Fingerprint == r1.Fingerprint {
		t.Fatal("another seed gave the same fingerprint")
	}
}

func TestUniformCoversAccounts(t *testing.T) {
	c := &counter{seen: map[int]int{}}
	if _, err := Run(context.Background(), Spec{Accounts: 50, Callers: 4, Dist: Uniform, Ops: 5000, Seed: 1}, c, nil); err != nil {
		t.Fatal(err)
	}
	for acc := range 50 {
		if n := c.seen[acc]; n < 50 || n > 150 {
			t.Errorf("account %d asked %d times out of 5000, want about 100", acc, n)
		}
	}
}

func TestErrorStopsRun(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int64
	res, err := Run(context.Background(), Spec{Accounts: 10, Callers: 4, Dist: Uniform, Ops: 1_000_000},
		TargetFunc(func(context.Context, int) (bool, error) {
			if calls.Add(1) == 100 {
				return false, boom
			}
			return true, nil
		}), nil)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "workload: decision") {
		t.Fatalf("err = %v, want boom wrapped with the decision", err)
	}
	if res.Ops >= 1_000_000 {
		t.Fatalf("the run went on after the error: %d ops", res.Ops)
	}
}

func TestContextEndsDurationRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	_, err := Run(ctx, Spec{Accounts: 10, Callers: 2, Dist: Uniform, Duration: time.Hour},
		TargetFunc(func(context.Context, int) (bool, error) {
			if calls.Add(1) == 50 {
				cancel()
			}
			return true, nil
		}), nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestPacedRunKeepsSchedule(t *testing.T) {
	// 100 decisions at 5000/s: the last is due 19.8 ms after the start.
	res, err := Run(context.Background(), Spec{Accounts: 10, Callers: 4, Dist: Uniform, Ops: 100, Rate: 5000},
		TargetFunc(func(context.Context, int) (bool, error) { return true, nil }), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Elapsed < 19*time.Millisecond {
		t.Fatalf("100 decisions at 5000/s took %v, want at least 19.8ms", res.Elapsed)
	}
}

func TestDurationRun(t *testing.T) {
	// A run by duration returns only once its callers have seen the end
	// pass; Elapsed (to the last answer) may be shorter when the callers
	// were descheduled just before it.
	began := time.Now()
	res, err := Run(context.Background(), Spec{Accounts: 10, Callers: 2, Dist: Uniform, Duration: 30 * time.Millisecond},
		TargetFunc(func(context.Context, int) (bool, error) { return true, nil }), nil)
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops == 0 || res.Elapsed <= 0 || res.Throughput() <= 0 || took < 30*time.Millisecond {
		t.Fatalf("ops %d elapsed %v throughput %v, returned after %v", res.Ops, res.Elapsed, res.Throughput(), took)
	}
}

// stepClock is a fake clock for one caller: WaitUntil moves it to the
// instant waited for, and the target moves it by what a decision costs.
// startLag moves it on its second reading, the caller's first: the caller
// starts that long after the run.
type stepClock struct {
	mu       sync.Mutex
	now      time.Time
	reads    int
	startLag time.Duration
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reads++; c.reads == 2 {
		c.now = c.now.Add(c.startLag)
	}
	return c.now
}

func (c *stepClock) WaitUntil(_ context.Context, t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
	return true
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestPacedLatencyFromScheduledInstant(t *testing.T) {
	const period = time.Millisecond // 1000 decisions/s
	tests := []struct {
		name     string
		startLag time.Duration
		stall    map[int]time.Duration // decision → time it takes, 0 otherwise
		// Every latency is a whole number of milliseconds: the histogram
		// keeps them exactly, so the mean and the max are exact.
		wantMax, wantSum time.Duration
		wantLate         int64
		// The run lasts to the last answer; decision 19 is due at 19 ms.
		wantElapsed time.Duration
	}{
		{name: "on time", stall: nil, wantMax: 0, wantSum: 0, wantLate: 0, wantElapsed: 19 * period},
		// 3 ends at 4 ms, the instant 4 is due: on time.
		{name: "one cheap stall", stall: map[int]time.Duration{3: period}, wantMax: period, wantSum: period, wantLate: 0, wantElapsed: 19 * period},
		// Decision 0 takes 5 ms: 1 to 4 are due at 1 to 4 ms, start at
		// 5 ms, and wait 4, 3, 2, 1 ms; 5 is due when the caller is free.
		{name: "stall then backlog", stall: map[int]time.Duration{0: 5 * period}, wantMax: 5 * period, wantSum: 15 * period, wantLate: 4, wantElapsed: 19 * period},
		// 2 takes 3 ms and 6 takes 2 ms: 3 and 4 wait 2 and 1 ms, 7 waits 1.
		{name: "two stalls", stall: map[int]time.Duration{2: 3 * period, 6: 2 * period}, wantMax: 3 * period, wantSum: 9 * period, wantLate: 3, wantElapsed: 19 * period},
		{name: "last one stalls", stall: map[int]time.Duration{19: 2 * period}, wantMax: 2 * period, wantSum: 2 * period, wantLate: 0, wantElapsed: 21 * period},
		// The caller starts at 3 ms: 0 waited for it to start, not for a
		// busy caller; 1 and 2 are late.
		{name: "slow start", startLag: 3 * period, wantMax: 3 * period, wantSum: 6 * period, wantLate: 2, wantElapsed: 19 * period},
	}
	for _, tt := range tests {
		clock := &stepClock{now: time.Unix(1_000_000, 0), startLag: tt.startLag}
		var n int
		target := TargetFunc(func(context.Context, int) (bool, error) {
			clock.advance(tt.stall[n]) // one caller: decisions come in order
			n++
			return true, nil
		})
		spec := Spec{Accounts: 10, Callers: 1, Dist: Uniform, Ops: 20, Rate: float64(time.Second / period)}
		res, err := RunWithClock(context.Background(), spec, target, nil, clock)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		sum := time.Duration(res.Latency.Count()) * res.Latency.Mean()
		if res.Ops != 20 || res.Latency.Max() != tt.wantMax || sum != tt.wantSum || res.Late != tt.wantLate {
			t.Errorf("%s: ops %d, latency max %v sum %v, late %d; want 20, %v, %v, %d",
				tt.name, res.Ops, res.Latency.Max(), sum, res.Late, tt.wantMax, tt.wantSum, tt.wantLate)
		}
		if res.Elapsed != tt.wantElapsed {
			t.Errorf("%s: elapsed %v, want %v", tt.name, res.Elapsed, tt.wantElapsed)
		}
	}
}

func TestClosedLoopIsNeverLate(t *testing.T) {
	clock := &stepClock{now: time.Unix(1_000_000, 0)}
	target := TargetFunc(func(context.Context, int) (bool, error) {
		clock.advance(time.Second)
		return true, nil
	})
	res, err := RunWithClock(context.Background(), Spec{Accounts: 10, Callers: 1, Dist: Uniform, Ops: 5}, target, nil, clock)
	if err != nil {
		t.Fatal(err)
	}
	// Closed loop, latency counts from the call: each is the target's own
	// second, and no decision is late.
	if res.Late != 0 || res.Latency.Max() != time.Second || res.Latency.Min() != time.Second || res.Elapsed != 5*time.Second {
		t.Fatalf("late %d, latency %v to %v, elapsed %v; want 0, 1s to 1s, 5s", res.Late, res.Latency.Min(), res.Latency.Max(), res.Elapsed)
	}
}
