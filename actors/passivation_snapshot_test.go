package actors

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/pinbot/pinbot/persistence"
	"github.com/rs/zerolog"
)

// TestPassivationRollsBackAfterSnapshot: a snapshot appended after a grant
// whose write then fails (a checkpoint's, or the SnapshotEvery-th event's)
// lands holding the failed grant as a reservation, and nothing is left to
// snapshot at stop. Passivation must still apply the grant's rollback
// (queued behind the stop, never served): otherwise the next incarnation
// loads the failed grant from the snapshot and counts it as a pin for a
// whole window, although its caller was told nothing was granted.
func TestPassivationRollsBackAfterSnapshot(t *testing.T) {
	clock := NewManualClock(monday)
	mem := persistence.NewMemStore(clock.Now)
	gs := &gateStore{Store: mem}
	eng, err := New(testConfig(clock), gs, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	ctx := context.Background()
	stopped := make(chan string, 4)
	eng.onStopped = func(a string) { stopped <- a }
	if _, err := eng.Status(ctx, "a"); err != nil {
		t.Fatal(err)
	}

	gs.arm(errors.New("write: input/output error"))
	xDone := make(chan error, 1)
	go func() {
		_, err := eng.Reserve(ctx, "a", 3)
		xDone <- err
	}()
	<-gs.entered // X's grant is being written (and will fail)

	// A checkpoint snapshots the account meanwhile (queued behind X's
	// write, it will succeed), then the account passivates.
	if _, err := eng.call(ctx, "a", request{op: opCompact}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.call(ctx, "a", request{op: opStop}); err != nil {
		t.Fatal(err)
	}
	waitInStop(t)     // the stop runs (waiting for the journal) before X fails
	close(gs.release) // X's write fails now; the snapshot's succeeds
	if err := <-xDone; !errors.Is(err, ErrUnavailable) {
		t.Fatalf("X: %v, want ErrUnavailable", err)
	}
	<-stopped
	st, err := eng.Status(ctx, "a") // a new incarnation, from the store
	if err != nil {
		t.Fatal(err)
	}
	if st.Used != 0 || st.Pending != 0 {
		t.Fatalf("after a failed grant, a snapshot and a passivation: used %d, pending %d; want 0 and 0 (the failed grant counts as pins)", st.Used, st.Pending)
	}
}

// waitInStop waits (yielding, no sleep) until some goroutine runs
// (*accountActor).stop.
func waitInStop(t *testing.T) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if strings.Contains(string(buf[:n]), "actors.(*accountActor).stop(") {
			return
		}
		runtime.Gosched()
	}
}
