package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// jobFixture is an engine fixture whose OnJob hands jobs to a channel.
type jobFixture struct {
	*engineFixture
	ran chan Job
}

func newJobFixture(t *testing.T, mutate ...func(*Config)) *jobFixture {
	t.Helper()
	jf := &jobFixture{ran: make(chan Job, 1024)}
	jf.engineFixture = newFixture(t, append([]func(*Config){jf.handler}, mutate...)...)
	return jf
}

func (jf *jobFixture) handler(cfg *Config) {
	cfg.OnJob = func(j Job) { jf.ran <- j }
}

// restart restarts the engine with the fixture's handler.
func (jf *jobFixture) restart(mutate ...func(*Config)) {
	jf.t.Helper()
	jf.engineFixture.restart(append([]func(*Config){jf.handler}, mutate...)...)
}

// next waits for the next job handed out; it fails the test after 10 s
// (a job that never comes).
func (jf *jobFixture) next() Job {
	jf.t.Helper()
	select {
	case j := <-jf.ran:
		return j
	case <-time.After(10 * time.Second):
		jf.t.Fatal("no job handed out")
		return Job{}
	}
}

// none checks that no job was handed out so far.
func (jf *jobFixture) none() {
	jf.t.Helper()
	select {
	case j := <-jf.ran:
		jf.t.Fatalf("job %d handed out, want none", j.ID)
	default:
	}
}

func (jf *jobFixture) enqueue(account string, n int) Queued {
	jf.t.Helper()
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = fmt.Appendf(nil, "job %d", i)
	}
	q, err := jf.eng.Enqueue(jf.ctx, account, payloads)
	if err != nil {
		jf.t.Fatalf("Enqueue: %v", err)
	}
	return q
}

func (jf *jobFixture) jobs(account string) ([]Job, Status) {
	jf.t.Helper()
	js, st, err := jf.eng.Jobs(jf.ctx, account)
	if err != nil {
		jf.t.Fatalf("Jobs: %v", err)
	}
	return js, st
}

func (jf *jobFixture) finish(j Job, o Outcome) Status {
	jf.t.Helper()
	st, err := jf.eng.Finish(jf.ctx, j, o)
	if err != nil {
		jf.t.Fatalf("Finish(%d): %v", j.ID, err)
	}
	return st
}

// states returns the jobs' states, in order.
func states(js []Job) []persistence.JobState {
	out := make([]persistence.JobState, len(js))
	for i, j := range js {
		out[i] = j.State
	}
	return out
}

// fillSpread makes account use n slots with pins one minute apart, the
// last at the clock's time.
func (jf *jobFixture) fillSpread(account string, n int) []time.Time {
	jf.t.Helper()
	var at []time.Time
	for i := 0; i < n; i++ {
		if i > 0 {
			jf.clock.Advance(time.Minute)
		}
		jf.fill(account, 1)
		at = append(at, jf.eng.Now())
	}
	return at
}

