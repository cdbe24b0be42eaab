package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// refJob is the test's own record of a submitted job.
type refJob struct {
	id        JobID
	group     int
	submitted int64
	predicted int64 // what Submit returned
	// moved: a job ahead of it in its group was canceled after it was
	// submitted, so it may start before predicted. notBefore is the latest
	// such cancel: it could not pass that job earlier.
	moved     bool
	notBefore int64
	canceled  bool
	done      bool
}

// refGroup is the test's model of a group: its rule, the calls made, and
// its jobs in submission order.
type refGroup struct {
	name  string
	rule  Rule
	calls []int64
	jobs  []*refJob
}

// earliest returns the earliest instant at or after lower at which rule
// allows one more call, given calls (all at or before lower): the answer
// of brute force over every instant where the count can drop.
func (g *refGroup) earliest(lower int64) int64 {
	w := int64(g.rule.Per)
	if g.rule.Kind == KindFixedWindow {
		ws := windowStart(lower, w)
		n := 0
		for _, c := range g.calls {
			if windowStart(c, w) == ws {
				n++
			}
		}
		if n < g.rule.Calls {
			return lower
		}
		return ws + w
	}
	cand := []int64{lower}
	for _, c := range g.calls {
		if c+w > lower {
			cand = append(cand, c+w)
		}
	}
	slices.Sort(cand)
	for _, t := range cand {
		n := 0
		for _, c := range g.calls {
			if c > t-w && c <= t {
				n++
			}
		}
		if n < g.rule.Calls {
			return t
		}
	}
	panic("unreachable: the last candidate frees a slot")
}

// checkLimit reports whether the calls respect the rule: at most Calls in
// any one window (fixed) or in any span (t-Per, t] (sliding; checking at
// every call suffices, since counts rise only at calls).
func (g *refGroup) checkLimit() error {
	w := int64(g.rule.Per)
	for i, t := range g.calls {
		n := 0
		for _, c := range g.calls[:i+1] {
			if g.rule.Kind == KindFixedWindow && windowStart(c, w) == windowStart(t, w) ||
				g.rule.Kind == KindSlidingLog && c > t-w {
				n++
			}
		}
		if n > g.rule.Calls {
			return fmt.Errorf("group %s (%v): %d calls counting at %d", g.name, g.rule, n, t)
		}
	}
	return nil
}

// check verifies the scheduler's internal invariants.
func (s *Scheduler[T]) check() error {
	waiting := 0
	for i, g := range s.due {
		if g.index != i || g.live == 0 || s.groups[g.key] != g {
			return fmt.Errorf("due[%d] = %q: index %d live %d", i, g.key, g.index, g.live)
		}
		if i > 0 && s.due[(i-1)/2].at > g.at {
			return fmt.Errorf("due heap out of order at %d", i)
		}
		live := 0
		for _, e := range g.q[g.head:] {
			if !e.canceled {
				live++
			}
		}
		if live != g.live {
			return fmt.Errorf("group %q: %d jobs in its queue, live %d", g.key, live, g.live)
		}
		waiting += live
	}
	for i, g := range s.idle {
		if g.index != i || g.live != 0 || s.groups[g.key] != g || g.at <= s.now {
			return fmt.Errorf("idle[%d] = %q: index %d live %d at %d now %d", i, g.key, g.index, g.live, g.at, s.now)
		}
	}
	if len(s.groups) != len(s.due)+len(s.idle) {
		return fmt.Errorf("%d groups, %d due, %d idle", len(s.groups), len(s.due), len(s.idle))
	}
	if waiting != len(s.jobs) {
		return fmt.Errorf("%d jobs in queues, %d in the index", waiting, len(s.jobs))
	}
	for id, ref := range s.jobs {
		e := ref.g.q[ref.seq-ref.g.seq0]
		if e.id != id || e.canceled {
			return fmt.Errorf("job %d: index points at %d (canceled %v)", id, e.id, e.canceled)
		}
	}
	return nil
}

// TestProperty submits jobs to random groups under random rules at random
// instants, cancels some, and calls Due at every instant Next reports and
// at random others. Every job must start at the earliest instant its
// group's rule and order allow (brute force over the calls made), at the
// instant Submit predicted unless a job ahead was canceled (then no
// later), in submission order; and no group may exceed its rule.
func TestProperty(t *testing.T) {
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { propertyRun(t, seed, seed%3 == 0) })
	}
}

