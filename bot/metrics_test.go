package bot

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/limit/gcra"
	"github.com/pinbot/pinbot/internal/metrics"
	"github.com/pinbot/pinbot/internal/metrics/metricstest"
)

// metric is one expected value of a scrape.
type metric struct {
	name   string
	labels []string
	want   float64
}

// checkMetrics scrapes the world's metrics and checks each value.
func (w *world) checkMetrics(step string, want ...metric) metricstest.Samples {
	w.t.Helper()
	s := metricstest.ScrapeHandler(w.t, w.metrics.Handler())
	for _, m := range want {
		if got := s.Get(m.name, m.labels...); got != m.want {
			w.t.Errorf("%s: %s%v = %v, want %v", step, m.name, m.labels, got, m.want)
		}
	}
	return s
}

// TestMetricsPins drives /pin against the stand-ins and reads the
// metrics back from a scrape after each step: pins, their results and
// reasons, the interactions and their acknowledgements, the requests to
// Pinterest and Discord by route and class, a 429's wait, and the
// engine's grants, commits, releases and refusals.
func TestMetricsPins(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")

	text, _ := w.pin(alice, w.addImages(w.channel.ID, 2, "").ID.String())
	must(t, text, "2 pinned.")
	w.checkMetrics("one /pin of two images",
		metric{"pinbot_pins_total", []string{"result", "pinned"}, 2},
		metric{"pinbot_pins_total", []string{"result", "failed"}, 0},
		metric{"pinbot_pin_failures_total", nil, 0},
		metric{"pinbot_interactions_total", []string{"command", "pin", "result", "ok"}, 1},
		metric{"pinbot_interaction_ack_seconds", nil, 1},
		metric{"pinbot_upstream_requests_total", []string{"upstream", "pinterest", "route", "POST /v5/pins", "class", "2xx"}, 2},
		metric{"pinbot_upstream_request_duration_seconds", []string{"upstream", "pinterest", "route", "POST /v5/pins"}, 2},
		metric{"pinbot_upstream_requests_total", []string{"upstream", "discord", "route", "GET /channels/{id}/messages/{id}", "class", "2xx"}, 1},
		metric{"pinbot_upstream_requests_total", []string{"upstream", "discord", "route", "POST /interactions/{id}/{token}/callback", "class", "2xx"}, 1},
		metric{"pinbot_upstream_requests_total", []string{"class", "429"}, 0},
		metric{"pinbot_engine_grants_total", nil, 2},
		metric{"pinbot_engine_commits_total", nil, 2},
		metric{"pinbot_engine_releases_total", nil, 0},
		metric{"pinbot_engine_refusals_total", nil, 0},
		metric{"pinbot_engine_resident_accounts", nil, 1},
	)

	// A message that is gone fails on its own.
	text, _ = w.pin(alice, "123456789012345678")
	must(t, text, "message not found")
	w.checkMetrics("a message not found",
		metric{"pinbot_pins_total", []string{"result", "failed"}, 1},
		metric{"pinbot_pin_failures_total", []string{"reason", "message_gone"}, 1},
		metric{"pinbot_upstream_requests_total", []string{"upstream", "discord", "route", "GET /channels/{id}/messages/{id}", "class", "4xx"}, 1},
	)

	// Pinterest answers the next pin with a 429 asking for an hour: the
	// pin fails, the other two are skipped, all for the rate limit, and
	// the slot is released.
	w.ps.Inject(pinteresttest.RetryAfter(pinteresttest.RateLimited(pinteresttest.PathPins, ""), 3600))
	text, _ = w.pin(alice, w.addImages(w.channel.ID, 3, "").ID.String())
	must(t, text, "failed: Pinterest rate limited this account")
	s := w.checkMetrics("a 429",
		metric{"pinbot_pins_total", []string{"result", "pinned"}, 2},
		metric{"pinbot_pins_total", []string{"result", "failed"}, 2},
		metric{"pinbot_pins_total", []string{"result", "skipped"}, 2},
		metric{"pinbot_pin_failures_total", []string{"reason", "rate_limited"}, 3},
		metric{"pinbot_upstream_requests_total", []string{"upstream", "pinterest", "route", "POST /v5/pins", "class", "429"}, 1},
		metric{"pinbot_upstream_requests_total", []string{"upstream", "pinterest", "class", "429"}, 1},
		metric{"pinbot_upstream_retry_after_seconds", []string{"upstream", "pinterest"}, 1},
		metric{"pinbot_engine_grants_total", nil, 3},
		metric{"pinbot_engine_releases_total", nil, 1},
	)
	if got := s.HistogramSum("pinbot_upstream_retry_after_seconds", "upstream", "pinterest"); got != 3600 {
		t.Errorf("the 429's wait: %v s observed, want 3600", got)
	}

	// Held: the next /pin is refused before any message is read; its one
	// message counts as skipped while held. No Reserve was asked.
	text, _ = w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String())
	must(t, text, "Pinterest asked Pinbot to pause pinning")
	w.checkMetrics("held",
		metric{"pinbot_pins_total", []string{"result", "skipped"}, 3},
		metric{"pinbot_pin_failures_total", []string{"reason", "held"}, 1},
		metric{"pinbot_interactions_total", []string{"command", "pin", "result", "ok"}, 4},
	)

	// After the hold, at 98/100: a /pin of three pins two and is refused
	// the third by the engine's limit.
	w.eclock.Advance(time.Hour)
	w.pclock.Advance(time.Hour)
	w.fill("1001", 96)
	text, _ = w.pin(alice, w.addImages(w.channel.ID, 3, "").ID.String())
	must(t, text, "2 pinned", "skipped: limit reached")
	w.checkMetrics("the limit",
		metric{"pinbot_pins_total", []string{"result", "pinned"}, 4},
		metric{"pinbot_pins_total", []string{"result", "skipped"}, 4},
		metric{"pinbot_pin_failures_total", []string{"reason", "limit"}, 1},
		metric{"pinbot_engine_refusals_total", []string{"reason", "limit"}, 1},
		metric{"pinbot_engine_refusals_total", []string{"reason", "held"}, 0},
	)

}

