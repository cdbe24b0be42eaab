package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/pinbot/pinbot/internal/limit/schedule"
	"github.com/pinbot/pinbot/internal/limit/schedule/scheduletest"
)

// event is a job handed out or an alarm called, with the time it was
// given: the job's At, or the alarm's now.
type event struct {
	name string
	now  time.Time
}

func (e event) String() string { return fmt.Sprintf("%s@%v", e.name, e.now.Sub(t0)) }

// recorder is a Runner whose jobs (their value) and alarms (the name
// they were filed with) report to one channel, in the order called.
type recorder struct {
	t     *testing.T
	clock *scheduletest.Clock
	r     *schedule.Runner[string]
	out   chan event
}

func newRecorder(t *testing.T, start time.Time) *recorder {
	t.Helper()
	rc := &recorder{t: t, clock: scheduletest.NewClock(start), out: make(chan event, 100)}
	rc.r = schedule.NewRunner(rc.clock, func(j schedule.Job[string]) { rc.out <- event{j.Value, j.At} })
	t.Cleanup(func() {
		if len(rc.out) != 0 {
			t.Errorf("%d jobs or alarms called that the test did not expect", len(rc.out))
		}
	})
	return rc
}

// run starts Run; stop ends it and checks that it returned ctx's error.
// It is called at the test's end if the test did not.
func (rc *recorder) run() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rc.r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				rc.t.Errorf("Run returned %v want context.Canceled", err)
			}
		})
	}
	rc.t.Cleanup(stop)
	return stop
}

func (rc *recorder) alarm(at time.Time, name string) *schedule.Alarm {
	return rc.r.At(at, func(now time.Time) { rc.out <- event{name, now} })
}

func (rc *recorder) submit(group string, rule schedule.Rule, id schedule.JobID, want time.Time) {
	rc.t.Helper()
	at, err := rc.r.Submit(group, rule, id, fmt.Sprintf("job%d", id))
	if err != nil {
		rc.t.Fatal(err)
	}
	if !at.Equal(want) {
		rc.t.Fatalf("Submit(%q, %d) = %v want %v", group, id, at.Sub(t0), want.Sub(t0))
	}
}

// expect receives len(want) events and compares them with want; it fails
// the test if they do not come within 10 s of real time (a hang, not a
// timing assumption).
func (rc *recorder) expect(want ...event) {
	rc.t.Helper()
	var got []event
	for range want {
		select {
		case e := <-rc.out:
			got = append(got, e)
		case <-time.After(10 * time.Second):
			rc.t.Fatalf("received %v, want %v", got, want)
		}
	}
	for i := range want {
		if got[i].name != want[i].name || !got[i].now.Equal(want[i].now) {
			rc.t.Fatalf("received %v, want %v", got, want)
		}
	}
}

// armed waits until Run sleeps until at.
func (rc *recorder) armed(at time.Time) {
	rc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rc.clock.WaitTimerAt(ctx, at); err != nil {
		rc.t.Fatal(err)
	}
}

// TestRunnerAlarmOrder: at one instant, the jobs due and then the alarms
// in filing order; woken late, the alarms due before the first job's
// instant, the jobs, then the other alarms.
func TestRunnerAlarmOrder(t *testing.T) {
	rc := newRecorder(t, sec(0))
	rc.run()
	rule := schedule.Rule{Kind: schedule.KindSlidingLog, Calls: 1, Per: 5 * time.Second}

	rc.submit("g", rule, 1, sec(0))
	rc.expect(event{"job1", sec(0)})
	rc.alarm(sec(5), "a")
	rc.submit("g", rule, 2, sec(5))
	rc.alarm(sec(5), "b")
	rc.armed(sec(5))
	rc.clock.Set(sec(5))
	rc.expect(event{"job2", sec(5)}, event{"a", sec(5)}, event{"b", sec(5)})

	// The clock jumps from 5 s to 12 s: one wake.
	rc.alarm(sec(12), "d")
	rc.submit("g", rule, 3, sec(10))
	rc.alarm(sec(6), "c")
	rc.alarm(sec(10), "e")
	rc.armed(sec(6))
	rc.clock.Set(sec(12))
	rc.expect(event{"c", sec(12)}, event{"job3", sec(12)}, event{"e", sec(12)}, event{"d", sec(12)})
}

