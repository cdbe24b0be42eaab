package schedule

import (
	"errors"
	"testing"
	"time"
)

func mustSubmit[T any](t *testing.T, s *Scheduler[T], now time.Time, group string, r Rule, id JobID, v T) time.Time {
	t.Helper()
	at, err := s.Submit(now, group, r, id, v)
	if err != nil {
		t.Fatalf("Submit(%v, %q, %d): %v", now.Format(time.TimeOnly), group, id, err)
	}
	return at
}

// dueStep is one line of a step table: Due(now) must hand out ids, and
// Next must then report next (the zero Time: nothing waiting).
type dueStep struct {
	now  time.Time
	ids  []JobID
	next time.Time
}

func runDue(t *testing.T, s *Scheduler[string], steps []dueStep) {
	t.Helper()
	for i, st := range steps {
		jobs := s.Due(st.now, nil)
		var got []JobID
		for _, j := range jobs {
			got = append(got, j.ID)
			if !j.At.Equal(st.now) {
				t.Errorf("step %d: job %d At = %v want %v", i, j.ID, j.At, st.now)
			}
		}
		if !equalIDs(got, st.ids) {
			t.Errorf("step %d: Due(%v) = %v want %v", i, st.now.Format(time.TimeOnly), got, st.ids)
		}
		next, ok := s.Next()
		if ok != !st.next.IsZero() || ok && !next.Equal(st.next) {
			t.Errorf("step %d: Next() = %v, %v want %v", i, next.Format(time.TimeOnly), ok, st.next.Format(time.TimeOnly))
		}
	}
}

