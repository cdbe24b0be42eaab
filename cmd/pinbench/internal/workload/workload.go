// Package workload drives a rate limiter with a reproducible load: C
// concurrent callers asking for decisions on accounts drawn from a uniform
// or Zipf distribution, as fast as each answer comes back (closed loop) or
// on a fixed schedule (open loop), for a number of decisions or a duration.
// Every system pinbench compares is driven by Run, so they all see the same
// workload.
//
// Decision i always concerns the same account, whatever the caller that
// makes it and whatever the target: the account is drawn from a generator
// seeded with (Spec.Seed, i). A run of a fixed number of decisions thus
// asks every target about the same multiset of accounts, which
// Result.Fingerprint summarizes.
package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pinbot/pinbot/cmd/pinbench/internal/hist"
)

// Limits of a Spec.
const (
	MinAccounts = 1
	MaxAccounts = 1_000_000
	MinCallers  = 1
	MaxCallers  = 1024
)

// Dist is how accounts are drawn.
type Dist string

const (
	// Uniform draws every account with the same probability.
	Uniform Dist = "uniform"
	// Zipf draws account k with probability proportional to
	// (ZipfV+k)^-ZipfS: account 0 is the hottest (math/rand/v2 Zipf).
	Zipf Dist = "zipf"
)

// ParseDist returns the distribution named s.
func ParseDist(s string) (Dist, error) {
	switch d := Dist(s); d {
	case Uniform, Zipf:
		return d, nil
	}
	return "", fmt.Errorf("workload: unknown distribution %q (want %q or %q)", s, Uniform, Zipf)
}

// Spec describes a workload.
type Spec struct {
	// Accounts is the number of distinct accounts, 1 to MaxAccounts.
	Accounts int
	// Callers is the number of concurrent callers, 1 to MaxCallers.
	Callers int
	// Dist is the account distribution; ZipfS (> 1) and ZipfV (>= 1) shape
	// Zipf.
	Dist         Dist
	ZipfS, ZipfV float64
	// Ops, when positive, is the exact number of decisions; otherwise the
	// run lasts Duration.
	Ops      int64
	Duration time.Duration
	// Rate, when positive, paces the run: decision i is due at
	// start + i/Rate, and its latency counts from then, so a target that
	// falls behind is charged its queueing delay (no coordinated
	// omission); Result.Late counts the decisions no caller was free to
	// start on time. A run by Duration offers the decisions due before
	// its end and waits for their answers. Zero runs closed loop: each caller asks again as soon as
	// it has its answer.
	Rate float64
	// Seed picks the accounts.
	Seed uint64
}

// Validate reports the first field out of range, naming it.
func (s Spec) Validate() error {
	switch {
	case s.Accounts < MinAccounts || s.Accounts > MaxAccounts:
		return fmt.Errorf("workload: Accounts %d out of range [%d, %d]", s.Accounts, MinAccounts, MaxAccounts)
	case s.Callers < MinCallers || s.Callers > MaxCallers:
		return fmt.Errorf("workload: Callers %d out of range [%d, %d]", s.Callers, MinCallers, MaxCallers)
	case s.Dist != Uniform && s.Dist != Zipf:
		return fmt.Errorf("workload: unknown distribution %q", s.Dist)
	case s.Dist == Zipf && !(s.ZipfS > 1):
		return fmt.Errorf("workload: ZipfS %v must be greater than 1", s.ZipfS)
	case s.Dist == Zipf && !(s.ZipfV >= 1):
		return fmt.Errorf("workload: ZipfV %v must be at least 1", s.ZipfV)
	case s.Ops < 0:
		return fmt.Errorf("workload: Ops %d is negative", s.Ops)
	case s.Ops == 0 && s.Duration <= 0:
		return errors.New("workload: neither Ops nor Duration is positive")
	case s.Rate < 0:
		return fmt.Errorf("workload: Rate %v is negative", s.Rate)
	}
	return nil
}

// Target makes decisions. Decide is called from many goroutines at once.
type Target interface {
	// Decide asks for one slot of account (0 to Accounts-1) and reports
	// whether it was granted. An error stops the run.
	Decide(ctx context.Context, account int) (granted bool, err error)
}

// TargetFunc adapts a function to Target.
type TargetFunc func(ctx context.Context, account int) (bool, error)

// Decide calls f.
func (f TargetFunc) Decide(ctx context.Context, account int) (bool, error) { return f(ctx, account) }

// Account returns the ID every target uses for account i.
func Account(i int) string { return "acct-" + strconv.Itoa(i) }

// Progress is a running count, reported about once a second.
type Progress struct {
	Elapsed time.Duration
	Ops     int64
}

// Result is what a run measured.
type Result struct {
	Spec Spec
	// Ops decisions were made: Granted granted, Denied refused.
	Ops, Granted, Denied int64
	// Late counts, in a paced run, the decisions whose scheduled instant
	// had passed when a caller took them up: no caller was free then, so
	// their latency includes a wait in the queue. Always 0 closed loop.
	Late int64
	// Elapsed runs from the start to the last answer.
	Elapsed time.Duration
	// Latency holds every decision's latency.
	Latency *hist.Histogram
	// Fingerprint is the same for two runs of the same Ops, Accounts, Dist
	// and Seed, whatever the target, callers or pacing.
	Fingerprint uint64
}