// TestRunnerAlarmStop: a stopped alarm is not called; Stop reports true
// only for an alarm still filed.
func TestRunnerAlarmStop(t *testing.T) {
	rc := newRecorder(t, sec(0))
	a := rc.alarm(sec(5), "a") // filed before Run starts
	rc.run()
	if !a.Stop() {
		t.Fatal("Stop of a filed alarm = false")
	}
	if a.Stop() {
		t.Error("second Stop = true")
	}
	if n := rc.r.Alarms(); n != 0 {
		t.Errorf("Alarms() = %d after Stop, want 0", n)
	}
	// Filed after a, at its instant: called after it, had it not been
	// stopped.
	b := rc.alarm(sec(5), "b")
	if !b.At().Equal(sec(5)) {
		t.Errorf("At() = %v want 5 s", b.At().Sub(t0))
	}
	rc.armed(sec(5))
	rc.clock.Set(sec(5))
	rc.expect(event{"b", sec(5)})
	if b.Stop() {
		t.Error("Stop after the alarm was called = true")
	}
}

// TestRunnerAlarmRearms: an alarm before the instant Run sleeps until
// wakes it at its own.
func TestRunnerAlarmRearms(t *testing.T) {
	rc := newRecorder(t, sec(0))
	rc.run()
	rule := schedule.Rule{Kind: schedule.KindFixedWindow, Calls: 1, Per: 10 * time.Second}
	rc.submit("g", rule, 1, sec(0))
	rc.submit("g", rule, 2, sec(10))
	rc.expect(event{"job1", sec(0)})
	rc.armed(sec(10))

	rc.alarm(sec(5), "a")
	rc.alarm(sec(20), "later") // after: Run keeps sleeping until the job
	rc.armed(sec(5))
	rc.clock.Set(sec(5))
	rc.expect(event{"a", sec(5)})
	rc.armed(sec(10))
	rc.clock.Set(sec(10))
	rc.expect(event{"job2", sec(10)})
	rc.armed(sec(20))
	rc.clock.Set(sec(20))
	rc.expect(event{"later", sec(20)})
}

// TestRunnerAlarmDue: alarms filed for the clock's time or before are
// called at once, in instant order, with the clock's time; an alarm may
// file another, and Submit, from its function.
func TestRunnerAlarmDue(t *testing.T) {
	rc := newRecorder(t, sec(10))
	// Both filed before Run starts: a running Run may call the first
	// before the second is filed.
	rc.alarm(sec(10), "now")
	rc.alarm(sec(9), "before")
	rc.run()
	rc.expect(event{"before", sec(10)}, event{"now", sec(10)})

	rule := schedule.DiscordChannel()
	rc.r.At(sec(10), func(now time.Time) {
		rc.out <- event{"outer", now}
		rc.alarm(now, "inner")
		if _, err := rc.r.Submit("g", rule, 1, "job1"); err != nil {
			t.Error(err)
		}
	})
	rc.expect(event{"outer", sec(10)}, event{"job1", sec(10)}, event{"inner", sec(10)})
}

// TestRunnerAlarmRunReturns: alarms stay filed while no Run is under
// way, and the next Run calls those due.
func TestRunnerAlarmRunReturns(t *testing.T) {
	rc := newRecorder(t, sec(0))
	stop := rc.run()
	rc.alarm(sec(5), "a")
	rc.alarm(sec(6), "b")
	rc.armed(sec(5))
	stop()
	rc.clock.Set(sec(5))
	if n := rc.r.Alarms(); n != 2 {
		t.Fatalf("Alarms() = %d after Run returned, want 2", n)
	}
	rc.run()
	rc.expect(event{"a", sec(5)})
	rc.armed(sec(6))
	rc.clock.Set(sec(6))
	rc.expect(event{"b", sec(6)})
}