// TestJobsStartAtTheirSlots: at 95/100, 10 pins: 5 slots now, 5 jobs
// queued, each starting at the exact instant a slot frees, never earlier.
func TestJobsStartAtTheirSlots(t *testing.T) {
	jf := newJobFixture(t)
	pins := jf.fillSpread("acct", 95)
	jf.clock.Advance(time.Minute)
	g := jf.reserve("acct", 10)
	if g.Granted != 5 {
		t.Fatalf("granted %d at 95/100, want 5", g.Granted)
	}
	for _, r := range g.Reservations() {
		if _, err := jf.eng.Commit(jf.ctx, r, jf.eng.Now()); err != nil {
			t.Fatal(err)
		}
	}
	q := jf.enqueue("acct", 5)
	if len(q.Jobs) != 5 || q.Refused != 0 || q.Status.Queued != 5 {
		t.Fatalf("Enqueue = %d jobs, %d refused, status %+v", len(q.Jobs), q.Refused, q.Status)
	}
	window := jf.eng.Config().Window
	for i, j := range q.Jobs {
		if want := pins[i].Add(window); !j.Due.Equal(want) || j.State != JobWaiting {
			t.Errorf("job %d: due %v (%v), want %v waiting", i, j.Due, j.State, want)
		}
	}
	for i, want := range q.Jobs {
		jf.clock.Set(want.Due.Add(-time.Millisecond))
		js, st := jf.jobs("acct")
		if js[0].State != JobWaiting || st.Queued != 5-i {
			t.Fatalf("1 ms before job %d's slot: %v, %d queued", i, states(js), st.Queued)
		}
		jf.none()
		jf.clock.Set(want.Due)
		j := jf.next()
		if j.ID != want.ID || j.State != JobRunning || j.Recovered {
			t.Fatalf("handed out %+v, want job %d running", j, want.ID)
		}
		// The slot was reserved at the instant it freed.
		if got := j.Slot.Deadline.Add(-jf.eng.Config().Lease); !got.Equal(want.Due) {
			t.Errorf("job %d started at %v, want %v", i, got, want.Due)
		}
		if st := jf.finish(j, Outcome{Done: true, At: jf.eng.Now(), Result: []byte("ok")}); st.Used != 100 {
			t.Errorf("after job %d: used %d, want 100", i, st.Used)
		}
	}
	js, st := jf.jobs("acct")
	if st.Queued != 0 || len(js) != 5 || !slices.Equal(states(js), []persistence.JobState{JobDone, JobDone, JobDone, JobDone, JobDone}) {
		t.Fatalf("after all: %v, status %+v", states(js), st)
	}
	if string(js[0].Result) != "ok" || string(js[0].Payload) != "job 0" {
		t.Errorf("done job keeps result %q, payload %q", js[0].Result, js[0].Payload)
	}
}

// TestJobsGoFirst: while jobs wait, Reserve gets only the slots they leave
// free; at the instant a slot frees, the job takes it.
func TestJobsGoFirst(t *testing.T) {
	jf := newJobFixture(t)
	pins := jf.fillSpread("acct", 100)
	q := jf.enqueue("acct", 2)
	jf.clock.Set(q.Jobs[0].Due)
	if g := jf.reserve("acct", 1); g.Granted != 0 || g.Queued != 1 {
		t.Fatalf("Reserve while a job is due: %+v, want nothing granted and 1 queued", g)
	}
	first := jf.next()
	if first.ID != q.Jobs[0].ID {
		t.Fatalf("handed out job %d, want %d", first.ID, q.Jobs[0].ID)
	}
	// Releasing the job's slot frees it for the next job at once.
	jf.finish(first, Outcome{})
	second := jf.next()
	if second.ID != q.Jobs[1].ID || !second.Slot.Deadline.Equal(pins[0].Add(jf.eng.Config().Window+jf.eng.Config().Lease)) {
		t.Fatalf("second job %+v, want job %d started at once", second, q.Jobs[1].ID)
	}
	jf.finish(second, Outcome{Done: true, At: jf.eng.Now()})
	// With no job waiting, Reserve is back to normal.
	jf.clock.Set(pins[1].Add(jf.eng.Config().Window))
	if g := jf.reserve("acct", 2); g.Granted != 1 {
		t.Fatalf("Reserve after the queue: granted %d, want 1", g.Granted)
	}
}

