package actors

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
	"github.com/rs/zerolog"
)

// TestCloseHonoursCtxWhileRecovering: the background Recover is inside a
// spawn whose Load is stuck (a stuck disk); Close with an ended ctx must
// return ctx's error, not wait for the Load. A later Close waits for the
// first one's work.
func TestCloseHonoursCtxWhileRecovering(t *testing.T) {
	clock := NewManualClock(monday)
	mem := persistencetest.NewMemStore(clock.Now)
	// Leave "slow" with journal events and no snapshot, as a crash does.
	if err := mem.Write(t.Context(), &persistence.Batch{Accounts: []persistence.AccountWrite{{
		Account:   "slow",
		Events:    []persistence.Event{{Seq: 1, Kind: persistence.EventReserve, ID: 1, Count: 1, At: clock.Now(), Deadline: clock.Now() + 60000}},
		ExpiresAt: clock.Now() + int64(48*time.Hour/time.Millisecond),
	}}}); err != nil {
		t.Fatal(err)
	}
	st := &slowLoadStore{Store: mem, account: "slow", entered: make(chan struct{}), release: make(chan struct{})}
	cfg := testConfig(clock)
	cfg.Recover = true
	eng, err := New(cfg, st, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	<-st.entered // the background recovery is loading "slow"

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := eng.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close(ended ctx) during a stuck load: %v, want context.Canceled", err)
	}
	close(st.release)
	if err := eng.Close(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("second Close: %v", err)
	}
}

// TestCloseHonoursCtxOnStuckJournal: a journal write that does not return
// (a stuck disk). Close with an ended ctx must return ctx's error, not
// wait for the journal's writer.
func TestCloseHonoursCtxOnStuckJournal(t *testing.T) {
	clock := NewManualClock(monday)
	mem := persistencetest.NewMemStore(clock.Now)
	gs := &gateStore{Store: mem}
	eng, err := New(testConfig(clock), gs, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	if _, err := eng.Status(bg, "a"); err != nil {
		t.Fatal(err)
	}
	gs.arm(errors.New("write: input/output error"))
	xDone := make(chan error, 1)
	go func() {
		_, err := eng.Reserve(bg, "a", 1)
		xDone <- err
	}()
	<-gs.entered // the grant's write is stuck

	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := eng.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close(ended ctx) behind a stuck write: %v, want context.Canceled", err)
	}
	close(gs.release)
	<-xDone
}

// TestHoldRetryIsDurable: Hold documents that the hold is durable unless
// Hold returns ErrUnavailable. After a Hold whose journal write failed,
// the retry of the same Hold must write it, not answer from memory: a
// crash would otherwise lose the hold the caller was told is durable.
func TestHoldRetryIsDurable(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.SnapshotEvery = 1000 })
	until := f.eng.Now().Add(30 * time.Minute)
	f.store.FailWrites(fmt.Errorf("disk: %w", syscall.ENOSPC))
	if _, err := f.eng.Hold(f.ctx, "a", until); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Hold with a failing store: %v, want ErrUnavailable", err)
	}
	f.store.FailWrites(nil)
	if _, err := f.eng.Hold(f.ctx, "a", until); err != nil {
		t.Fatalf("retried Hold: %v", err)
	}
	// The retry returned no error: the hold must now be durable.
	if err := f.eng.journal.Flush(f.ctx); err != nil {
		t.Fatal(err)
	}
	eng2, err := New(testConfig(f.clock), f.mem, zerolog.Nop()) // as after a crash
	if err != nil {
		t.Fatal(err)
	}
	defer eng2.Close(f.ctx)
	g, err := eng2.Reserve(f.ctx, "a", 1)
	if err != nil {
		t.Fatal(err)
	}
	if g.Granted != 0 {
		t.Errorf("after a crash, %d granted during a hold whose retried Hold returned success (not durable)", g.Granted)
	}
}
