package actors

import (
	"errors"
	"testing"
	"time"
)

// TestPeek: Peek reads a resident account through its actor and a stored
// one from the store, as Status reads them, without spawning an actor or
// counting as a use.
func TestPeek(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.IdleTimeout = time.Hour })
	f.fill("a", 3)
	f.fill("b", 100)
	f.reserve("a", 1) // pending
	wantB := f.status("b")
	f.passivate("b")
	if _, err := f.eng.Hold(f.ctx, "a", f.eng.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	wantA := f.status("a")

	for _, want := range []Status{wantA, wantB} {
		got, err := f.eng.Peek(f.ctx, want.Account)
		if err != nil || got != want {
			t.Errorf("Peek(%s) = %+v, %v; want %+v", want.Account, got, err, want)
		}
	}
	if n := f.eng.Resident(); n != 1 {
		t.Errorf("%d accounts resident after Peek, want 1 (a): b was spawned", n)
	}

	// a, used in this epoch, is asked to stop by the second sweep only if
	// Peek did not count as a use.
	f.clock.Advance(time.Hour)
	f.eng.reg.sweepIdle()
	if _, err := f.eng.Peek(f.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	f.eng.reg.sweepIdle()
	select {
	case got := <-f.stops:
		if got != "a" {
			t.Fatalf("stopped %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a stayed resident: Peek counted as a use")
	}

	if err := f.eng.Close(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.Peek(f.ctx, "a"); !errors.Is(err, ErrClosed) {
		t.Errorf("Peek on a closed engine: %v, want ErrClosed", err)
	}
}
