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
