package schedule_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pinbot/pinbot/internal/limit/schedule"
	"github.com/pinbot/pinbot/internal/limit/schedule/scheduletest"
)

var t0 = time.Date(2026, time.November, 16, 12, 0, 0, 0, time.UTC)

func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// handout is a job as the handler saw it, with the clock's time then.
type handout struct {
	job schedule.Job[string]
	now time.Time
}

func startRunner(t *testing.T, clock schedule.Clock) (*schedule.Runner[string], chan handout) {
	t.Helper()
	out := make(chan handout, 100)
	r := schedule.NewRunner(clock, func(j schedule.Job[string]) { out <- handout{j, clock.Now()} })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v want context.Canceled", err)
		}
		if len(out) != 0 {
			t.Errorf("%d jobs handed out that the test did not expect", len(out))
		}
	})
	return r, out
}

// receive returns the next n hand-outs; it fails the test if they do not
// come within 10 s of real time (a hang, not a timing assumption).
func receive(t *testing.T, out chan handout, n int) []handout {
	t.Helper()
	var got []handout
	for range n {
		select {
		case h := <-out:
			got = append(got, h)
		case <-time.After(10 * time.Second):
			t.Fatalf("received %d of %d jobs", len(got), n)
		}
	}
	return got
}

func TestRunnerHandsOutAtInstants(t *testing.T) {
	clock := scheduletest.NewClock(sec(2))
	r, out := startRunner(t, clock)
	fixed := schedule.Rule{Kind: schedule.KindFixedWindow, Calls: 2, Per: 5 * time.Second}
	sliding := schedule.Rule{Kind: schedule.KindSlidingLog, Calls: 2, Per: 3 * time.Second}

	predicted := map[schedule.JobID]time.Time{}
	submit := func(group string, rule schedule.Rule, id schedule.JobID, want time.Time) {
		t.Helper()
		at, err := r.Submit(group, rule, id, group)
		if err != nil {
			t.Fatal(err)
		}
		if !at.Equal(want) {
			t.Fatalf("Submit(%q, %d) = %v want %v", group, id, at.Format(time.TimeOnly), want.Format(time.TimeOnly))
		}
		predicted[id] = at
	}
	for i, want := range []time.Time{sec(2), sec(2), sec(5), sec(5), sec(10)} {
		submit("fixed", fixed, schedule.JobID(i), want)
	}
	for i, want := range []time.Time{sec(2), sec(2), sec(5)} {
		submit("sliding", sliding, schedule.JobID(10+i), want)
	}

	check := func(hs []handout, at time.Time, ids ...schedule.JobID) {
		t.Helper()
		want := map[schedule.JobID]bool{}
		for _, id := range ids {
			want[id] = true
		}
		for _, h := range hs {
			if !want[h.job.ID] || !h.job.At.Equal(at) || !h.now.Equal(at) || !predicted[h.job.ID].Equal(at) {
				t.Errorf("job %d handed out at %v (clock %v), predicted %v, want one of %v at %v",
					h.job.ID, h.job.At.Format(time.TimeOnly), h.now.Format(time.TimeOnly),
					predicted[h.job.ID].Format(time.TimeOnly), ids, at.Format(time.TimeOnly))
			}
			delete(want, h.job.ID)
		}
	}
	// Due at once: Submit wakes the runner, the clock does not move.
	check(receive(t, out, 4), sec(2), 0, 1, 10, 11)

	// One nanosecond early, nothing fires; at the instant, its jobs.
	clock.Set(sec(5).Add(-time.Nanosecond))
	clock.Set(sec(5))
	check(receive(t, out, 3), sec(5), 2, 3, 12)

	// While the runner sleeps until 10 s, a job for a new group is due
	// now: it goes out at once.
	submit("other", fixed, 20, sec(5))
	check(receive(t, out, 1), sec(5), 20)

	clock.Set(sec(10))
	check(receive(t, out, 1), sec(10), 4)
	if r.Len() != 0 {
		t.Errorf("Len() = %d want 0", r.Len())
	}
}

