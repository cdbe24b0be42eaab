package limit_test

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/pinbot/pinbot/internal/limit"
	"github.com/pinbot/pinbot/internal/limit/gcra"
)

// policyCase is one Policy of the room under the shared contract.
type policyCase struct {
	name string
	// new returns a fresh Policy.
	new func() limit.Policy
	// limit is the Limit every Decision must carry.
	limit int
	// bound is the most units one key may spend within any closed span
	// of the given length.
	bound func(span time.Duration) int
	// tick is the scale of the time between requests in the walk.
	tick time.Duration
}

// gcraCase puts a GCRA Limiter applying r under the contract: within
// [a, b] a key spends at most Burst + ⌊(b−a)/Interval⌋ units.
func gcraCase(name string, r gcra.Rate) policyCase {
	burst := r.Burst
	if burst == 0 {
		burst = r.Limit
	}
	return policyCase{
		name:  name,
		new:   func() limit.Policy { return gcra.NewLimiter(r, 1000) },
		limit: burst,
		bound: func(span time.Duration) int { return burst + int(span/r.Interval()) },
		tick:  r.Interval(),
	}
}

// policies are every Policy in the room: a new one adds its rows here.
var policies = []policyCase{
	gcraCase("gcra 3/m", gcra.Rate{Limit: 3, Period: time.Minute}),
	gcraCase("gcra 2/3s burst 3", gcra.Rate{Limit: 2, Period: 3 * time.Second, Burst: 3}),
	gcraCase("gcra 20/m burst 1", gcra.Rate{Limit: 20, Period: time.Minute, Burst: 1}),
	gcraCase("gcra 7/7001ns", gcra.Rate{Limit: 7, Period: 7001 * time.Nanosecond}), // an interval rounded down
	gcraCase("gcra user default 60/10m", gcra.Rate{Limit: 60, Period: 10 * time.Minute}),
	gcraCase("gcra operator default 120/m", gcra.Rate{Limit: 120, Period: time.Minute}),
}

// spend is units a key was allowed to spend at an instant.
type spend struct {
	at time.Duration
	n  int
}

// walker drives one key of a Policy through a random walk and checks
// every Decision against the contract. Each request on the key goes to
// two Policies, one of which also serves other keys: their Decisions must
// be the same, keys being independent.
type walker struct {
	t      *testing.T
	c      policyCase
	p, q   limit.Policy // p serves other keys too, q only the key
	now    time.Duration
	spent  []spend
	step   int
	noiseR *rand.Rand
}

// allow asks for n units at at (never before w.now), checks the Decision
// and returns it.
func (w *walker) allow(at time.Duration, n int) limit.Decision {
	w.t.Helper()
	if at < w.now {
		w.t.Fatalf("step %d: walk went back from %v to %v", w.step, w.now, at)
	}
	w.now = at
	// Other keys, on p only.
	for range w.noiseR.IntN(3) {
		key := []string{"b", "c", "d"}[w.noiseR.IntN(3)]
		w.p.AllowN(key, at, 1+w.noiseR.IntN(w.c.limit))
	}
	d := w.p.AllowN("a", at, n)
	if dq := w.q.AllowN("a", at, n); dq != d {
		w.t.Fatalf("step %d: AllowN(a, %v, %d) = %+v beside other keys, %+v alone", w.step, at, n, d, dq)
	}
	switch {
	case d.Limit != w.c.limit:
		w.t.Fatalf("step %d: AllowN(a, %v, %d) = %+v: Limit want %d", w.step, at, n, d, w.c.limit)
	case d.Remaining < 0 || d.Remaining > d.Limit:
		w.t.Fatalf("step %d: AllowN(a, %v, %d) = %+v: Remaining out of [0, Limit]", w.step, at, n, d)
	case d.ResetAfter < 0:
		w.t.Fatalf("step %d: AllowN(a, %v, %d) = %+v: negative ResetAfter", w.step, at, n, d)
	case d.Allowed && d.RetryAfter != 0:
		w.t.Fatalf("step %d: AllowN(a, %v, %d) = %+v: allowed with a RetryAfter", w.step, at, n, d)
	case !d.Allowed && d.RetryAfter <= 0:
		w.t.Fatalf("step %d: AllowN(a, %v, %d) = %+v: refused without a RetryAfter", w.step, at, n, d)
	case d.Allowed && d.ResetAfter == 0:
		w.t.Fatalf("step %d: AllowN(a, %v, %d) = %+v: units spent but nothing to reset", w.step, at, n, d)
	}
	if d.Allowed {
		w.spent = append(w.spent, spend{at, n})
	}
	return d
}