// TestJobsSurviveRestart: waiting jobs come back after a restart with the
// same start times; a running job comes back recovered and is never
// started again; a passivated account wakes when its job is due.
func TestJobsSurviveRestart(t *testing.T) {
	jf := newJobFixture(t)
	jf.fillSpread("acct", 100)
	q := jf.enqueue("acct", 3)
	jf.clock.Set(q.Jobs[0].Due)
	running := jf.next()
	jf.restart()
	rec := jf.next()
	if rec.ID != running.ID || !rec.Recovered || rec.Slot != running.Slot {
		t.Fatalf("after restart: %+v, want job %d recovered", rec, running.ID)
	}
	js, st := jf.jobs("acct")
	if !slices.Equal(states(js), []persistence.JobState{JobRunning, JobWaiting, JobWaiting}) || st.Used != 100 {
		t.Fatalf("after restart: %v, status %+v", states(js), st)
	}
	if !js[1].Due.Equal(q.Jobs[1].Due) || !js[2].Due.Equal(q.Jobs[2].Due) {
		t.Errorf("start times after restart %v, %v; want %v, %v", js[1].Due, js[2].Due, q.Jobs[1].Due, q.Jobs[2].Due)
	}
	// Unknown: the slot counts until its lease ends.
	if st := jf.finish(rec, Outcome{Unknown: true, Result: []byte("unknown")}); st.Used != 100 || st.Pending != 1 {
		t.Fatalf("after an unknown outcome: %+v", st)
	}
	if _, err := jf.eng.Finish(jf.ctx, rec, Outcome{}); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("second Finish: %v, want ErrUnknownJob", err)
	}
	// Passivate the account, then let its next job come due.
	if _, err := jf.eng.call(jf.ctx, "acct", request{op: opStop}); err != nil {
		t.Fatal(err)
	}
	<-jf.stops
	jf.clock.Set(q.Jobs[1].Due)
	if j := jf.next(); j.ID != q.Jobs[1].ID || j.Recovered {
		t.Fatalf("after passivation: %+v, want job %d", j, q.Jobs[1].ID)
	}
}

// TestJobsRecoveredNeverReleased: whatever outcome a recovered job is
// finished with short of Done (a retry, a release), its slot stays
// pending until its lease ends and the job is never handed out again.
func TestJobsRecoveredNeverReleased(t *testing.T) {
	for _, o := range []Outcome{{Retry: true, RetryAfter: time.Second}, {}} {
		t.Run(fmt.Sprintf("retry=%v", o.Retry), func(t *testing.T) {
			jf := newJobFixture(t)
			jf.fillSpread("acct", 100)
			q := jf.enqueue("acct", 1)
			jf.clock.Set(q.Jobs[0].Due)
			running := jf.next()
			jf.restart()
			rec := jf.next()
			if !rec.Recovered || rec.ID != running.ID {
				t.Fatalf("after restart: %+v, want job %d recovered", rec, running.ID)
			}
			st := jf.finish(rec, o)
			if st.Used != 100 || st.Pending != 1 || st.Queued != 0 {
				t.Fatalf("after finishing a recovered job with %+v: %+v, want its slot still pending and nothing queued", o, st)
			}
			js, _ := jf.jobs("acct")
			if len(js) != 1 || js[0].State != JobDone {
				t.Fatalf("jobs after finish: %+v, want the one job done", js)
			}
			jf.clock.Advance(time.Hour)
			jf.none()
		})
	}
}