func propertyRun(t *testing.T, seed uint64, cancels bool) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	pers := []time.Duration{time.Millisecond, 7 * time.Millisecond, time.Second, 5 * time.Second, 1500 * time.Millisecond}
	groups := make([]*refGroup, 1+rng.IntN(6))
	for i := range groups {
		k := KindFixedWindow
		if rng.IntN(2) == 0 {
			k = KindSlidingLog
		}
		groups[i] = &refGroup{name: fmt.Sprintf("g%d", i), rule: Rule{k, 1 + rng.IntN(5), pers[rng.IntN(len(pers))]}}
	}
	s := New[*refJob]()
	jobs := map[JobID]*refJob{}
	var order []*refJob
	now := unixNano(t0) + rng.Int64N(int64(10*time.Second)) // any alignment
	nextID := JobID(0)

	due := func(at int64) {
		for _, j := range s.Due(fromUnixNano(at), nil) {
			r := j.Value
			if j.At.UnixNano() != at || r.id != j.ID || r.done || r.canceled {
				t.Fatalf("Due(%d) handed out %+v (record %+v)", at, j, r)
			}
			g := groups[r.group]
			for _, o := range g.jobs { // submission order
				if o == r {
					break
				}
				if !o.done && !o.canceled {
					t.Fatalf("job %d handed out before job %d of its group", r.id, o.id)
				}
			}
			lower := max(r.submitted, r.notBefore)
			if len(g.calls) > 0 {
				lower = max(lower, g.calls[len(g.calls)-1])
			}
			if want := g.earliest(lower); at != want {
				t.Fatalf("job %d of %s (%v) started at %d, earliest allowed %d", r.id, g.name, g.rule, at, want)
			}
			if !r.moved && at != r.predicted || r.moved && at > r.predicted {
				t.Fatalf("job %d started at %d, predicted %d (moved %v)", r.id, at, r.predicted, r.moved)
			}
			r.done = true
			g.calls = append(g.calls, at)
		}
	}
	drainBefore := func(t1 int64) {
		for {
			next, ok := s.Next()
			if !ok || next.UnixNano() >= t1 {
				return
			}
			due(next.UnixNano())
		}
	}

	for range 400 {
		switch rng.IntN(4) {
		case 0: // same instant
		case 1:
			now += rng.Int64N(int64(10 * time.Millisecond))
		default:
			now += rng.Int64N(int64(3 * time.Second))
		}
		drainBefore(now)
		switch p := rng.IntN(20); {
		case p < 12:
			gi := rng.IntN(len(groups))
			g := groups[gi]
			r := &refJob{id: nextID, group: gi, submitted: now}
			nextID++
			at, err := s.Submit(fromUnixNano(now), g.name, g.rule, r.id, r)
			if err != nil {
				t.Fatal(err)
			}
			r.predicted = at.UnixNano()
			if r.predicted < now {
				t.Fatalf("job %d predicted %d before now %d", r.id, r.predicted, now)
			}
			jobs[r.id] = r
			g.jobs = append(g.jobs, r)
			order = append(order, r)
		case p < 15 && cancels:
			id := JobID(rng.IntN(int(nextID) + 1))
			r := jobs[id]
			want := r != nil && !r.done && !r.canceled
			if got := s.Cancel(id); got != want {
				t.Fatalf("Cancel(%d) = %v want %v", id, got, want)
			}
			if want {
				r.canceled = true
				behind := false
				for _, o := range groups[r.group].jobs {
					if behind && !o.done && !o.canceled {
						o.moved, o.notBefore = true, now
					}
					behind = behind || o == r
				}
			}
		default:
			due(now)
		}
		if err := s.check(); err != nil {
			t.Fatal(err)
		}
	}
	drainBefore(maxTime)
	for _, r := range order {
		if !r.done && !r.canceled {
			t.Fatalf("job %d never handed out", r.id)
		}
	}
	for _, g := range groups {
		if err := g.checkLimit(); err != nil {
			t.Fatal(err)
		}
	}
	// Everything expires: nothing left in memory.
	s.Due(fromUnixNano(max(now, s.now)+int64(time.Hour)), nil)
	if s.Groups() != 0 || s.Len() != 0 || len(s.due) != 0 || len(s.idle) != 0 {
		t.Fatalf("an hour after the last job: %d groups, %d jobs", s.Groups(), s.Len())
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
}
