package schedule

import (
	"context"
	"math"
	"sync"
	"time"
)

// Clock is a Runner's source of time and of its one timer.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Timer returns a timer that fires once the clock reads at or after
	// at: at once when it does already.
	Timer(at time.Time) Timer
}

// Timer is a one-shot timer made by a Clock.
type Timer interface {
	// C returns the channel the timer sends the time on when it fires.
	C() <-chan time.Time
	// Stop stops the timer and reports whether it had not fired yet.
	Stop() bool
}

// SystemClock returns a Clock that starts at the wall-clock time and runs
// on the monotonic clock: a wall-clock jump while running neither delays
// jobs nor hands them out early.
func SystemClock() Clock {
	return &systemClock{start: time.Now()}
}

type systemClock struct{ start time.Time }

func (c *systemClock) Now() time.Time { return c.start.Add(time.Since(c.start)) }

func (c *systemClock) Timer(at time.Time) Timer {
	return systemTimer{time.NewTimer(at.Sub(c.Now()))}
}

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time { return t.t.C }
func (t systemTimer) Stop() bool          { return t.t.Stop() }

// Runner drives a Scheduler with a Clock: one goroutine (Run) sleeps on
// one timer until the next instant anything is due, and then hands the
// jobs due to a handler and calls the alarms due (At); it also wakes when
// idle groups expire, to drop them from memory. It is safe for
// simultaneous use.
//
// Run calls the handler and the alarms without holding the Runner's lock:
// they may call Submit, Cancel, At and Stop, and so may code that holds a
// lock they take.
type Runner[T any] struct {
	clock  Clock
	handle func(Job[T])
	wake   chan struct{} // capacity 1: Submit or At tells Run to look again

	mu       sync.Mutex
	s        *Scheduler[T]
	alarms   alarmHeap
	alarmSeq uint64
	armed    int64 // the instant Run waits for; math.MaxInt64 for none
	running  bool
}

// NewRunner returns a runner of an empty Scheduler that hands each job out
// by calling handle on the goroutine calling Run, in the order Due returns
// them. handle should return quickly (start the work, or pass it on): jobs
// that come due while it runs are handed out late, and the jobs behind
// them in their groups start correspondingly later.
func NewRunner[T any](clock Clock, handle func(Job[T])) *Runner[T] {
	return &Runner[T]{
		clock:  clock,
		handle: handle,
		wake:   make(chan struct{}, 1),
		s:      New[T](),
		armed:  math.MaxInt64,
	}
}

// Submit queues a job at the clock's time; see Scheduler.Submit.
func (r *Runner[T]) Submit(group string, rule Rule, id JobID, v T) (time.Time, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ready, err := r.s.Submit(r.clock.Now(), group, rule, id, v)
	if err == nil {
		if next, ok := r.s.Next(); ok {
			r.rearmLocked(unixNano(next))
		}
	}
	return ready, err
}

// At files an alarm: Run calls fn, which must not be nil, once the clock
// reads at or after at, with the clock's time then, on its goroutine as
// it calls the job handler; at once when the instant has come already.
// Alarms are called in the order of their instants, those of one instant
// in the order At filed them, and after the jobs due at that instant; see
// Run. Like the handler, fn should return quickly.
func (r *Runner[T]) At(at time.Time, fn func(now time.Time)) *Alarm {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.alarmSeq++
	a := &Alarm{at: alarmNano(at), seq: r.alarmSeq, owner: r, fn: fn}
	r.alarms.push(a)
	r.rearmLocked(a.at)
	return a
}

// stop removes a from the alarms; see Alarm.Stop.
func (r *Runner[T]) stop(a *Alarm) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a.index < 0 {
		return false
	}
	r.alarms.remove(a.index)
	a.fn = nil
	// Run may wake for it for nothing, and then sleeps again.
	return true
}

// rearmLocked tells Run to look again when something is now due at t,
// before the instant it waits for. The caller holds r.mu.
func (r *Runner[T]) rearmLocked(t int64) {
	if t < r.armed {
		r.armed = t
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// Cancel removes a waiting job; see Scheduler.Cancel.
func (r *Runner[T]) Cancel(id JobID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s.Cancel(id)
}

// Len returns the number of waiting jobs.
func (r *Runner[T]) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s.Len()
}

// Alarms returns the number of alarms filed that have neither been taken
// to be called nor stopped.
func (r *Runner[T]) Alarms() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.alarms)
}

// Groups returns the number of groups in memory; see Scheduler.Groups.
func (r *Runner[T]) Groups() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s.Groups()
}

// Run hands jobs out and calls alarms as they come due until ctx is done,
// and then returns ctx.Err(); waiting jobs and alarms stay filed, and no
// alarm is called once Run has returned. It returns ErrRunning when
// another Run is under way.
//
// Each time it wakes, Run takes everything due at the clock's time and
// calls it in the order of the instants: the jobs due at an instant before
// the alarms of that instant. Jobs are handed out together, as Due does:
// when Run wakes late (its timer late, or a test's clock moved past
// several instants at once), the alarms due before the first job's
// instant are called before the jobs, and the others after them.
func (r *Runner[T]) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.running {
		r.mu.Unlock()
		return ErrRunning
	}
	r.running = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.running, r.armed = false, math.MaxInt64
		r.mu.Unlock()
	}()

	var (
		jobs          []Job[T]
		before, after []func(time.Time) // alarms called before the jobs, after them
	)
	for {
		r.mu.Lock()
		now := r.clock.Now()
		t := unixNano(now)
		first, waiting := r.s.Next()
		for len(r.alarms) > 0 && r.alarms[0].at <= t && (!waiting || r.alarms[0].at < unixNano(first)) {
			before = append(before, r.takeAlarmLocked())
		}
		jobs = r.s.Due(now, jobs[:0])
		for len(r.alarms) > 0 && r.alarms[0].at <= t {
			after = append(after, r.takeAlarmLocked())
		}
		// Wake for the next job or alarm, or to drop idle groups from
		// memory.
		next, ok := r.s.Next()
		if exp, idle := r.s.NextExpiry(); idle && (!ok || exp.Before(next)) {
			next, ok = exp, true
		}
		if len(r.alarms) > 0 && (!ok || r.alarms[0].at < unixNano(next)) {
			next, ok = fromUnixNano(r.alarms[0].at), true
		}
		r.armed = math.MaxInt64
		if ok {
			r.armed = unixNano(next)
		}
		r.mu.Unlock()

		for _, fn := range before {
			fn(now)
		}
		for _, j := range jobs {
			r.handle(j)
		}
		for _, fn := range after {
			fn(now)
		}
		// Let the values and functions go.
		clear(jobs)
		clear(before)
		clear(after)
		before, after = before[:0], after[:0]

		var timer Timer
		var fired <-chan time.Time
		if ok {
			timer = r.clock.Timer(next)
			fired = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-r.wake:
		case <-fired:
		}
		if timer != nil {
			timer.Stop()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// takeAlarmLocked removes the first alarm, which has come due, and
// returns its function. The caller holds r.mu.
func (r *Runner[T]) takeAlarmLocked() func(time.Time) {
	a := r.alarms[0]
	fn := a.fn
	a.fn = nil
	r.alarms.remove(0)
	return fn
}