// TestJobsRecoveredAbsent: a recovered job proven not done (Absent) gives
// its slot back, pending or lapsed, and with Retry goes back to the head
// of the queue and runs again; Absent with Done or Unknown is refused.
func TestJobsRecoveredAbsent(t *testing.T) {
	for _, lapsed := range []bool{false, true} {
		t.Run(fmt.Sprintf("lapsed=%v", lapsed), func(t *testing.T) {
			jf := newJobFixture(t)
			jf.fillSpread("acct", 100)
			q := jf.enqueue("acct", 1)
			jf.clock.Set(q.Jobs[0].Due)
			running := jf.next()
			jf.restart()
			rec := jf.next()
			if !rec.Recovered || rec.ID != running.ID {
				t.Fatalf("after restart: %+v, want job %d recovered", rec, running.ID)
			}
			if lapsed {
				jf.clock.Set(rec.Slot.Deadline.Add(time.Second))
			}
			for _, bad := range []Outcome{{Absent: true, Done: true, At: jf.eng.Now()}, {Absent: true, Unknown: true}} {
				if _, err := jf.eng.Finish(context.Background(), rec, bad); !errors.Is(err, ErrInvalidOutcome) {
					t.Fatalf("Finish(%+v) = %v, want ErrInvalidOutcome", bad, err)
				}
			}
			before, err := jf.eng.Status(jf.ctx, "acct")
			if err != nil {
				t.Fatal(err)
			}
			// Used counts the slot either way: lapsed, as a pin; pending,
			// as pending.
			counted := map[bool]int{true: 1}[lapsed]
			if before.Pending != 1-counted {
				t.Fatalf("before: %+v, want the slot %s", before, map[bool]string{true: "lapsed", false: "pending"}[lapsed])
			}
			st := jf.finish(rec, Outcome{Absent: true, Retry: true, RetryAfter: time.Second})
			if st.Used != before.Used-1 || st.Pending != 0 || st.Queued != 1 {
				t.Fatalf("after Absent: %+v (before %+v), want the slot given back and the job queued again", st, before)
			}
			jf.clock.Advance(time.Hour)
			again := jf.next()
			if again.ID != rec.ID || again.Recovered || again.Slot.ID == rec.Slot.ID {
				t.Fatalf("ran again: %+v, want job %d with a new slot", again, rec.ID)
			}
		})
	}
}

// TestJobsDueUnderEarlierRule: while an earlier rule (1 per hour) is
// still in force after a change to 2 per minute, every job starts at the
// very instant announced when it was queued, in queue order, including
// the jobs beyond the current limit.
func TestJobsDueUnderEarlierRule(t *testing.T) {
	jf := newJobFixture(t, func(c *Config) { c.Limit, c.Window = 1, time.Hour })
	jf.fill("acct", 1)
	jf.restart(func(c *Config) { c.Limit, c.Window = 2, time.Minute })
	q := jf.enqueue("acct", 4)
	for i := 0; i < len(q.Jobs); {
		due := q.Jobs[i].Due
		if i > 0 && due.Before(q.Jobs[i-1].Due) {
			t.Fatalf("job %d announced at %v, before job %d at %v", i, due, i-1, q.Jobs[i-1].Due)
		}
		jf.clock.Set(due.Add(-time.Millisecond))
		jf.none()
		jf.clock.Set(due)
		// The jobs announced for this instant start now, and no other.
		var want, got []uint64
		for ; i < len(q.Jobs) && q.Jobs[i].Due.Equal(due); i++ {
			want = append(want, q.Jobs[i].ID)
		}
		for range want {
			j := jf.next()
			got = append(got, j.ID)
			jf.finish(j, Outcome{Done: true, At: jf.eng.Now()})
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("at %v jobs %v started, want %v (announced then)", due, got, want)
		}
		jf.none()
	}
}

// TestJobsQueueBound: beyond MaxQueue, payloads are refused.
func TestJobsQueueBound(t *testing.T) {
	jf := newJobFixture(t, func(c *Config) { c.MaxQueue = 3 })
	jf.fill("acct", 100)
	q := jf.enqueue("acct", 5)
	if len(q.Jobs) != 3 || q.Refused != 2 {
		t.Fatalf("Enqueue 5 with room for 3: %d queued, %d refused", len(q.Jobs), q.Refused)
	}
	if q := jf.enqueue("acct", 1); len(q.Jobs) != 0 || q.Refused != 1 {
		t.Fatalf("Enqueue into a full queue: %d queued, %d refused", len(q.Jobs), q.Refused)
	}
}

