package actors

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// survey runs a survey and fails the test on error.
func (f *engineFixture) survey(o SurveyOptions) Survey {
	f.t.Helper()
	s, err := f.eng.Survey(f.ctx, o)
	if err != nil {
		f.t.Fatalf("Survey: %v", err)
	}
	return s
}

// passivate stops account's actor and waits until it is gone.
func (f *engineFixture) passivate(account string) {
	f.t.Helper()
	if _, err := f.eng.call(f.ctx, account, request{op: opStop}); err != nil {
		f.t.Fatal(err)
	}
	if got := <-f.stops; got != account {
		f.t.Fatalf("stopped %q, want %q", got, account)
	}
}

func accountsOf(sts []Status) []string {
	out := make([]string, len(sts))
	for i, st := range sts {
		out[i] = st.Account
	}
	return out
}

// TestSurveyBusiest: the busiest accounts come first, whether resident or
// only stored, and the timeline counts each pin in the bucket of its
// instant.
func TestSurveyBusiest(t *testing.T) {
	f := newFixture(t)
	start := f.clock.Now() // monday 12:00, a multiple of 15 minutes
	f.fill("a", 40)
	f.clock.Advance(20 * time.Minute)
	f.fill("a", 58)
	f.fill("b", 50)
	f.fill("c", 3)
	f.status("idle") // nothing stored
	f.passivate("b") // read from the store
	f.clock.Advance(10*time.Hour + 39*time.Minute)
	f.reserve("c", 1) // pending: in Used, not in the timeline

	s := f.survey(SurveyOptions{Top: 2})
	if got, want := accountsOf(s.Busiest), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("Busiest = %v, want %v", got, want)
	}
	if a := s.Busiest[0]; a.Used != 98 || a.Limit != 100 || a.Free() != 2 {
		t.Fatalf("a: %+v, want 98/100 used", a)
	}
	if b := s.Busiest[1]; b.Used != 50 {
		t.Fatalf("b: %+v, want 50 used", b)
	}
	if s.Limit != 100 || s.Window != 12*time.Hour || s.Bucket != 15*time.Minute {
		t.Fatalf("rule %d/%v, bucket %v", s.Limit, s.Window, s.Bucket)
	}
	// a, c and idle are resident; idle holds nothing and is left out.
	if s.Examined != 4 || s.Resident != 3 || !s.Complete || s.Failed != 0 {
		t.Fatalf("examined %d, resident %d, complete %v, failed %d", s.Examined, s.Resident, s.Complete, s.Failed)
	}
	// Now is 22:59: the window starts at 10:59:00.001, in the bucket
	// from 10:45, and 49 buckets reach the one holding now.
	if len(s.Timeline) != 49 || !s.Start.Equal(time.UnixMilli(start).Add(-75*time.Minute)) {
		t.Fatalf("timeline of %d buckets from %v", len(s.Timeline), s.Start)
	}
	if s.Timeline[5] != 40 || s.Timeline[6] != 58+50+3 {
		t.Fatalf("timeline %v, want 40 then 111 pins in the buckets from 12:00 and 12:15", s.Timeline)
	}
	if sum := sumInts(s.Timeline); sum != 40+58+50+3 {
		t.Fatalf("timeline holds %d pins", sum)
	}
	if f.eng.Resident() != 3 {
		t.Fatalf("resident after the survey = %d, want 3: a survey spawns no actor", f.eng.Resident())
	}

	// At midnight a's first 40 pins no longer count.
	f.clock.Advance(time.Hour + time.Minute)
	s = f.survey(SurveyOptions{})
	if got, want := accountsOf(s.Busiest), []string{"a", "b", "c"}; !slices.Equal(got, want) || s.Busiest[0].Used != 58 {
		t.Fatalf("at midnight: %v, a %+v", got, s.Busiest[0])
	}
	// c's reservation lapsed at 23:04, the end of its lease, and counts
	// as a pin made then.
	if c := s.Busiest[2]; c.Used != 4 || c.Pending != 0 || s.Timeline[len(s.Timeline)-5] != 1 {
		t.Fatalf("c: %+v; timeline %v", c, s.Timeline)
	}
	if sum := sumInts(s.Timeline); sum != 58+50+3+1 {
		t.Fatalf("at midnight the timeline holds %d pins", sum)
	}
}

