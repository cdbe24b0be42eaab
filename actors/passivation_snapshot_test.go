package actors

import (
	"context"
	"runtime"
	"strings"
	"testing"
)

// TestPassivationRollsBackAfterSnapshot: a snapshot appended after a grant
// whose write then fails (a checkpoint's, or the SnapshotEvery-th event's)
// lands holding the failed grant as a reservation, and nothing is left to
// snapshot at stop. Passivation must still apply the grant's rollback
// (queued behind the stop, never served): otherwise the next incarnation
// loads the failed grant from the snapshot and counts it as a pin for a
// whole window, although its caller was told nothing was granted.
func TestPassivationRollsBackAfterSnapshot(t *testing.T) {
	eng, gs, stopped := gatedEngine(t)
	ctx := context.Background()
	xDone := reserveFailing(eng, gs, 3) // X's grant is being written (and will fail)

	// A checkpoint snapshots the account meanwhile (queued behind X's
	// write, it will succeed), then the account passivates.
	if _, err := eng.call(ctx, "a", request{op: opCompact}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.call(ctx, "a", request{op: opStop}); err != nil {
		t.Fatal(err)
	}
	waitInStop(t) // the stop runs (waiting for the journal) before X fails
	// X's write fails now; the snapshot's succeeds.
	failAndReload(t, eng, gs, xDone, stopped, "a failed grant, a snapshot and a passivation", " (the failed grant counts as pins)")
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