// TestJobsCancel: canceled jobs never run, and the jobs behind them move
// up.
func TestJobsCancel(t *testing.T) {
	jf := newJobFixture(t)
	jf.fillSpread("acct", 100)
	q := jf.enqueue("acct", 3)
	canceled, st, err := jf.eng.Cancel(jf.ctx, "acct", []uint64{q.Jobs[0].ID, 12345})
	if err != nil || len(canceled) != 1 || canceled[0].ID != q.Jobs[0].ID || st.Queued != 2 {
		t.Fatalf("Cancel = %v, %+v, %v", canceled, st, err)
	}
	js, _ := jf.jobs("acct")
	if len(js) != 2 || !js[0].Due.Equal(q.Jobs[0].Due) || !js[1].Due.Equal(q.Jobs[1].Due) {
		t.Fatalf("after cancel: %+v", js)
	}
	jf.restart()
	if canceled, _, err = jf.eng.Cancel(jf.ctx, "acct", nil); err != nil || len(canceled) != 2 {
		t.Fatalf("Cancel all after restart = %v, %v", canceled, err)
	}
	jf.clock.Set(q.Jobs[2].Due.Add(time.Hour))
	if js, st := jf.jobs("acct"); len(js) != 0 || st.Queued != 0 {
		t.Fatalf("after cancel all: %+v", js)
	}
	jf.none()
}

// TestJobsWriteFailure: a queue that cannot be written queues nothing; a
// job whose start cannot be written stays waiting, its slot free, and
// starts once the store is back.
func TestJobsWriteFailure(t *testing.T) {
	jf := newJobFixture(t)
	pins := jf.fillSpread("acct", 100)
	jf.store.FailWrites(persistencetest.ErrDiskFull)
	if _, err := jf.eng.Enqueue(jf.ctx, "acct", [][]byte{[]byte("x")}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Enqueue on a full disk: %v, want ErrUnavailable", err)
	}
	jf.store.ClearFaults()
	q := jf.enqueue("acct", 1)
	if q.Status.Queued != 1 {
		t.Fatalf("queued %d, want 1", q.Status.Queued)
	}
	jf.store.FailWrites(persistencetest.ErrDiskFull)
	jf.clock.Set(q.Jobs[0].Due)
	js, st := jf.jobs("acct")
	if js[0].State != JobWaiting || st.Used != 99 {
		t.Fatalf("start failed: %v, used %d; want waiting and 99 used", states(js), st.Used)
	}
	jf.none()
	jf.store.ClearFaults()
	// The job's start is retried only after jobRetry, and meanwhile the
	// free slot stays the job's.
	if g := jf.reserve("acct", 1); g.Granted != 0 || g.Queued != 1 {
		t.Fatalf("Reserve before the retry: %+v, want nothing granted, 1 queued", g)
	}
	if js, _ := jf.jobs("acct"); js[0].State != JobWaiting {
		t.Fatalf("before the retry: %v, want waiting", states(js))
	}
	jf.clock.Advance(jobRetry)
	j := jf.next()
	if j.ID != q.Jobs[0].ID || !j.Slot.Deadline.Equal(pins[0].Add(jf.eng.Config().Window+jobRetry+jf.eng.Config().Lease)) {
		t.Fatalf("retried job %+v", j)
	}
}

// TestJobsNeedHandler: an engine without OnJob queues nothing.
func TestJobsNeedHandler(t *testing.T) {
	f := newFixture(t)
	if _, err := f.eng.Enqueue(context.Background(), "acct", [][]byte{nil}); !errors.Is(err, ErrNoJobHandler) {
		t.Fatalf("Enqueue without handler: %v", err)
	}
}

// TestJobsRetry: a job put back goes to the head of the queue, its slot
// free, and starts again after the wait asked.
func TestJobsRetry(t *testing.T) {
	jf := newJobFixture(t)
	jf.fillSpread("acct", 100)
	q := jf.enqueue("acct", 2)
	jf.clock.Set(q.Jobs[0].Due)
	j := jf.next()
	st := jf.finish(j, Outcome{Retry: true, RetryAfter: time.Minute})
	if st.Used != 99 || st.Queued != 2 {
		t.Fatalf("after retry: %+v, want 99 used, 2 queued", st)
	}
	jf.clock.Advance(time.Minute - time.Millisecond)
	if js, _ := jf.jobs("acct"); js[0].ID != j.ID || js[0].State != JobWaiting {
		t.Fatalf("before the retry: %+v", js[0])
	}
	jf.none()
	// The retry comes due with the second job (one minute after the
	// first): both start, the retried one first, on the older slot.
	jf.clock.Advance(time.Millisecond)
	a, b := jf.next(), jf.next()
	if a.ID != j.ID {
		a, b = b, a
	}
	if a.ID != j.ID || a.Recovered || b.ID != q.Jobs[1].ID || a.Slot.ID >= b.Slot.ID {
		t.Fatalf("handed out %+v and %+v; want job %d retried first, then job %d", a, b, j.ID, q.Jobs[1].ID)
	}
}