// TestRunnerConcurrentUse submits, cancels, files and stops from many
// goroutines while the clock moves, under a lock of the caller's that
// the handler and the alarms take too (as a user of the Runner does), and
// then ends Run while alarms are being filed. Every job is handed out or
// canceled once, every alarm called or stopped once, none after Run
// returned. Run under -race.
func TestRunnerConcurrentUse(t *testing.T) {
	const workers, rounds = 4, 200
	clock := scheduletest.NewClock(sec(0))
	rule := schedule.Rule{Kind: schedule.KindSlidingLog, Calls: 1000, Per: time.Second}

	var (
		mu       sync.Mutex // the caller's lock
		jobs     = map[schedule.JobID]int{}
		canceled = map[schedule.JobID]bool{}
		alarms   []*schedule.Alarm
		called   = map[*schedule.Alarm]int{}
		stopped  = map[*schedule.Alarm]bool{}
		returned bool // Run has returned
		late     int  // jobs or alarms called after that
		pending  sync.WaitGroup
	)
	var r *schedule.Runner[int]
	// file files an alarm for at; the caller holds mu.
	var file func(at time.Time, chain bool)
	file = func(at time.Time, chain bool) {
		pending.Add(1)
		var a *schedule.Alarm // set before fn can take mu
		a = r.At(at, func(now time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if returned {
				late++
			}
			called[a]++
			if chain {
				file(now, false) // due at once
			}
			pending.Done()
		})
		alarms = append(alarms, a)
	}
	r = schedule.NewRunner(clock, func(j schedule.Job[int]) {
		mu.Lock()
		defer mu.Unlock()
		if returned {
			late++
		}
		jobs[j.ID]++
		if j.Value%2 == 0 {
			file(j.At, false)
		}
		pending.Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	var work sync.WaitGroup
	for w := range workers {
		work.Add(1)
		go func() {
			defer work.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range rounds {
				id := schedule.JobID(w*rounds + i)
				mu.Lock()
				switch rnd.IntN(4) {
				case 0:
					pending.Add(1)
					if _, err := r.Submit(fmt.Sprint("g", w%3), rule, id, i); err != nil {
						t.Error(err)
						pending.Done()
					}
				case 1:
					file(clock.Now().Add(time.Duration(rnd.IntN(100))*time.Millisecond), rnd.IntN(2) == 0)
				case 2:
					if len(alarms) > 0 {
						a := alarms[rnd.IntN(len(alarms))]
						if a.Stop() {
							stopped[a] = true
							pending.Done()
						}
					}
				case 3:
					if prev := id - schedule.JobID(rnd.IntN(3)); r.Cancel(prev) {
						canceled[prev] = true
						pending.Done()
					}
				}
				mu.Unlock()
			}
		}()
	}
	for range rounds {
		clock.Advance(10 * time.Millisecond)
	}
	work.Wait()
	clock.Advance(time.Hour) // everything filed is due
	waitGroup(t, &pending)

	mu.Lock()
	for id, n := range jobs {
		if n != 1 || canceled[id] {
			t.Errorf("job %d handed out %d times, canceled %v", id, n, canceled[id])
		}
	}
	for _, a := range alarms {
		if called[a]+b2i(stopped[a]) != 1 {
			t.Errorf("alarm for %v called %d times, stopped %v", a.At().Sub(t0), called[a], stopped[a])
		}
	}
	mu.Unlock()

	// Ending Run while alarms due at once are filed.
	for range workers {
		work.Add(1)
		go func() {
			defer work.Done()
			for range rounds {
				mu.Lock()
				file(clock.Now(), false)
				mu.Unlock()
			}
		}()
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v want context.Canceled", err)
	}
	mu.Lock()
	returned = true
	mu.Unlock()
	work.Wait()
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, a := range alarms {
		n += called[a] + b2i(stopped[a])
	}
	if filed := r.Alarms(); late != 0 || n+filed != len(alarms) {
		t.Errorf("after Run returned: %d called late; %d called or stopped and %d filed of %d", late, n, filed, len(alarms))
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// waitGroup waits for wg, and fails the test after 10 s of real time (a
// hang, not a timing assumption).
func waitGroup(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("jobs or alarms still pending: a deadlock or a lost wake-up")
	}
}