// run walks steps requests, checking after each what its Decision
// claims.
func (w *walker) run(r *rand.Rand, steps int) {
	w.t.Helper()
	for w.step = range steps {
		at := w.now
		if r.IntN(4) != 0 {
			at += time.Duration(r.Int64N(int64(2*w.c.tick) + 1))
		}
		n := 1 + r.IntN(w.c.limit)
		d := w.allow(at, n)
		if !d.Allowed {
			// A refused request spends nothing.
			if again := w.allow(at, n); again != d {
				w.t.Fatalf("step %d: refused request repeated: %+v, first %+v", w.step, again, d)
			}
		}
		switch r.IntN(4) {
		case 0: // Remaining is exact.
			for i := range d.Remaining {
				if e := w.allow(at, 1); !e.Allowed {
					w.t.Fatalf("step %d: unit %d of Remaining %d refused: %+v", w.step, i+1, d.Remaining, e)
				}
			}
			if e := w.allow(at, 1); e.Allowed {
				w.t.Fatalf("step %d: unit beyond Remaining %d allowed: %+v", w.step, d.Remaining, e)
			}
		case 1: // RetryAfter is exact.
			if d.Allowed {
				break
			}
			if e := w.allow(at+d.RetryAfter-1, n); e.Allowed {
				w.t.Fatalf("step %d: allowed 1ns before RetryAfter %v: %+v", w.step, d.RetryAfter, e)
			}
			if e := w.allow(at+d.RetryAfter, n); !e.Allowed {
				w.t.Fatalf("step %d: refused at RetryAfter %v: %+v", w.step, d.RetryAfter, e)
			}
		case 2: // ResetAfter is exact.
			if d.ResetAfter > 0 {
				if e := w.allow(at+d.ResetAfter-1, w.c.limit); e.Allowed {
					w.t.Fatalf("step %d: Limit allowed 1ns before ResetAfter %v: %+v", w.step, d.ResetAfter, e)
				}
			}
			if e := w.allow(at+d.ResetAfter, w.c.limit); !e.Allowed || e.Remaining != 0 {
				w.t.Fatalf("step %d: at ResetAfter %v, Limit units: %+v, want allowed with none left", w.step, d.ResetAfter, e)
			}
		}
	}
}

// checkBound checks that no span held more than the bound.
func (w *walker) checkBound() {
	w.t.Helper()
	s := w.spent
	sort.SliceStable(s, func(i, j int) bool { return s[i].at < s[j].at })
	for i := range s {
		sum := 0
		for j := i; j < len(s); j++ {
			sum += s[j].n
			if b := w.c.bound(s[j].at - s[i].at); sum > b {
				w.t.Fatalf("%d units spent within [%v, %v], at most %d allowed", sum, s[i].at, s[j].at, b)
			}
		}
	}
}

// TestPolicies checks every Policy of the room against the contract of
// Policy: the Decision's figures are consistent and exact (Remaining,
// RetryAfter, ResetAfter), a refused request spends nothing, keys are
// independent, and no span lets a key spend more than the rate allows.
func TestPolicies(t *testing.T) {
	for _, c := range policies {
		t.Run(c.name, func(t *testing.T) {
			for seed := range uint64(4) {
				r := rand.New(rand.NewPCG(seed, 7))
				w := &walker{t: t, c: c, p: c.new(), q: c.new(), now: 7 * time.Hour, noiseR: rand.New(rand.NewPCG(seed, 1))}
				w.run(r, 400)
				w.checkBound()
				if len(w.spent) < 50 {
					t.Errorf("seed %d: only %d requests allowed: the walk says little", seed, len(w.spent))
				}
			}
		})
	}
}

// TestPolicyAtOnce: a new key spends up to Limit units at one instant,
// then nothing more until time passes.
func TestPolicyAtOnce(t *testing.T) {
	const t0 = 3 * time.Hour
	for _, c := range policies {
		p := c.new()
		for i := range c.limit {
			if d := p.AllowN("k", t0, 1); !d.Allowed || d.Remaining != c.limit-1-i {
				t.Errorf("%s: unit %d: %+v, want allowed with %d left", c.name, i+1, d, c.limit-1-i)
			}
		}
		if d := p.AllowN("k", t0, 1); d.Allowed {
			t.Errorf("%s: unit %d at one instant allowed: %+v", c.name, c.limit+1, d)
		}
	}
}