// TestJobsRetriedNotRecovered: a job put back in the queue starts again
// under the same ID; the end of its first start, even when it comes
// after the second began (a late or repeated Finish), does not make this
// engine forget the second: reloaded after a passivation, the account
// does not take it for a job a previous engine left running (which would
// never be retried, its outcome kept unknown).
func TestJobsRetriedNotRecovered(t *testing.T) {
	jf := newJobFixture(t)
	jf.enqueue("acct", 1)
	first := jf.next()
	jf.finish(first, Outcome{Retry: true, RetryAfter: time.Minute})
	jf.clock.Advance(time.Minute)
	second := jf.next()
	if second.ID != first.ID || second.Slot.ID == first.Slot.ID || second.Recovered {
		t.Fatalf("started again as %+v after %+v", second, first)
	}
	if _, err := jf.eng.Finish(jf.ctx, first, Outcome{Done: true, At: jf.eng.Now()}); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("Finish of the first start again = %v, want ErrUnknownJob", err)
	}
	if err := jf.eng.Passivate(jf.ctx, func(a string) bool { return a == "acct" }); err != nil {
		t.Fatal(err)
	}
	// Reloaded: the second start is still this engine's.
	st := jf.finish(second, Outcome{Retry: true, RetryAfter: time.Minute})
	if st.Queued != 1 {
		t.Fatalf("after the second start's retry: %+v, want the job queued again", st)
	}
	if js, _ := jf.jobs("acct"); len(js) != 1 || js[0].State != JobWaiting {
		t.Fatalf("jobs %+v, want the one waiting", js)
	}
	jf.none()
}

// TestJobsServedLater: an engine without OnJob keeps its stored jobs
// until ServeJobs, then hands out the one left running as recovered and
// starts the due ones.
func TestJobsServedLater(t *testing.T) {
	jf := newJobFixture(t)
	jf.fillSpread("acct", 100)
	q := jf.enqueue("acct", 2)
	jf.clock.Set(q.Jobs[0].Due)
	running := jf.next()
	if err := jf.eng.Close(jf.ctx); err != nil {
		t.Fatal(err)
	}
	jf.start() // no handler
	jf.clock.Set(q.Jobs[1].Due)
	if js, _ := jf.jobs("acct"); !slices.Equal(states(js), []persistence.JobState{JobRunning, JobWaiting}) {
		t.Fatalf("before ServeJobs: %v", states(js))
	}
	if _, err := jf.eng.Enqueue(jf.ctx, "acct", [][]byte{nil}); !errors.Is(err, ErrNoJobHandler) {
		t.Fatalf("Enqueue before ServeJobs: %v", err)
	}
	if err := jf.eng.ServeJobs(func(j Job) { jf.ran <- j }); err != nil {
		t.Fatal(err)
	}
	if err := jf.eng.ServeJobs(func(Job) {}); !errors.Is(err, ErrJobsServed) {
		t.Fatalf("second ServeJobs: %v", err)
	}
	got := map[uint64]bool{}
	for range 2 {
		j := jf.next()
		got[j.ID] = j.Recovered
	}
	if rec, ok := got[running.ID]; !ok || !rec {
		t.Errorf("job %d not handed out as recovered: %v", running.ID, got)
	}
	if rec, ok := got[q.Jobs[1].ID]; !ok || rec {
		t.Errorf("job %d not started: %v", q.Jobs[1].ID, got)
	}
}
