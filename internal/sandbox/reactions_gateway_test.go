//go:build !race

// The test in this file opens a real disgo gateway connection, which
// races with its own heartbeat under -race (see bot/discordtest): it
// runs in `make gateway`, without -race.

package sandbox

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/discordtest"
)

// TestDisgoGatewaySandboxReactions plays pin reactions as a person does
// at the console, on an engine clock that frees no slot meanwhile, under
// a rule of 2 pins per hour: alice posts a message of 3 images and reacts
// with 📌; the DM /dms shows says 2 were pinned and 1 queued, /queue shows
// the queued one, and /unreact cancels it, which a second DM says. carol,
// who linked nothing, is told about /link; the metrics count each
// outcome.
func TestDisgoGatewaySandboxReactions(t *testing.T) {
	t.Parallel()
	ecfg := actors.DefaultConfig()
	ecfg.Limit, ecfg.Window = 2, time.Hour
	ecfg.Clock = actors.NewManualClock(time.Now())
	s := startSessionWith(t, t.TempDir(), ecfg)
	alice, carol := users[0].ID, users[2].ID

	out := s.exec("/post 3 Color study")
	sub := postedID.FindStringSubmatch(out)
	if sub == nil {
		t.Fatalf("/post printed no message ID:\n%s", out)
	}
	id, link := sub[1], "https://discord.com/channels/900/100/"+sub[1]
	s.run([]step{
		{line: "/whenfull queue", want: []string{"now queue the rest"}},
		{line: "/react " + id, want: []string{
			"alice reacted with 📌 to message " + id + " in #general.",
			"answers by direct message: /dms shows it",
		}},
	})
	s.waitDMs(t, alice, 1)
	s.run([]step{
		{line: "/dms", want: []string{
			"── DM from Pinbot, ",
			"Your 📌 on " + link + ":",
			"Pinterest account @alice_pins, board Cats: 2 pinned, 1 queued.",
		}},
		{line: "/queue", want: []string{"⏳ 1 " + link + " (image 3 of 3)", "Message 1: cancel its waiting pin"}},
		{line: "/messages", want: []string{"3 images, posted by alice", "📌 alice"}},
	})
	if n := s.waitingJobs(t, "7001"); n != 1 {
		t.Fatalf("%d pins of 7001 wait after /react, want 1", n)
	}
	s.run([]step{
		{line: "/unreact " + id, want: []string{"alice took the 📌 off message " + id + " in #general."}},
	})
	dms := s.waitDMs(t, alice, 2)
	if want := "You took your 📌 off <" + link + ">, so Pinbot canceled 1 queued pin of it. Pins already made stay."; dms[1].Content != want {
		t.Errorf("second DM %q, want %q", dms[1].Content, want)
	}
	s.run([]step{
		{line: "/dms", want: []string{"You took your 📌 off " + link + ", so Pinbot canceled 1 queued pin of it."}},
		{line: "/queue", notWant: []string{"⏳"}},
		{line: "/pinterest", want: []string{"@alice_pins (7001): 2 pins,"}},
	})
	if n := s.waitingJobs(t, "7001"); n != 0 {
		t.Errorf("%d pins of 7001 wait after /unreact, want none", n)
	}

	s.run([]step{
		{line: "/as carol", want: []string{"You are carol in #general."}},
		{line: "/react 1001", want: []string{"carol reacted with 📌 to message 1001 in #general."}},
	})
	s.waitDMs(t, carol, 1)
	s.run([]step{{line: "/dms", want: []string{"You reacted with 📌", "but you have not linked one yet. Run /link in the server"}}})

	// The bot counts a reaction once its answer is sent.
	s.waitMetrics(t,
		`pinbot_reactions_total{result="ran"} 1`,
		`pinbot_reactions_total{result="canceled"} 1`,
		`pinbot_reactions_total{result="not_linked"} 1`,
	)
}

// waitMetrics waits until /metrics holds every line of want.
func (s *session) waitMetrics(t *testing.T, want ...string) {
	t.Helper()
	for {
		metrics, missing := s.get(t, "/metrics"), ""
		for _, w := range want {
			if !strings.Contains(metrics, w) {
				missing = w
			}
		}
		if missing == "" {
			return
		}
		select {
		case <-s.ctx.Done():
			t.Fatalf("/metrics lacks %s:\n%s", missing, grepLines(metrics, "pinbot_reactions_total"))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitDMs waits until the bot has sent user n direct messages and returns
// them, oldest first.
func (s *session) waitDMs(t *testing.T, user snowflake.ID, n int) []discordtest.Message {
	t.Helper()
	dms, err := s.sb.discord.WaitDMs(s.ctx, user, n)
	if err != nil {
		t.Fatalf("waiting for %d DMs to user %d: %v (got %d)\nlogs:\n%s", n, user, err, len(dms), s.logs)
	}
	return dms
}

// waitingJobs counts the account's waiting pins.
func (s *session) waitingJobs(t *testing.T, account string) int {
	t.Helper()
	js, _, err := s.sb.engine.Jobs(s.ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, j := range js {
		if j.State == actors.JobWaiting {
			n++
		}
	}
	return n
}

// get returns the body of a GET of path on the bot's HTTP listener.
func (s *session) get(t *testing.T, path string) string {
	t.Helper()
	rs, err := http.Get(s.sb.WebURL() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Body.Close()
	body, err := io.ReadAll(rs.Body)
	if err != nil || rs.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", path, rs.StatusCode, err)
	}
	return string(body)
}