// Throughput returns decisions per second.
func (r Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// keys draws the account of each decision.
type keys struct {
	spec Spec
	src  *rand.PCG
	r    *rand.Rand
	z    *rand.Zipf
}

func newKeys(spec Spec) *keys {
	k := &keys{spec: spec, src: rand.NewPCG(0, 0)}
	k.r = rand.New(k.src)
	if spec.Dist == Zipf {
		k.z = rand.NewZipf(k.r, spec.ZipfS, spec.ZipfV, uint64(spec.Accounts-1))
	}
	return k
}

// account returns the account of decision i.
func (k *keys) account(i int64) int {
	k.src.Seed(k.spec.Seed, uint64(i))
	if k.z != nil {
		return int(k.z.Uint64())
	}
	return k.r.IntN(k.spec.Accounts)
}

// mix is splitmix64's finalizer: the fingerprint adds it over accounts.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Clock is a run's time source. A run reads Now for every decision and,
// when paced, waits with WaitUntil for each decision's instant; tests pass a
// fake one.
type Clock interface {
	Now() time.Time
	// WaitUntil returns true once t has come, false if ctx ends first.
	WaitUntil(ctx context.Context, t time.Time) bool
}

// SystemClock is the wall clock (with Go's monotonic reading).
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) WaitUntil(ctx context.Context, t time.Time) bool { return waitUntil(ctx, t) }

// caller is one caller's share of the counts.
type caller struct {
	lat             *hist.Histogram
	granted, denied int64
	late            int64
	answered        bool
	fingerprint     uint64
	last            time.Time
	_               [64]byte // keep callers' counters off each other's cache lines
}

// Run drives t with spec on the system clock and returns what it
// measured: RunWithClock(ctx, spec, t, progress, SystemClock).
func Run(ctx context.Context, spec Spec, t Target, progress func(Progress)) (Result, error) {
	return RunWithClock(ctx, spec, t, progress, SystemClock)
}

// RunWithClock drives t with spec, timing it with clock, and returns what
// it measured. progress, when not nil, is called about once a second (of
// real time) from another goroutine. It stops at the first error of t
// (returning it with the counts so far) or when ctx ends (returning ctx's
// error).
func RunWithClock(ctx context.Context, spec Spec, t Target, progress func(Progress), clock Clock) (Result, error) {
	if err := spec.Validate(); err != nil {
		return Result{}, err
	}
	parent := ctx
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	callers := make([]caller, spec.Callers)
	for i := range callers {
		callers[i].lat = hist.New()
	}
	var (
		next     atomic.Int64 // next decision to claim
		done     atomic.Int64 // decisions answered
		firstErr error
		errOnce  sync.Once
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	var period time.Duration
	if spec.Rate > 0 {
		period = time.Duration(float64(time.Second) / spec.Rate)
	}
	start := clock.Now()
	end := start.Add(spec.Duration)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			me := &callers[c]
			k := newKeys(spec)
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if spec.Ops > 0 && i >= spec.Ops {
					return
				}
				var t0 time.Time
				if period > 0 {
					t0 = start.Add(time.Duration(i) * period)
					if spec.Ops == 0 && !t0.Before(end) {
						return
					}
					// Taken up after its instant by a caller that has
					// answered before: every caller was busy then. (A
					// caller's first decision only waited for it to start.)
					if clock.Now().After(t0) {
						if me.answered {
							me.late++
						}
					} else if !clock.WaitUntil(ctx, t0) {
						return
					}
				} else {
					t0 = clock.Now()
					if spec.Ops == 0 && !t0.Before(end) {
						return
					}
				}
				acc := k.account(i)
				granted, err := t.Decide(ctx, acc)
				if err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("workload: decision %d (account %d): %w", i, acc, err))
					}
					return
				}
				now := clock.Now()
				me.lat.Record(now.Sub(t0))
				me.last, me.answered = now, true
				me.fingerprint += mix(uint64(acc))
				if granted {
					me.granted++
				} else {
					me.denied++
				}
				done.Add(1)
			}
		}()
	}
	stopProgress := reportProgress(clock, start, &done, progress)
	wg.Wait()
	stopProgress()

	res := Result{Spec: spec, Latency: hist.New()}
	var last time.Time
	for i := range callers {
		c := &callers[i]
		res.Latency.Merge(c.lat)
		res.Granted += c.granted
		res.Denied += c.denied
		res.Late += c.late
		res.Fingerprint += c.fingerprint
		if c.last.After(last) {
			last = c.last
		}
	}
	res.Ops = res.Granted + res.Denied
	if !last.IsZero() {
		res.Elapsed = last.Sub(start)
	}
	if firstErr != nil {
		return res, firstErr
	}
	return res, parent.Err()
}

// waitUntil waits until t or ctx ends, and reports whether t came. It
// paces the offered load; it does not wait for a result.
func waitUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// reportProgress calls progress once a second until the returned function
// is called.
func reportProgress(clock Clock, start time.Time, done *atomic.Int64, progress func(Progress)) (stop func()) {
	if progress == nil {
		return func() {}
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Second) // a display refresh, not a wait for an event
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				progress(Progress{Elapsed: clock.Now().Sub(start), Ops: done.Load()})
			case <-quit:
				return
			}
		}
	}()
	return func() { close(quit); <-finished }
}