func TestRunnerCancel(t *testing.T) {
	clock := scheduletest.NewClock(sec(0))
	r, out := startRunner(t, clock)
	rule := schedule.Rule{Kind: schedule.KindFixedWindow, Calls: 1, Per: time.Second}
	for i := range 3 {
		if _, err := r.Submit("c", rule, schedule.JobID(i), ""); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, out, 1) // job 0 at 0 s
	if !r.Cancel(1) {
		t.Fatal("Cancel(1) = false")
	}
	clock.Set(sec(1))
	if h := receive(t, out, 1)[0]; h.job.ID != 2 || !h.job.At.Equal(sec(1)) {
		t.Errorf("after canceling job 1: job %d at %v want job 2 at 1 s", h.job.ID, h.job.At.Format(time.TimeOnly))
	}
}

func TestRunnerRunsOnce(t *testing.T) {
	clock := scheduletest.NewClock(sec(0))
	r, out := startRunner(t, clock)
	if _, err := r.Submit("c", schedule.DiscordChannel(), 1, ""); err != nil {
		t.Fatal(err)
	}
	receive(t, out, 1) // Run is under way
	if err := r.Run(context.Background()); !errors.Is(err, schedule.ErrRunning) {
		t.Errorf("second Run: %v want ErrRunning", err)
	}
}

// TestRunnerDropsIdleGroups: with nothing submitted, the runner wakes
// when a group's calls stop counting and drops it from memory.
func TestRunnerDropsIdleGroups(t *testing.T) {
	clock := scheduletest.NewClock(sec(1))
	r, out := startRunner(t, clock)
	short := schedule.Rule{Kind: schedule.KindFixedWindow, Calls: 1, Per: 5 * time.Second}
	long := schedule.Rule{Kind: schedule.KindSlidingLog, Calls: 1, Per: 10 * time.Second}
	r.Submit("short", short, 1, "")
	r.Submit("long", long, 2, "")
	receive(t, out, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waitArmed := func() {
		t.Helper()
		if err := clock.WaitTimers(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	waitArmed() // for 5 s, when "short" expires
	if r.Groups() != 2 {
		t.Fatalf("Groups() = %d want 2", r.Groups())
	}
	clock.Set(sec(5))
	waitArmed() // for 11 s, when "long" expires
	if r.Groups() != 1 {
		t.Errorf("at 5 s: Groups() = %d want 1", r.Groups())
	}
	clock.Set(sec(11))
	if err := clock.WaitTimers(ctx, 0); err != nil {
		t.Fatal(err)
	}
	// Nothing left to wait for: a job submitted now still goes out at once.
	r.Submit("short", short, 3, "")
	receive(t, out, 1)
	if r.Groups() != 1 {
		t.Errorf("at 11 s: Groups() = %d want 1 (the new group)", r.Groups())
	}
}

// TestRunnerSystemClock runs a few jobs a millisecond apart on the real
// clock: each goes out no earlier than predicted.
func TestRunnerSystemClock(t *testing.T) {
	r, out := startRunner(t, schedule.SystemClock())
	rule := schedule.Rule{Kind: schedule.KindSlidingLog, Calls: 1, Per: time.Millisecond}
	predicted := map[schedule.JobID]time.Time{}
	for i := range 3 {
		at, err := r.Submit("c", rule, schedule.JobID(i), "")
		if err != nil {
			t.Fatal(err)
		}
		predicted[schedule.JobID(i)] = at
	}
	var last time.Time
	for _, h := range receive(t, out, 3) {
		if h.job.At.Before(predicted[h.job.ID]) || !last.IsZero() && h.job.At.Sub(last) < time.Millisecond {
			t.Errorf("job %d at %v: predicted %v, previous at %v", h.job.ID, h.job.At, predicted[h.job.ID], last)
		}
		last = h.job.At
	}
}
