package actors

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// TestSleepUntil: SleepUntil returns once the engine clock reaches the
// instant, at once when it is past, and with ctx's error when ctx ends
// first.
func TestSleepUntil(t *testing.T) {
	clock := NewManualClock(time.UnixMilli(1_000_000))
	cfg := DefaultConfig()
	cfg.Clock, cfg.Recover = clock, false
	e, err := New(cfg, persistencetest.NewMemStore(clock.Now), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	ctx := context.Background()

	if err := e.SleepUntil(ctx, e.Now().Add(-time.Second)); err != nil {
		t.Fatalf("past instant: %v", err)
	}
	at := e.Now().Add(time.Minute)
	done := make(chan error, 1)
	go func() { done <- e.SleepUntil(ctx, at) }()
	if err := clock.WaitWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(59 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("woke at %v, before %v: %v", e.Now(), at, err)
	default:
	}
	clock.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatalf("at the instant: %v", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	go func() { done <- e.SleepUntil(cctx, e.Now().Add(time.Hour)) }()
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("canceled: %v", err)
	}
}
