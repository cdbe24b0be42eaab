package schedule

import (
	"fmt"
	"math"
	"time"
)

// JobID names a job. The caller chooses it; it must be unique among the
// jobs waiting in one Scheduler.
type JobID uint64

// Job is a job handed out by Due.
type Job[T any] struct {
	ID    JobID
	Group string
	// At is the instant it was handed out and recorded as a call in its
	// group: the now passed to Due (or a later one passed before).
	At    time.Time
	Value T
}

// Scheduler runs jobs per group under each group's Rule: it hands a job
// out at the earliest instant the group's policy allows, jobs of one group
// in submission order, and records each hand-out as a call of the group.
//
// It is the pure core: it never reads a clock and starts no goroutine or
// timer. Callers pass the time to Submit and Due and ask Next when to call
// Due again; Runner does so with one timer. Instants passed in that are
// before one passed earlier count as that one: the scheduler's time never
// runs backward.
//
// The whole process's schedule is one min-heap of groups by the instant
// their first waiting job is due, so memory and work scale with groups and
// waiting jobs, not with timers. A group with nothing waiting is kept only
// while its recorded calls still constrain later ones (until its policy's
// expiry), in a second heap, and dropped at the first Submit or Due from
// then on (NextExpiry says when).
//
// A Scheduler is not safe for simultaneous use. The zero value is not
// usable; call New.
type Scheduler[T any] struct {
	now    int64 // newest instant seen, Unix ns
	groups map[string]*queue[T]
	jobs   map[JobID]jobRef[T]
	due    groupHeap[T] // groups with waiting jobs, by when the first is due
	idle   groupHeap[T] // groups with none, by their policy's expiry
}

// queue is one group's queue and policy. It is in the due heap while it
// has waiting jobs, else in the idle heap until its policy expires.
type queue[T any] struct {
	key    string
	rule   Rule
	policy policy
	// q holds the group's jobs in submission order from q[head] on; q[i]
	// has sequence number seq0+i. Canceled jobs stay, marked, until they
	// reach the head.
	q     []entry[T]
	head  int
	seq0  uint64
	live  int   // waiting jobs, canceled ones excluded
	at    int64 // heap key: the first job's ready time, or the expiry
	index int   // in its heap; -1 in none
}

type entry[T any] struct {
	id       JobID
	canceled bool
	v        T
}

// jobRef locates a waiting job.
type jobRef[T any] struct {
	g   *queue[T]
	seq uint64
}

// New returns an empty Scheduler.
func New[T any]() *Scheduler[T] {
	return &Scheduler[T]{
		now:    math.MinInt64,
		groups: make(map[string]*queue[T]),
		jobs:   make(map[JobID]jobRef[T]),
	}
}

// advance moves the scheduler's time to now unless it is past it already,
// and returns the scheduler's time in Unix ns.
func (s *Scheduler[T]) advance(now time.Time) int64 {
	if t := unixNano(now); t > s.now {
		s.now = t
	}
	return s.now
}

// Submit queues job id, carrying v, at the end of group's queue and
// returns the instant Due will hand it out: exactly that instant when Due
// is called at every instant Next reports, and earlier only when a job
// ahead of it in its group is canceled. The group is created with rule if
// it is not in memory; else rule must be the one it has (ErrRuleChanged).
func (s *Scheduler[T]) Submit(now time.Time, group string, rule Rule, id JobID, v T) (time.Time, error) {
	t := s.advance(now)
	s.forget(t)
	if _, dup := s.jobs[id]; dup {
		return time.Time{}, fmt.Errorf("%w: %d", ErrDuplicateID, id)
	}
	g := s.groups[group]
	if g == nil {
		if err := rule.Validate(); err != nil {
			return time.Time{}, err
		}
		g = &queue[T]{key: group, rule: rule, policy: newPolicy(rule), index: -1}
	} else if g.rule != rule {
		return time.Time{}, fmt.Errorf("%w: group %q has %v, not %v", ErrRuleChanged, group, g.rule, rule)
	}
	ready := g.policy.ready(t, g.live)
	if ready == maxTime {
		return time.Time{}, fmt.Errorf("%w: job %d is %d jobs behind in group %q", ErrTooFar, id, g.live, group)
	}
	if g.live == 0 {
		if g.index >= 0 {
			s.idle.remove(g.index)
		} else {
			s.groups[group] = g
		}
		g.at = ready
		s.due.push(g)
	}
	s.jobs[id] = jobRef[T]{g: g, seq: g.seq0 + uint64(len(g.q))}
	g.q = append(g.q, entry[T]{id: id, v: v})
	g.live++
	return fromUnixNano(ready), nil
}

