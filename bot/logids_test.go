package bot

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// logLine is one JSON log line, decoded.
type logLine map[string]any

func (l logLine) str(key string) string {
	s, _ := l[key].(string)
	return s
}

// logLines decodes the JSON lines of s.
func logLines(t *testing.T, s string) []logLine {
	t.Helper()
	var out []logLine
	for _, raw := range strings.Split(strings.TrimSpace(s), "\n") {
		if raw == "" {
			continue
		}
		var l logLine
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("log line %q: %v", raw, err)
		}
		out = append(out, l)
	}
	return out
}

// checkIDs checks that every line carries want's keys and values, and
// that the lines include one with each message of musts. disgo's own
// lines are left out: disgo logs without a context (see docs/design.md,
// "Logs").
func checkIDs(t *testing.T, what string, lines []logLine, want map[string]string, musts ...string) {
	t.Helper()
	seen := map[string]bool{}
	n := 0
	for _, l := range lines {
		if l.str("component") == "disgo" {
			continue
		}
		n++
		seen[l.str("message")] = true
		for k, v := range want {
			if got := l.str(k); got != v {
				t.Errorf("%s: line %v: %s = %q, want %q", what, l, k, got, v)
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s: no lines", what)
	}
	for _, m := range musts {
		if !seen[m] {
			t.Errorf("%s: no line %q among %d", what, m, n)
		}
	}
}

// TestLogLinesCarryTheCommandsID: every line a /pin logs, at debug level,
// from the router, the bot, the links store and the Pinterest client (its
// retry of a 429 included), carries the interaction's ID; and every line
// of the queued pin it left, when it runs, carries the job's ID and the
// same interaction ID.
func TestLogLinesCarryTheCommandsID(t *testing.T) {
	w := newWorld(t, worldOptions{jobs: true, debugLog: true, pinterest: func(c *pinterest.Config) {
		c.Retry.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	}})
	user := w.addUser("alice")
	w.link(user, "acct", "alice")
	w.fill("acct", 99)
	m := w.addImages(w.channel.ID, 2, "two cats")
	w.ps.Inject(pinteresttest.Fault{Method: http.MethodGet, Path: pinteresttest.PathBoards, Status: http.StatusTooManyRequests,
		Header: http.Header{"Retry-After": {"1"}}})

	mark := len(w.logs.String())
	text, in := w.run(discordtest.Invocation{UserID: user, Data: discordtest.ChatInput{Name: cmdPin, Options: []discordtest.CommandOption{
		{Name: optMessages, Value: m.ID.String()}, {Name: optBoard, Value: "Board of alice"}, {Name: optWhenFull, Value: whenFullQueue},
	}}})
	if !strings.Contains(text, "1 pinned, 1 queued.") {
		t.Fatalf("reply:\n%s", text)
	}
	iid := in.ID.String()
	checkIDs(t, "/pin", logLines(t, w.logs.String()[mark:]), map[string]string{"interaction_id": iid},
		"pinterest rate limited", "pinterest request failed, retrying", "pinterest response")

	js := w.jobs("acct")
	if len(js) != 1 {
		t.Fatalf("%d jobs, want 1", len(js))
	}
	mark = len(w.logs.String())
	w.setClocks(js[0].Due)
	if ran := w.nextJob(); ran.ID != js[0].ID {
		t.Fatalf("job %d ran, want %d", ran.ID, js[0].ID)
	}
	if n := len(w.ps.PinsFor("acct")); n != 2 {
		t.Fatalf("%d pins on Pinterest, want 2", n)
	}
	checkIDs(t, "queued pin", logLines(t, w.logs.String()[mark:]),
		map[string]string{"interaction_id": iid, "job": strconv.FormatUint(js[0].ID, 10)},
		"pinterest response", "pinterest pin created")
}

// TestQueuedPinPayloadKeepsItsInteraction: the /pin's ID goes into the
// queued payload, and a payload stored before it was kept still reads.
func TestQueuedPinPayloadKeepsItsInteraction(t *testing.T) {
	q := queuedPin{Channel: 2, Message: 3, Image: 1, User: 4, Board: "b", Interaction: 5}
	got, err := decodeQueuedPin(q.encode())
	if err != nil || got != q {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, q)
	}
	old := []byte(`{"g":"1","c":"2","m":"3","i":1,"n":1,"u":"4","f":"2","b":"b"}`)
	got, err = decodeQueuedPin(old)
	if err != nil || got.Interaction != 0 || got.Board != "b" {
		t.Fatalf("older payload: %+v, %v", got, err)
	}
}
