package bot

import (
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/actors"
)

func TestWindowNames(t *testing.T) {
	tests := []struct {
		w                time.Duration
		short, adjective string
	}{
		{12 * time.Hour, "12h", "12-hour"},
		{time.Hour, "1h", "1-hour"},
		{24 * time.Hour, "24h", "24-hour"},
		{36 * time.Hour, "36h", "36-hour"},
		{48 * time.Hour, "2d", "2-day"},
		{7 * 24 * time.Hour, "7d", "7-day"},
		{90 * time.Minute, "1h30m", "90-minute"},
		{time.Hour + 30*time.Second, "1h30s", "3630-second"},
		{20 * time.Second, "20s", "20-second"},
		{time.Second, "1s", "1-second"},
		{1500 * time.Millisecond, "1s500ms", "1500-millisecond"},
		{time.Millisecond, "1ms", "1-millisecond"},
		{actors.MaxWindow, "596h31m23s648ms", "2147483648-millisecond"},
	}
	for i, tt := range tests {
		if s, a := WindowShort(tt.w), WindowAdjective(tt.w); s != tt.short || a != tt.adjective {
			t.Errorf("step %d: %v is %q, %q; want %q, %q", i, tt.w, s, a, tt.short, tt.adjective)
		}
	}
}

// TestRuleTexts: under the default rule the texts are the spec's, word
// for word; under another they name its limit and window.
func TestRuleTexts(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	st := actors.Status{Used: 100, Limit: 100, NextFree: at.Add(time.Hour), At: at}
	def := ruleOf(actors.DefaultConfig(), 0)
	cfg := actors.DefaultConfig()
	cfg.Limit, cfg.Window = 5, 20*time.Second
	other := ruleOf(cfg, 0)
	// A cluster member's engine counts for 12 h and a second: users read
	// the rule.
	ccfg := actors.DefaultConfig()
	ccfg.Window += time.Second
	member := ruleOf(ccfg, 12*time.Hour)
	tests := []struct{ got, want string }{
		{member.pinCount(actors.Status{Used: 7, Limit: 100}), "12-hour pin count: 7/100"},
		{member.limitReached(), "Pin limit reached (100/12h). Skipped remaining pins."},
		{def.limitReached(), "Pin limit reached (100/12h). Skipped remaining pins."},
		{def.limitNothingPinned(), "Pin limit reached (100/12h), so nothing was pinned."},
		{def.pinCount(actors.Status{Used: 7, Limit: 100}), "12-hour pin count: 7/100"},
		{def.pinsLine(actors.Status{Used: 7, Limit: 100}), "12-hour pins: 7/100"},
		{def.pinsUnknown(), "12-hour pins: unknown"},
		{def.limitStop(st, true), "Pin limit reached (100/12h). Skipped remaining pins. The next slot frees at <t:1772370000:T> (<t:1772370000:R>)."},
		{def.atLimit(st, "@a"), "Pin limit reached (100/12h), so nothing was pinned with @a: the next slot frees at <t:1772370000:T> (<t:1772370000:R>). You can switch to another account in /settings."},
		{other.limitReached(), "Pin limit reached (5/20s). Skipped remaining pins."},
		{other.limitNothingPinned(), "Pin limit reached (5/20s), so nothing was pinned."},
		{other.pinCount(actors.Status{Used: 1, Limit: 5}), "20-second pin count: 1/5"},
		{other.pinsLine(actors.Status{Used: 1, Limit: 5}), "20-second pins: 1/5"},
		{other.pinsUnknown(), "20-second pins: unknown"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("step %d: %q\n want %q", i, tt.got, tt.want)
		}
	}
}

// TestRuleChangedTexts: an account refused by a limit in force before a
// change, while its count under the current limit leaves slots, reads as
// at its limit, with a word on the change; not as held by Pinterest.
func TestRuleChangedTexts(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	blocked := actors.Status{Used: 10, Limit: 100, Blocked: 90, NextFree: at.Add(time.Hour), At: at}
	if !full(blocked) || held(blocked) {
		t.Fatalf("blocked status: full %v, held %v; want full, not held", full(blocked), held(blocked))
	}
	heldSt := actors.Status{Used: 10, Limit: 100, NextFree: at.Add(time.Hour), At: at}
	if full(heldSt) || !held(heldSt) {
		t.Fatalf("held status: full %v, held %v; want held, not full", full(heldSt), held(heldSt))
	}
	r := ruleOf(actors.DefaultConfig(), 0)
	for _, text := range []string{r.atLimit(blocked, "@a"), r.limitStop(blocked, false)} {
		if !strings.Contains(text, "Pinbot's limit was changed recently") || !strings.HasPrefix(text, "Pin limit reached (100/12h)") {
			t.Errorf("text of a blocked account: %q", text)
		}
	}
}

