//go:build !race

// The test in this file opens a real disgo gateway connection, which
// races with its own heartbeat under -race (see bot/discordtest): it
// runs in `make gateway`, without -race.

package sandbox

import (
	"testing"
	"time"

	"github.com/pinbot/pinbot/actors"
)

// TestDisgoGatewaySandboxQueue runs a queued pin on the sandbox's real
// clocks under a rule of 2 pins per 20 seconds: /pin of 3 images pins 2
// and queues 1, which Pinterest's stand-in receives within a second of
// the instant its slot frees.
func TestDisgoGatewaySandboxQueue(t *testing.T) {
	t.Parallel()
	ecfg := actors.DefaultConfig()
	ecfg.Limit, ecfg.Window = 2, 20*time.Second
	s := startSessionWith(t, t.TempDir(), ecfg)
	s.run([]step{
		{line: "/pin 1001 1002 when_full:queue", want: []string{
			"2 pinned, 1 queued.",
			"Pin limit reached (2/20s). Skipped remaining pins.",
			"Queued 1 instead: it runs",
		}},
		{line: "/queue", want: []string{"@alice_pins", "(image 2 of 2)", "starts"}},
	})
	js, _, err := s.sb.engine.Jobs(s.ctx, "7001")
	if err != nil || len(js) != 1 || js[0].State != actors.JobWaiting {
		t.Fatalf("jobs %+v, %v; want one waiting", js, err)
	}
	due := js[0].Due
	pins, err := s.sb.pinterest.WaitPins(s.ctx, "7001", 3)
	if err != nil {
		t.Fatal(err)
	}
	late := pins[2].CreatedAt.Sub(due)
	t.Logf("queued pin due %v, made %v after", due.Format(time.RFC3339Nano), late)
	if late < 0 || late > time.Second {
		t.Errorf("queued pin made %v after its slot freed, want within 1s", late)
	}
	if first := pins[0].CreatedAt; pins[2].CreatedAt.Sub(first) < ecfg.Window {
		t.Errorf("queued pin made %v after the first, inside its %v window", pins[2].CreatedAt.Sub(first), ecfg.Window)
	}
	s.run([]step{{line: "/pinterest", want: []string{"@alice_pins (7001): 3 pins, at most 2 in any"}}})
}
