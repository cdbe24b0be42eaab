package actors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pinbot/pinbot/internal/logtest"
	"github.com/pinbot/pinbot/persistence/persistencetest"
	"github.com/rs/zerolog"
)

// newLoggedFixture is newFixture with the engine's log kept in logs.
func newLoggedFixture(t *testing.T, logs *logtest.Buffer, mutate ...func(*Config)) *engineFixture {
	t.Helper()
	f := &engineFixture{t: t, clock: NewManualClock(monday), ctx: context.Background(), logTo: logs}
	f.mem = persistencetest.NewMemStore(f.clock.Now)
	f.store = persistencetest.NewFaultStore(f.mem)
	f.start(mutate...)
	return f
}

// TestEngineCommitReleaseAsync: CommitAsync and ReleaseAsync change the
// account as Commit and Release do, for the requests that follow and
// after a restart; what Commit or Release would have returned as an
// error is logged.
func TestEngineCommitReleaseAsync(t *testing.T) {
	var logs logtest.Buffer
	f := newLoggedFixture(t, &logs)
	rs := f.reserve("acct", 3).Reservations()
	if err := f.eng.CommitAsync(f.ctx, rs[0], f.eng.Now()); err != nil {
		t.Fatalf("CommitAsync: %v", err)
	}
	if err := f.eng.ReleaseAsync(f.ctx, rs[1]); err != nil {
		t.Fatalf("ReleaseAsync: %v", err)
	}
	if st := f.status("acct"); st.Used != 2 || st.Pending != 1 {
		t.Fatalf("after CommitAsync and ReleaseAsync: %+v; want 2 used, 1 pending", st)
	}
	for i, send := range []func() error{
		func() error { return f.eng.ReleaseAsync(f.ctx, rs[1]) },
		func() error { return f.eng.CommitAsync(f.ctx, rs[0], f.eng.Now()) },
		func() error { return f.eng.CommitAsync(f.ctx, Reservation{Account: "acct", ID: 12345}, f.eng.Now()) },
	} {
		logs.Reset()
		if err := send(); err != nil {
			t.Fatalf("step %d: %v, want nil (the failure is the actor's to log)", i, err)
		}
		f.status("acct") // served after the request
		if got := logs.String(); !strings.Contains(got, ErrUnknownReservation.Error()) || !strings.Contains(got, `"level":"warn"`) {
			t.Errorf("step %d: log %q, want a warning naming %v", i, got, ErrUnknownReservation)
		}
	}
	if st := f.status("acct"); st.Used != 2 || st.Pending != 1 {
		t.Fatalf("after the refused ones: %+v; want 2 used, 1 pending", st)
	}
	f.restart()
	if st := f.status("acct"); st.Used != 2 || st.Pending != 1 {
		t.Fatalf("after a restart: %+v; want 2 used, 1 pending", st)
	}
}

// TestEngineCommitAsyncLate: a CommitAsync after the lease moves the pin
// forward, as Commit does, and survives a restart once stored; when the
// store fails, the failure is logged and nothing waits on it (the journal
// goes on).
func TestEngineCommitAsyncLate(t *testing.T) {
	var logs logtest.Buffer
	f := newLoggedFixture(t, &logs, func(c *Config) { c.Limit = 2 })
	rs := f.reserve("acct", 2).Reservations()
	f.clock.Advance(10 * time.Minute) // both lapsed at +5m: pins then
	if err := f.eng.CommitAsync(f.ctx, rs[0], f.eng.Now()); err != nil {
		t.Fatal(err)
	}
	f.restart()
	for _, c := range []struct {
		at   time.Duration
		used int
	}{
		{12*time.Hour + 5*time.Minute - time.Millisecond, 2},
		{12*time.Hour + 5*time.Minute, 1}, // rs[1], never resolved
		{12*time.Hour + 10*time.Minute - time.Millisecond, 1},
		{12*time.Hour + 10*time.Minute, 0}, // rs[0], committed at +10m
	} {
		f.clock.Set(monday.Add(c.at))
		if st := f.status("acct"); st.Used != c.used {
			t.Fatalf("at +%v: used %d want %d", c.at, st.Used, c.used)
		}
	}

	// A late commit whose write fails.
	rs = f.reserve("acct", 1).Reservations()
	f.clock.Advance(6 * time.Minute)
	f.store.FailWrites(persistencetest.ErrDiskFull)
	if err := f.eng.CommitAsync(f.ctx, rs[0], f.eng.Now()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "storing a late commit failed") {
		if time.Now().After(deadline) {
			t.Fatalf("no log of the failed late commit; log %q", logs.String())
		}
		time.Sleep(time.Millisecond) // waiting for the journal's goroutine to log
	}
	f.store.ClearFaults()
	// The journal still writes.
	if err := f.eng.Probe(f.ctx); err != nil {
		t.Fatalf("Probe after the failed late commit: %v", err)
	}
	if st := f.status("acct"); st.Used != 1 || st.Pending != 0 {
		t.Fatalf("after the failed late commit: %+v; want the pin counted", st)
	}
}