// TestPinFollowsRule: with 3 pins per 20 seconds, the replies, /settings
// and the command descriptions name that rule.
func TestPinFollowsRule(t *testing.T) {
	w := newWorld(t, worldOptions{engine: func(c *actors.Config) { c.Limit, c.Window = 3, 20*time.Second }})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	m := w.addImages(w.channel.ID, 5, "five")
	text, _ := w.pin(alice, m.ID.String())
	must(t, text, "3 pinned", "20-second pin count: 1/3", "20-second pin count: 3/3", "Pin limit reached (3/20s). Skipped remaining pins.")
	text, _ = w.settings(alice)
	must(t, text, "@alicepins (active) — 20-second pins: 3/3")
	text, _ = w.pin(alice, m.ID.String())
	must(t, text, "Pin limit reached (3/20s), so nothing was pinned with @alicepins")

	w.eclock.Advance(20 * time.Second)
	text, _ = w.pin(alice, w.addImages(w.channel.ID, 5, "five more").ID.String())
	must(t, text, "20-second pin count: 3/3")

	var found bool
	for _, c := range w.dc.Commands(0) {
		found = found || strings.Contains(string(c.Definition), "20-second pin counts")
	}
	if !found {
		t.Errorf("no command description names the 20-second window")
	}
}

// TestRuleCountsEarlierRule: the counts shown add the slots an earlier
// rule still holds to those in use, as /pin refuses them, and say so.
func TestRuleCountsEarlierRule(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := ruleOf(actors.DefaultConfig(), 0)
	tests := []struct {
		st               actors.Status
		pinsLine, pinCnt string
	}{
		{actors.Status{Used: 2, Limit: 5, At: at}, "12-hour pins: 2/5", "12-hour pin count: 2/5"},
		{actors.Status{Used: 2, Limit: 5, Blocked: 2, At: at}, "12-hour pins: 4/5 (2 of them under the earlier rule)", "12-hour pin count: 4/5 (2 of them under the earlier rule)"},
		{actors.Status{Used: 0, Limit: 5, Blocked: 5, At: at}, "12-hour pins: 5/5 (5 of them under the earlier rule)", "12-hour pin count: 5/5 (5 of them under the earlier rule)"},
	}
	for i, tt := range tests {
		if got := r.pinsLine(tt.st); got != tt.pinsLine {
			t.Errorf("step %d: pinsLine = %q want %q", i, got, tt.pinsLine)
		}
		if got := r.pinCount(tt.st); got != tt.pinCnt {
			t.Errorf("step %d: pinCount = %q want %q", i, got, tt.pinCnt)
		}
	}
}

// TestRuleQueuedTexts: a batch whose rest was queued says so, never that
// it skipped it; what did not fit in the queue is said to be skipped.
func TestRuleQueuedTexts(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	first, last := at.Add(time.Hour), at.Add(2*time.Hour)
	full := actors.Status{Used: 100, Limit: 100, NextFree: first, At: at, Queued: 4}
	blocked := actors.Status{Used: 10, Limit: 100, Blocked: 90, NextFree: first, At: at, Queued: 4}
	heldSt := actors.Status{Used: 10, Limit: 100, NextFree: first, At: at, Queued: 4}
	r := ruleOf(actors.DefaultConfig(), 0)
	const f, l = "<t:1772370000:T> (<t:1772370000:R>)", "<t:1772373600:T> (<t:1772373600:R>)"
	tests := []struct{ got, want string }{
		{r.queuedStop(full, "@a", true, 4, 4, first, last), "Pin limit reached (100/12h). Queued the remaining 4 pins: the first starts at " + f + ", the last at " + l + "."},
		{r.queuedStop(full, "@a", true, 1, 1, first, first), "Pin limit reached (100/12h). Queued the remaining pin: it starts at " + f + "."},
		{r.queuedStop(full, "@a", false, 4, 4, first, last), "Pin limit reached (100/12h), so nothing was pinned. Queued 4 pins: the first starts at " + f + ", the last at " + l + "."},
		{r.queuedStop(full, "@a", false, 1, 1, first, first), "Pin limit reached (100/12h), so nothing was pinned. Queued 1 pin: it starts at " + f + "."},
		{r.queuedStop(full, "@a", true, 2, 4, first, last), "Pin limit reached (100/12h). Queued 2 of the remaining 4 pins: the first starts at " + f + ", the last at " + l + "."},
		{r.queuedStop(full, "@a", false, 2, 4, first, last), "Pin limit reached (100/12h), so nothing was pinned. Queued 2 of 4 pins: the first starts at " + f + ", the last at " + l + "."},
		{r.queuedStop(blocked, "@a", true, 4, 4, first, last), "Pin limit reached (100/12h). Queued the remaining 4 pins: the first starts at " + f + ", the last at " + l + ". " + msgEarlierRule},
		{r.queuedStop(heldSt, "@a", true, 4, 4, first, last), "Pinterest asked Pinbot to pause pinning with @a, so nothing more was pinned. Queued the remaining 4 pins: the first starts at " + f + ", the last at " + l + "."},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("step %d: %q\n want %q", i, tt.got, tt.want)
		}
	}
}