func sumInts(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// TestSurveyQueue: accounts with waiting jobs are listed with their
// counts, and examined first.
func TestSurveyQueue(t *testing.T) {
	jf := newJobFixture(t)
	jf.fill("full", 100)
	jf.enqueue("full", 2)
	jf.fill("fuller", 100)
	jf.enqueue("fuller", 3)
	jf.fill("other", 5)

	s := jf.survey(SurveyOptions{Max: 2})
	if got, want := accountsOf(s.Queue), []string{"fuller", "full"}; !slices.Equal(got, want) {
		t.Fatalf("Queue = %v, want %v", got, want)
	}
	if s.Waiting != 5 || s.QueuedAccounts != 2 || s.Queue[0].Queued != 3 {
		t.Fatalf("waiting %d on %d accounts, first %+v", s.Waiting, s.QueuedAccounts, s.Queue[0])
	}
	if s.Examined != 2 || s.Complete {
		t.Fatalf("examined %d (complete %v), want the 2 queued accounts of 3", s.Examined, s.Complete)
	}
	// At the same count, more jobs waiting goes first.
	if got, want := accountsOf(s.Busiest), []string{"fuller", "full"}; !slices.Equal(got, want) {
		t.Fatalf("Busiest = %v, want %v", got, want)
	}

	// Passivated, the queued accounts are read from the store.
	jf.passivate("full")
	jf.passivate("fuller")
	s = jf.survey(SurveyOptions{})
	if s.Waiting != 5 || len(s.Queue) != 2 || s.Examined != 3 || !s.Complete {
		t.Fatalf("from the store: waiting %d, queue %v, examined %d, complete %v",
			s.Waiting, accountsOf(s.Queue), s.Examined, s.Complete)
	}
}

// TestSurveyIsNotAUse: an account used only by surveys passivates after
// its idle timeout, as if nobody had looked.
func TestSurveyIsNotAUse(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.IdleTimeout = time.Hour })
	f.fill("a", 3)
	f.clock.Advance(time.Hour)
	f.eng.reg.sweepIdle() // a was used in this epoch: not asked
	f.survey(SurveyOptions{})
	f.eng.reg.sweepIdle()
	select {
	case got := <-f.stops:
		if got != "a" {
			t.Fatalf("stopped %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a stayed resident: the survey counted as a use")
	}
	if s := f.survey(SurveyOptions{}); len(s.Busiest) != 1 || s.Busiest[0].Used != 3 || f.eng.Resident() != 0 {
		t.Fatalf("after passivation: %+v, resident %d", s.Busiest, f.eng.Resident())
	}
}

// TestSurveyMax: the bound holds across resident and stored accounts.
func TestSurveyMax(t *testing.T) {
	f := newFixture(t)
	for _, a := range []string{"a", "b", "c", "d"} {
		f.fill(a, 1)
	}
	f.passivate("c")
	f.passivate("d")
	for max, complete := range map[int]bool{1: false, 2: false, 3: false, 4: true, 5: true} {
		s := f.survey(SurveyOptions{Max: max})
		if want := min(max, 4); s.Examined != want || s.Complete != complete || len(s.Busiest) != want {
			t.Errorf("Max %d: examined %d, complete %v, busiest %d", max, s.Examined, s.Complete, len(s.Busiest))
		}
	}
}

// TestSurveyEnds: a survey ends with its context, and fails on a closed
// engine.
func TestSurveyEnds(t *testing.T) {
	f := newFixture(t)
	f.fill("a", 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.eng.Survey(ctx, SurveyOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
	if err := f.eng.Close(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.Survey(f.ctx, SurveyOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
}
