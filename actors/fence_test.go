package actors

import (
	"context"
	"errors"
	"testing"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
	"github.com/rs/zerolog"
)

// TestEngineFenced: the engine writes under Config.Fence; once another
// owner has taken the store over (a newer token), the store refuses the
// engine's writes as fenced off and the engine grants nothing: Reserve
// fails with ErrUnavailable wrapping persistence.ErrFenced, the account's
// standing is what it was, Probe reports the refusal, and the next owner
// finds nothing of the refused grant stored.
func TestEngineFenced(t *testing.T) {
	ctx := context.Background()
	clock := NewManualClock(monday)
	store := persistencetest.NewFenceStore(persistencetest.NewMemStore(clock.Now))
	start := func(fence string) *Engine {
		t.Helper()
		cfg := testConfig(clock)
		cfg.Fence = []byte(fence)
		eng, err := New(cfg, store, zerolog.Nop())
		if err != nil {
			t.Fatalf("New under %q: %v", fence, err)
		}
		t.Cleanup(func() { _ = eng.Close(context.Background()) })
		return eng
	}

	eng := start("owner-1")
	if g, err := eng.Reserve(ctx, "a", 3); err != nil || g.Granted != 3 {
		t.Fatalf("Reserve under the current fence: %+v, %v; want 3 granted", g, err)
	}
	store.Fence([]byte("owner-2")) // another process owns the state now
	g, err := eng.Reserve(ctx, "a", 2)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, persistence.ErrFenced) || g.Granted != 0 {
		t.Fatalf("Reserve under a stale fence = %+v, %v; want ErrUnavailable wrapping ErrFenced, nothing granted", g, err)
	}
	if st, err := eng.Status(ctx, "a"); err != nil || st.Used != 3 || st.Pending != 3 {
		t.Fatalf("status after the refused grant: %+v, %v; want the 3 slots of the first grant", st, err)
	}
	if err := eng.Probe(ctx); !errors.Is(err, persistence.ErrFenced) {
		t.Fatalf("Probe under a stale fence = %v, want ErrFenced", err)
	}
	_ = eng.Close(ctx) // its last snapshots are refused too

	next := start("owner-2")
	if st, err := next.Status(ctx, "a"); err != nil || st.Used != 3 || st.Pending != 3 {
		t.Fatalf("the next owner's status: %+v, %v; want the 3 slots of the first grant alone", st, err)
	}
	if g, err := next.Reserve(ctx, "a", 2); err != nil || g.Granted != 2 {
		t.Fatalf("Reserve under the new owner's fence: %+v, %v; want 2 granted", g, err)
	}
}
