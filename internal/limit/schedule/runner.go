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
// one timer until the scheduler's next instant and hands the jobs due then
// to a handler; it also wakes when idle groups expire, to drop them from
// memory. It is safe for simultaneous use.
type Runner[T any] struct {
	clock  Clock
	handle func(Job[T])
	wake   chan struct{} // capacity 1: Submit tells Run to look again

	mu      sync.Mutex
	s       *Scheduler[T]
	armed   int64 // the instant Run waits for; math.MaxInt64 for none
	running bool
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
		if next, ok := r.s.Next(); ok && unixNano(next) < r.armed {
			r.armed = unixNano(next)
			select {
			case r.wake <- struct{}{}:
			default:
			}
		}
	}
	return ready, err
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

// Groups returns the number of groups in memory; see Scheduler.Groups.
func (r *Runner[T]) Groups() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s.Groups()
}

// Run hands jobs out as they come due until ctx is done, and then returns
// ctx.Err(); waiting jobs stay queued. It returns ErrRunning when another
// Run is under way.
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

	var jobs []Job[T]
	for {
		r.mu.Lock()
		jobs = r.s.Due(r.clock.Now(), jobs[:0])
		// Wake for the next job, or to drop idle groups from memory.
		next, ok := r.s.Next()
		if exp, idle := r.s.NextExpiry(); idle && (!ok || exp.Before(next)) {
			next, ok = exp, true
		}
		r.armed = math.MaxInt64
		if ok {
			r.armed = unixNano(next)
		}
		r.mu.Unlock()

		for _, j := range jobs {
			r.handle(j)
		}
		clear(jobs) // let the values go

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