// TestMetricsUnknownOutcome: a pin whose answer is a 502 may exist: its
// result is unknown and its slot stays pending, until the lease expires.
func TestMetricsUnknownOutcome(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	w.ps.Inject(pinteresttest.CreatedButFailed(http.StatusBadGateway))
	text, _ := w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String())
	must(t, text, "the pin may exist")
	w.checkMetrics("a 502",
		metric{"pinbot_pins_total", []string{"result", "unknown"}, 1},
		metric{"pinbot_pin_failures_total", []string{"reason", "outcome_unknown"}, 1},
		metric{"pinbot_upstream_requests_total", []string{"upstream", "pinterest", "route", "POST /v5/pins", "class", "5xx"}, 1},
		metric{"pinbot_engine_grants_total", nil, 1},
		metric{"pinbot_engine_commits_total", nil, 0},
		metric{"pinbot_engine_releases_total", nil, 0},
		metric{"pinbot_engine_lease_expiries_total", nil, 0},
	)
	w.eclock.Advance(5 * time.Minute)
	if n := w.used("1001"); n != 1 {
		t.Fatalf("count %d after the lease, want 1", n)
	}
	w.checkMetrics("the lease's end",
		metric{"pinbot_engine_lease_expiries_total", nil, 1},
	)
}

// TestMetricsInteractions: each command, component and autocomplete
// counts under its own name, and an interaction Discord refuses to
// acknowledge counts as not acknowledged.
func TestMetricsInteractions(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	w.settings(alice)
	w.run(discordtest.Invocation{UserID: alice, Data: discordtest.ChatInput{Name: cmdQueue}})
	in := w.interact(discordtest.Invocation{UserID: alice, Data: discordtest.Autocomplete{Name: cmdPin,
		Options: []discordtest.CommandOption{{Name: optMessages, Value: "1"}, {Name: optBoard, Value: "Bo", Focused: true}}}})
	w.waitDone(in)

	if err := w.dc.Inject(discordtest.RouteInteractionCallback, 1,
		discordtest.Fault{Status: http.StatusNotFound, Code: 10062, Message: "Unknown interaction"}); err != nil {
		t.Fatal(err)
	}
	in = w.interact(pinInvocation(alice, "1"))
	w.waitDone(in)

	w.checkMetrics("four interactions",
		metric{"pinbot_interactions_total", []string{"command", "settings", "result", "ok"}, 1},
		metric{"pinbot_interactions_total", []string{"command", "queue", "result", "ok"}, 1},
		metric{"pinbot_interactions_total", []string{"command", "pin_autocomplete", "result", "ok"}, 1},
		metric{"pinbot_interactions_total", []string{"command", "pin", "result", "not_acknowledged"}, 1},
		metric{"pinbot_interactions_total", nil, 4},
		metric{"pinbot_interaction_ack_seconds", nil, 3},
		metric{"pinbot_upstream_requests_total", []string{"upstream", "discord", "route", "POST /interactions/{id}/{token}/callback", "class", "4xx"}, 1},
	)
}