func equalIDs(a, b []JobID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSchedulerFixedWindow(t *testing.T) {
	s := New[string]()
	r := Rule{KindFixedWindow, 2, 5 * time.Second}
	want := []time.Time{sec(1), sec(1), sec(5), sec(5), sec(10)}
	for i, w := range want {
		if got := mustSubmit(t, s, sec(1), "c", r, JobID(i), "m"); !got.Equal(w) {
			t.Errorf("Submit %d: ready %v want %v", i, got.Format(time.TimeOnly), w.Format(time.TimeOnly))
		}
	}
	runDue(t, s, []dueStep{
		{now: sec(1), ids: []JobID{0, 1}, next: sec(5)},
		{now: sec(5).Add(-time.Nanosecond), next: sec(5)},
		{now: sec(5), ids: []JobID{2, 3}, next: sec(10)},
		{now: sec(10), ids: []JobID{4}},
	})
	if s.Len() != 0 || s.Groups() != 1 {
		t.Errorf("after the last job: Len %d Groups %d want 0 and 1 (its window runs to 15 s)", s.Len(), s.Groups())
	}
	if exp, ok := s.NextExpiry(); !ok || !exp.Equal(sec(15)) {
		t.Errorf("NextExpiry() = %v, %v want 15 s", exp.Format(time.TimeOnly), ok)
	}
	s.Due(sec(15).Add(-time.Nanosecond), nil)
	if s.Groups() != 1 {
		t.Errorf("just before 15 s: Groups %d want 1", s.Groups())
	}
	s.Due(sec(15), nil)
	if _, ok := s.NextExpiry(); s.Groups() != 0 || ok {
		t.Errorf("at 15 s: Groups %d, NextExpiry %v want 0, false", s.Groups(), ok)
	}
}

func TestSchedulerSlidingLogGroups(t *testing.T) {
	s := New[string]()
	r := Rule{KindSlidingLog, 2, 10 * time.Second}
	for i, c := range []struct {
		at    time.Time
		group string
		ready time.Time
	}{
		{sec(0), "a", sec(0)},
		{sec(0), "a", sec(0)},
		{sec(0), "b", sec(0)},
		{sec(3), "a", sec(10)},
		{sec(3), "a", sec(10)},
		{sec(3), "a", sec(20)},
		{sec(4), "b", sec(4)},
		{sec(4), "b", sec(10)},
	} {
		if got := mustSubmit(t, s, c.at, c.group, r, JobID(i), c.group); !got.Equal(c.ready) {
			t.Errorf("Submit %d: ready %v want %v", i, got.Format(time.TimeOnly), c.ready.Format(time.TimeOnly))
		}
		if i == 2 {
			runDue(t, s, []dueStep{{now: sec(0), ids: []JobID{0, 1, 2}}})
		}
		if i == 6 {
			runDue(t, s, []dueStep{{now: sec(4), ids: []JobID{6}, next: sec(10)}})
		}
	}
	// Groups share the instant 10 s; within each, submission order.
	jobs := s.Due(sec(10), nil)
	var a, b []JobID
	for _, j := range jobs {
		if j.Group == "a" {
			a = append(a, j.ID)
		} else {
			b = append(b, j.ID)
		}
	}
	if !equalIDs(a, []JobID{3, 4}) || !equalIDs(b, []JobID{7}) {
		t.Errorf("Due(10 s): a %v b %v want [3 4] and [7]", a, b)
	}
	runDue(t, s, []dueStep{{now: sec(20), ids: []JobID{5}}})
}

func TestSchedulerCancel(t *testing.T) {
	s := New[string]()
	r := Rule{KindFixedWindow, 1, 5 * time.Second}
	for i := range 4 {
		mustSubmit(t, s, sec(1), "c", r, JobID(i), "m") // ready 1, 5, 10, 15 s
	}
	if !s.Cancel(1) || s.Cancel(1) || s.Cancel(99) {
		t.Fatal("Cancel: want true once for a waiting job, false after and for an unknown one")
	}
	runDue(t, s, []dueStep{
		{now: sec(1), ids: []JobID{0}, next: sec(5)},
		{now: sec(5), ids: []JobID{2}, next: sec(10)}, // moved up from 10 s
	})
	// Canceling the first job: the group stays due at its instant, where
	// the next one starts.
	if !s.Cancel(3) {
		t.Fatal("Cancel(3) = false")
	}
	if _, ok := s.Next(); ok {
		t.Error("Next() reports a job after the last was canceled")
	}
	if s.Groups() != 1 {
		t.Errorf("Groups() = %d want 1: its window runs to 10 s", s.Groups())
	}
	mustSubmit(t, s, sec(6), "c", r, 10, "m")
	mustSubmit(t, s, sec(6), "c", r, 11, "m")
	s.Cancel(10)
	runDue(t, s, []dueStep{{now: sec(10), ids: []JobID{11}}})
	// A canceled ID may be used again.
	if got := mustSubmit(t, s, sec(10), "c", r, 1, "again"); !got.Equal(sec(15)) {
		t.Errorf("resubmitted job 1: ready %v want 15 s", got.Format(time.TimeOnly))
	}
	// A group whose only jobs were canceled before any call is dropped.
	mustSubmit(t, s, sec(10), "d", r, 20, "m")
	s.Cancel(20)
	if s.Groups() != 1 {
		t.Errorf("Groups() = %d want 1", s.Groups())
	}
}

func TestSchedulerErrors(t *testing.T) {
	s := New[int]()
	r := Rule{Kind: KindFixedWindow, Calls: DiscordChannelMessages, Per: DiscordChannelWindow}
	mustSubmit(t, s, sec(0), "c", r, 1, 0)
	if _, err := s.Submit(sec(0), "c", r, 1, 0); !errors.Is(err, ErrDuplicateID) {
		t.Errorf("duplicate ID: %v want ErrDuplicateID", err)
	}
	if _, err := s.Submit(sec(0), "c", Rule{KindSlidingLog, 5, 5 * time.Second}, 2, 0); !errors.Is(err, ErrRuleChanged) {
		t.Errorf("other rule: %v want ErrRuleChanged", err)
	}
	if _, err := s.Submit(sec(0), "d", Rule{KindFixedWindow, 0, time.Second}, 3, 0); err == nil {
		t.Error("invalid rule: no error")
	}
	if s.Groups() != 1 || s.Len() != 1 {
		t.Errorf("after failed submissions: Groups %d Len %d want 1 and 1", s.Groups(), s.Len())
	}
	slow := Rule{KindFixedWindow, 1, 100 * 365 * 24 * time.Hour}
	mustSubmit(t, s, sec(0), "slow", slow, 4, 0)
	mustSubmit(t, s, sec(0), "slow", slow, 5, 0)
	mustSubmit(t, s, sec(0), "slow", slow, 6, 0)
	if _, err := s.Submit(sec(0), "slow", slow, 7, 0); !errors.Is(err, ErrTooFar) {
		t.Errorf("ready after 2262: %v want ErrTooFar", err)
	}
}

func TestSchedulerTimeNeverRunsBack(t *testing.T) {
	s := New[int]()
	r := Rule{KindFixedWindow, 1, 5 * time.Second}
	s.Due(sec(7), nil)
	// Submitted "at 1 s" after Due(7 s): counts as 7 s.
	if got := mustSubmit(t, s, sec(1), "c", r, 1, 0); !got.Equal(sec(7)) {
		t.Errorf("ready %v want 7 s", got.Format(time.TimeOnly))
	}
	if jobs := s.Due(sec(2), nil); len(jobs) != 1 || !jobs[0].At.Equal(sec(7)) {
		t.Errorf("Due(2 s) after 7 s = %v want job 1 at 7 s", jobs)
	}
}
