package bot

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// TestPinBreakerOpen: once Pinterest has failed enough times in a row,
// the client's circuit breaker is open: a /pin sends nothing, releases its
// slot and tells the user Pinterest is not answering.
func TestPinBreakerOpen(t *testing.T) {
	w := newWorld(t, worldOptions{pinterest: func(c *pinterest.Config) {
		c.Retry.MaxAttempts = 1
		c.Breaker.Failures = 2
	}})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	m := w.addImages(w.channel.ID, 2, "")
	// Two board lists fail (a 503 each): the breaker opens.
	w.ps.Inject(pinteresttest.Fault{Method: http.MethodGet, Path: pinteresttest.PathBoards, Status: 503, Times: -1})
	for range 2 {
		text, _ := w.pin(alice, m.ID.String(), "Cats")
		must(t, text, msgPinterestDown)
	}
	if got := w.pc.BreakerState(); got != pinterest.BreakerOpen {
		t.Fatalf("breaker %s, want open", got)
	}
	seen := w.ps.Count("", "")
	text, _ := w.pin(alice, m.ID.String())
	must(t, text, "0 pinned, 1 failed, 1 skipped.", "failed: Pinterest is not answering", msgPinterestDown,
		"skipped: not attempted: Pinterest is not answering")
	if n := w.ps.Count("", ""); n != seen {
		t.Fatalf("%d requests reached Pinterest with the breaker open", n-seen)
	}
	if n := w.used("1001"); n != 0 {
		t.Fatalf("count %d, want 0 (nothing was sent)", n)
	}

	// Once the open period has passed, the next pin is the probe.
	w.ps.ClearFaults()
	w.pclock.Advance(pinterest.DefaultBreakerOpenFor)
	text, _ = w.pin(alice, m.ID.String())
	must(t, text, "2 pinned.")
	if got := w.pc.BreakerState(); got != pinterest.BreakerClosed {
		t.Fatalf("breaker %s, want closed", got)
	}
}

// TestPinPausedBeforeRefusal: Pinterest's headers say the account's pins
// are spent: the next pin is not sent, the account is held until the
// reset as after a 429, and Pinterest never refuses anything.
func TestPinPausedBeforeRefusal(t *testing.T) {
	w := newWorld(t, worldOptions{pinterestServer: []pinteresttest.Option{
		pinteresttest.WithRateLimit(pinteresttest.RateLimit{Limit: 2, Window: time.Hour}),
	}})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	m := w.addImages(w.channel.ID, 4, "")
	text, _ := w.pin(alice, m.ID.String())
	until := t0.Add(time.Hour).Unix()
	must(t, text, "2 pinned, 1 failed, 1 skipped.", "12-hour pin count: 2/100", "failed: Pinterest rate limited this account",
		fmt.Sprintf("Pinterest rate limited @alicepins. Skipped remaining pins; Pinbot will not pin with this account again before <t:%d:T> (<t:%d:R>).", until, until))
	if n := w.used("1001"); n != 2 {
		t.Fatalf("count %d, want 2 (the held-back pin released)", n)
	}
	for _, r := range w.ps.Requests() {
		if r.Status == http.StatusTooManyRequests {
			t.Fatalf("Pinterest refused %s %s", r.Method, r.Path)
		}
	}
	wantPosts := w.ps.Count(http.MethodPost, pinteresttest.PathPins)
	text, _ = w.pin(alice, m.ID.String())
	must(t, text, fmt.Sprintf("Pinterest asked Pinbot to pause pinning with @alicepins, so nothing more was pinned. It can pin again at <t:%d:T> (<t:%d:R>).", until, until))
	if n := w.ps.Count(http.MethodPost, pinteresttest.PathPins); n != wantPosts || n != 2 {
		t.Fatalf("%d pins sent, want 2", n)
	}
}