// TestMetricsThrottled: a command refused by its user's allowance counts
// as a refusal, result and reason throttled, not as one handled; the
// commands before it count as handled.
func TestMetricsThrottled(t *testing.T) {
	w := newWorld(t, worldOptions{userRate: gcra.Rate{Limit: 2, Period: time.Hour}})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	for range 2 {
		text, _ := w.settings(alice)
		must(t, text, "@alicepins (active)")
	}
	text, _ := w.settings(alice)
	must(t, text, "You are asking Pinbot for more than it allows each user")
	w.checkMetrics("two commands, then one over the allowance",
		metric{"pinbot_interactions_total", []string{"command", "settings", "result", "ok"}, 2},
		metric{"pinbot_interactions_total", []string{"command", "settings", "result", "throttled"}, 1},
		metric{"pinbot_interactions_total", nil, 3},
		metric{"pinbot_interaction_refusals_total", []string{"reason", "throttled"}, 1},
		metric{"pinbot_interaction_refusals_total", nil, 1},
	)
}

// TestMetricsLabels: every reason and result the bot reports is one the
// metrics list, so none is counted as "other".
func TestMetricsLabels(t *testing.T) {
	for _, r := range failReasons {
		if !slices.Contains(metrics.PinFailureReasons, r) {
			t.Errorf("reason %q is not in metrics.PinFailureReasons", r)
		}
	}
	for _, r := range []string{lookupDoneFound, lookupDoneAbsent, lookupDoneFailed} {
		if !slices.Contains(metrics.LookupResults, r) {
			t.Errorf("lookup result %q is not in metrics.LookupResults", r)
		}
	}
	for _, r := range []string{pinPinned, pinFailed, pinUnknown, pinSkipped, pinQueued} {
		if !slices.Contains(metrics.PinResults, r) {
			t.Errorf("result %q is not in metrics.PinResults", r)
		}
	}
	for _, r := range []string{interactionOK, interactionError, interactionNotAcknowledged, interactionThrottled, interactionClosing, interactionBusy} {
		if !slices.Contains(metrics.InteractionResults, r) {
			t.Errorf("interaction result %q is not in metrics.InteractionResults", r)
		}
	}
	if !slices.Equal(refusalResults, metrics.InteractionRefusals) {
		t.Errorf("refusals %q, metrics.InteractionRefusals %q", refusalResults, metrics.InteractionRefusals)
	}
	var _ Observer = metrics.New().Bot(InteractionLabels())
}

// TestMetricsQueuedPin: a picture queued at the limit counts as queued,
// then, when it runs, as pinned; its slot is a grant of the engine's, and
// one that fails counts with its reason.
func TestMetricsQueuedPin(t *testing.T) {
	w := newWorld(t, worldOptions{jobs: true})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	w.fill("1001", 100)
	keep := w.addImages(w.channel.ID, 1, "")
	gone := w.addImages(w.channel.ID, 1, "")
	text, _ := w.run(queueInvocation(alice, ids(keep, gone)))
	must(t, text, "2 queued")
	w.checkMetrics("two queued",
		metric{"pinbot_pins_total", []string{"result", "queued"}, 2},
		metric{"pinbot_pins_total", []string{"result", "pinned"}, 0},
		metric{"pinbot_pin_failures_total", nil, 0},
		metric{"pinbot_engine_grants_total", nil, 100},
		metric{"pinbot_engine_refusals_total", []string{"reason", "limit"}, 1},
		metric{"pinbot_engine_queued_accounts", nil, 1},
	)
	if err := w.dc.DeleteMessage(gone.ID); err != nil {
		t.Fatal(err)
	}
	w.setClocks(t0.Add(12 * time.Hour))
	w.nextJob()
	w.nextJob()
	w.checkMetrics("both ran",
		metric{"pinbot_pins_total", []string{"result", "queued"}, 2},
		metric{"pinbot_pins_total", []string{"result", "pinned"}, 1},
		metric{"pinbot_pins_total", []string{"result", "failed"}, 1},
		metric{"pinbot_pin_failures_total", []string{"reason", "message_gone"}, 1},
		metric{"pinbot_engine_grants_total", nil, 102},
		metric{"pinbot_engine_commits_total", nil, 101},
		metric{"pinbot_engine_releases_total", nil, 1},
		metric{"pinbot_engine_queued_accounts", nil, 0},
	)
}
