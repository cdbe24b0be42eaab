//go:build !race

// The test in this file opens a real disgo gateway connection, which
// races with its own heartbeat under -race (see bot/discordtest): it
// runs in `make gateway`, without -race.

package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/actors"
)

// TestDisgoGatewaySandboxOverdueAfterRestart queues pins, stops the
// sandbox and starts it again past their due times, on an engine clock
// the test moves: the sandbox links the demo accounts again with the
// fresh Pinterest stand-in before the queue runs, so every overdue pin
// is pinned, and none fails asking for /link.
func TestDisgoGatewaySandboxOverdueAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	t0 := time.Now()
	ecfg := actors.DefaultConfig()
	ecfg.Limit, ecfg.Window = 2, time.Hour
	ecfg.Clock = actors.NewManualClock(t0)
	s := startSessionWith(t, dir, ecfg)
	s.run([]step{{line: "/pin 1005 when_full:queue", want: []string{"2 pinned, 2 queued."}}})
	s.close()

	// Two windows later: both queued pins are overdue at the start.
	ecfg.Clock = actors.NewManualClock(t0.Add(2 * ecfg.Window))
	s2 := startSessionWith(t, dir, ecfg)
	// On failure the pins never come: the bound keeps the test short.
	ctx, cancel := context.WithTimeout(s2.ctx, 30*time.Second)
	defer cancel()
	if _, err := s2.sb.pinterest.WaitPins(ctx, "7001", 2); err != nil {
		t.Fatalf("the overdue pins were not pinned: %v\nlogs:\n%s", err, s2.logs)
	}
	// Closing waits for the jobs to finish and record their results.
	s2.close()

	s3 := startSessionWith(t, dir, ecfg)
	got := s3.exec("/queue")
	if n := strings.Count(got, "✅ pinned"); n != 2 || strings.Contains(got, "/link") || strings.Contains(got, "⏳") {
		t.Fatalf("/queue after the restart shows %d pinned, want the 2 overdue pins pinned and nothing else:\n%s\nlogs:\n%s", n, got, s2.logs)
	}
}
