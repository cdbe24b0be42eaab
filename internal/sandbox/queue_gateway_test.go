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
			"Pin limit reached (2/20s). Queued the remaining pin: it starts at ",
		}, notWant: []string{"Skipped"}},
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

// TestDisgoGatewaySandboxQueueControls drives from the console what the
// user presses in Discord: the /settings menu that makes /pin queue at
// the limit, and /queue's controls that cancel queued pins, one
// message's through its menu and an account's through its "Cancel all"
// button, on an engine clock that never frees a slot meanwhile.
func TestDisgoGatewaySandboxQueueControls(t *testing.T) {
	t.Parallel()
	ecfg := actors.DefaultConfig()
	ecfg.Limit, ecfg.Window = 2, time.Hour
	ecfg.Clock = actors.NewManualClock(time.Now())
	s := startSessionWith(t, t.TempDir(), ecfg)
	s.run([]step{
		{line: "/whenfull sometimes", want: []string{"error: usage: /whenfull queue or /whenfull skip"}},
		{line: "/settings", want: []string{
			"] — pick with /whenfull queue or /whenfull skip",
			"  * At the limit: skip the rest",
		}},
		{line: "/whenfull queue", want: []string{"now queue the rest"}},
		{line: "/settings", want: []string{"  * At the limit: queue the rest"}},
		// /pin queues what does not fit without saying so: the default.
		{line: "/pin 1005", want: []string{"2 pinned, 2 queued."}},
		{line: "/pin 1006", want: []string{"0 pinned, 3 queued."}},
		{line: "/queue", want: []string{
			"⏳ 1 https://discord.com/channels/900/100/1005 (image 3 of 4)",
			"⏳ 2 https://discord.com/channels/900/100/1006 (image 1 of 3)",
			"— pick with /cancel N (N the message's number)",
			"Message 2: cancel its 3 waiting pins",
			`[button "Cancel all waiting pins"] — press with /cancel all`,
		}},
		{line: "/cancel", want: []string{"error: usage: /cancel N"}},
		{line: "/cancel 7", want: []string{`error: the menu has no message "7"; it offers "Message 1: cancel its 2 waiting pins", "Message 2: cancel its 3 waiting pins"`}},
		{line: "/cancel 2", want: []string{"Canceled 3 queued pins.", "(image 3 of 4)"}, notWant: []string{"(image 1 of 3)"}},
		// The other account: two accounts have waiting pins now.
		{line: "/switch alice_art", want: []string{"Active account is now @alice_art."}},
		{line: "/pin 1002 1003", want: []string{"2 pinned, 1 queued."}},
		{line: "/queue", want: []string{
			`[button "Cancel all on @alice_pins"] — press with /cancel all alice_pins`,
			`[button "Cancel all on @alice_art"] — press with /cancel all alice_art`,
		}},
		{line: "/cancel all", want: []string{"error: several accounts have waiting pins: name one, /cancel all ACCOUNT"}},
		{line: "/cancel all studio_shared", want: []string{`error: no account "studio_shared" has waiting pins`}},
		{line: "/cancel all @alice_pins", want: []string{"Canceled 2 queued pins.", "@alice_art", "⏳"}},
		{line: "/cancel 1003", want: []string{"Canceled 1 queued pin."}, notWant: []string{"⏳"}},
		{line: "/cancel all", want: []string{`(No pin is waiting: /queue shows no "Cancel all" button.)`}},
		{line: "/cancel 1", want: []string{"(No pin is waiting: /queue shows no menu to cancel with.)"}},
		{line: "/whenfull skip", want: []string{"now skip the rest"}},
		{line: "/pin 1001", want: []string{"Pin limit reached"}, notWant: []string{"queued"}},
	})
	for _, acct := range []string{"7001", "7002"} {
		js, _, err := s.sb.engine.Jobs(s.ctx, acct)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range js {
			if j.State != actors.JobDone {
				t.Errorf("account %s: job %d is %v, want every queued pin canceled", acct, j.ID, j.State)
			}
		}
	}
}

// TestDisgoGatewaySandboxCancelPicksWhatWasShown: "/cancel N" picks
// message N in the /queue menu last shown, as a click in Discord would:
// when that message's pins ran since, it cancels nothing, never the
// message a newer /queue would number N.
func TestDisgoGatewaySandboxCancelPicksWhatWasShown(t *testing.T) {
	t.Parallel()
	ecfg := actors.DefaultConfig()
	ecfg.Limit, ecfg.Window = 2, time.Hour
	clock := actors.NewManualClock(time.Now())
	ecfg.Clock = clock
	s := startSessionWith(t, t.TempDir(), ecfg)
	s.run([]step{
		{line: "/pin 1005 when_full:queue", want: []string{"2 pinned, 2 queued."}},
		{line: "/pin 1006 when_full:queue", want: []string{"0 pinned, 3 queued."}},
		{line: "/queue", want: []string{"Message 1: cancel its 2 waiting pins", "Message 2: cancel its 3 waiting pins"}},
	})
	// Message 1's pins run after /queue showed them.
	clock.Advance(time.Hour)
	s.waitJobsDone(t, "7001", 2)
	s.run([]step{
		{line: "/cancel 1", notWant: []string{"Canceled 3 queued pins."}},
		{line: "/queue", want: []string{"Message 1: cancel its 3 waiting pins"}},
		{line: "/cancel 1", want: []string{"Canceled 3 queued pins."}},
	})
}

// waitJobsDone waits until account has at least n done jobs.
func (s *session) waitJobsDone(t *testing.T, account string, n int) {
	t.Helper()
	for {
		js, _, err := s.sb.engine.Jobs(s.ctx, account)
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, j := range js {
			if j.State == actors.JobDone {
				done++
			}
		}
		if done >= n {
			return
		}
		select {
		case <-s.ctx.Done():
			t.Fatalf("account %s: %d jobs done, want %d", account, done, n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