// TestEngineAsyncNotSent: CommitAsync and ReleaseAsync fail, without
// sending, for an invalid account, a closed engine, and a ctx that ends
// while the account's actor starts.
func TestEngineAsyncNotSent(t *testing.T) {
	clock := NewManualClock(monday)
	st := &slowLoadStore{Store: persistencetest.NewMemStore(clock.Now), account: "slow",
		entered: make(chan struct{}), release: make(chan struct{})}
	eng, err := New(testConfig(clock), st, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := eng.CommitAsync(ctx, Reservation{Account: "a\x00b", ID: 1}, eng.Now()); !errors.Is(err, ErrInvalidAccount) {
		t.Errorf("CommitAsync of an invalid account: %v, want ErrInvalidAccount", err)
	}
	if err := eng.ReleaseAsync(ctx, Reservation{Account: "", ID: 1}); !errors.Is(err, ErrInvalidAccount) {
		t.Errorf("ReleaseAsync of an invalid account: %v, want ErrInvalidAccount", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := eng.Status(ctx, "slow")
		done <- err
	}()
	<-st.entered
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := eng.CommitAsync(cctx, Reservation{Account: "slow", ID: 1}, eng.Now()); !errors.Is(err, context.Canceled) {
		t.Errorf("CommitAsync while the actor starts, ctx canceled: %v, want context.Canceled", err)
	}
	close(st.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := eng.CommitAsync(ctx, Reservation{Account: "slow", ID: 1}, eng.Now()); !errors.Is(err, ErrClosed) {
		t.Errorf("CommitAsync after Close: %v, want ErrClosed", err)
	}
	if err := eng.ReleaseAsync(ctx, Reservation{Account: "slow", ID: 1}); !errors.Is(err, ErrClosed) {
		t.Errorf("ReleaseAsync after Close: %v, want ErrClosed", err)
	}
}

// TestEngineAsyncConcurrent: callers reserve and resolve without waiting
// on a few accounts at once; every account ends with exactly its commits
// counted. Under -race it also checks that a posted request is not
// touched once the actor has given it back to the pool.
func TestEngineAsyncConcurrent(t *testing.T) {
	f := newFixture(t)
	const accounts, callers, each = 3, 8, 30
	var mu sync.Mutex
	commits := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				acc := fmt.Sprintf("acct-%d", (c+i)%accounts)
				g, err := f.eng.Reserve(f.ctx, acc, 1)
				if err != nil {
					errs <- err
					return
				}
				if g.Granted == 0 {
					continue
				}
				r := g.Reservations()[0]
				if i%3 == 0 {
					err = f.eng.ReleaseAsync(f.ctx, r)
				} else {
					err = f.eng.CommitAsync(f.ctx, r, f.eng.Now())
					mu.Lock()
					commits[acc]++
					mu.Unlock()
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for a := 0; a < accounts; a++ {
		acc := fmt.Sprintf("acct-%d", a)
		want := min(commits[acc], DefaultLimit)
		if st := f.status(acc); st.Used != want || st.Pending != 0 {
			t.Errorf("%s: %+v; want %d used, none pending", acc, st, want)
		}
	}
}