// Cancel removes the waiting job id and reports whether there was one.
// Jobs behind it in its group move up: each starts at or before the
// instant Submit returned for it.
func (s *Scheduler[T]) Cancel(id JobID) bool {
	ref, ok := s.jobs[id]
	if !ok {
		return false
	}
	delete(s.jobs, id)
	g := ref.g
	g.q[ref.seq-g.seq0] = entry[T]{id: id, canceled: true}
	g.live--
	if g.live == 0 {
		g.empty()
		s.due.remove(g.index)
		s.rest(g)
	}
	// Otherwise the group stays due at its first job's instant: if that
	// job was this one, the next can start no earlier (the group's calls
	// are the same), and Due finds out whether it can start then.
	return true
}

// Due hands out, appended to dst, every job whose instant has come at now,
// records each as a call of its group made at now, and returns the
// extended slice. Jobs of one group come in submission order.
func (s *Scheduler[T]) Due(now time.Time, dst []Job[T]) []Job[T] {
	t := s.advance(now)
	at := fromUnixNano(t)
	for len(s.due) > 0 && s.due[0].at <= t {
		g := s.due[0]
		for {
			if r := g.policy.ready(t, 0); r > t {
				g.at = r
				s.due.fix(0)
				break
			}
			e := g.pop()
			delete(s.jobs, e.id)
			g.policy.record(t)
			dst = append(dst, Job[T]{ID: e.id, Group: g.key, At: at, Value: e.v})
			if g.live == 0 {
				g.empty()
				s.due.remove(0)
				s.rest(g)
				break
			}
		}
	}
	s.forget(t)
	return dst
}

// Next returns the instant at which Due next has work, and false when no
// job is waiting. Due may find nothing then when a job that was due was
// canceled.
func (s *Scheduler[T]) Next() (time.Time, bool) {
	if len(s.due) == 0 {
		return time.Time{}, false
	}
	return fromUnixNano(s.due[0].at), true
}

// NextExpiry returns the earliest instant from which a group with nothing
// waiting no longer constrains anything; the first Submit or Due from then
// on drops it from memory. It returns false when no such group is kept.
func (s *Scheduler[T]) NextExpiry() (time.Time, bool) {
	if len(s.idle) == 0 {
		return time.Time{}, false
	}
	return fromUnixNano(s.idle[0].at), true
}

// Len returns the number of waiting jobs.
func (s *Scheduler[T]) Len() int { return len(s.jobs) }

// Groups returns the number of groups in memory: those with waiting jobs,
// and those whose recorded calls still constrain later ones.
func (s *Scheduler[T]) Groups() int { return len(s.groups) }

// rest files g, which has nothing waiting, by its policy's expiry, or
// drops it when that has come.
func (s *Scheduler[T]) rest(g *queue[T]) {
	if exp := g.policy.expiry(); exp > s.now {
		g.at = exp
		s.idle.push(g)
		return
	}
	delete(s.groups, g.key)
}

// forget drops the idle groups whose policy has expired at t.
func (s *Scheduler[T]) forget(t int64) {
	for len(s.idle) > 0 && s.idle[0].at <= t {
		delete(s.groups, s.idle[0].key)
		s.idle.remove(0)
	}
}

// pop removes and returns the first waiting job; live must be positive.
func (g *queue[T]) pop() entry[T] {
	for g.q[g.head].canceled {
		g.q[g.head] = entry[T]{}
		g.head++
	}
	e := g.q[g.head]
	g.q[g.head] = entry[T]{}
	g.head++
	g.live--
	if g.head >= 16 && 2*g.head >= len(g.q) {
		n := copy(g.q, g.q[g.head:])
		clear(g.q[n:])
		g.q = g.q[:n]
		g.seq0 += uint64(g.head)
		g.head = 0
	}
	return e
}

// empty clears the queue of g, which has nothing waiting (only canceled
// jobs, if any), releasing a large array.
func (g *queue[T]) empty() {
	g.seq0 += uint64(len(g.q))
	if cap(g.q) > 8 {
		g.q = nil
	} else {
		clear(g.q)
		g.q = g.q[:0]
	}
	g.head = 0
}
