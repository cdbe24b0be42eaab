package metrics_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/internal/metrics"
	"github.com/pinbot/pinbot/internal/metrics/metricstest"
)

// TestNamesFollowConventions lints every pinbot metric with Prometheus'
// own linter (names, units, help texts), and checks the series that exist
// from the start.
func TestNamesFollowConventions(t *testing.T) {
	m := metrics.New()
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "pinbot_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
	s := metricstest.ScrapeHandler(t, m.Handler())
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "pinbot_gateway_shards_connected", "pinbot_engine_resident_accounts", "pinbot_engine_parked_accounts"} {
		if _, ok := s.Lookup(name); !ok {
			t.Errorf("%s is not served", name)
		}
	}
	// Every result and reason is served from the start, at 0.
	for _, src := range metrics.PinSources {
		for _, r := range metrics.PinResults {
			if v, ok := s.Lookup("pinbot_pins_total", "source", src, "result", r); !ok || v != 0 {
				t.Errorf("pinbot_pins_total{source=%q,result=%q} = %v, %v; want 0, served", src, r, v, ok)
			}
		}
		if v, ok := s.Lookup("pinbot_duplicates_avoided_total", "source", src); !ok || v != 0 {
			t.Errorf("pinbot_duplicates_avoided_total{source=%q} = %v, %v; want 0, served", src, v, ok)
		}
	}
	for _, r := range []string{"limit", "held", "queue"} {
		if _, ok := s.Lookup("pinbot_engine_refusals_total", "reason", r); !ok {
			t.Errorf("pinbot_engine_refusals_total{reason=%q} is not served", r)
		}
	}
	for name, reasons := range map[string][]string{
		"pinbot_interaction_refusals_total": metrics.InteractionRefusals,
		"pinbot_http_refusals_total":        metrics.HTTPRefusals,
	} {
		for _, r := range reasons {
			if v, ok := s.Lookup(name, "reason", r); !ok || v != 0 {
				t.Errorf("%s{reason=%q} = %v, %v; want 0, served", name, r, v, ok)
			}
		}
	}
}

func TestRoute(t *testing.T) {
	tests := []struct{ method, path, want string }{
		{"POST", "/v5/pins", "POST /v5/pins"},
		{"GET", "/v5/boards", "GET /v5/boards"},
		{"GET", "/v5/user_account", "GET /v5/user_account"},
		{"POST", "/v5/oauth/token", "POST /v5/oauth/token"},
		{"GET", "/v5/pins/813744226420795884", "GET /v5/pins/{id}"},
		{"GET", "/api/v10/channels/1234567890123/messages/987654321", "GET /channels/{id}/messages/{id}"},
		{"POST", "/api/v10/interactions/1234/aW50ZXJhY3Rpb246MTIzNDp0b2tlbg/callback", "POST /interactions/{id}/{token}/callback"},
		{"PATCH", "/api/v10/webhooks/42/aW50ZXJhY3Rpb24t0k3n/messages/@original", "PATCH /webhooks/{id}/{token}/messages/@original"},
		{"GET", "/api/v10/users/@me", "GET /users/@me"},
		{"PUT", "/api/v10/applications/42/commands", "PUT /applications/{id}/commands"},
		{"GET", "/api/v10/gateway/bot", "GET /gateway/bot"},
		{"PUT", "/api/v10/channels/1/messages/2/reactions/%F0%9F%91%8D/@me", "PUT /channels/{id}/messages/{id}/reactions/{param}/@me"},
		{"GET", "/api/v10/guilds/1/Members", "GET /guilds/{id}/{param}"},
		{"GET", "/", "GET /"},
	}
	for _, tt := range tests {
		if got := metrics.Route(tt.method, tt.path); got != tt.want {
			t.Errorf("Route(%s, %s) = %q, want %q", tt.method, tt.path, got, tt.want)
		}
	}
}

// TestTransport sends requests through a counted transport to a server
// answering with each class, and checks the counts, the route templates,
// the 429's wait and the cap on routes.
func TestTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/limited"):
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
		case strings.HasSuffix(r.URL.Path, "/reset"):
			w.Header().Set("X-RateLimit-Reset-After", "0.5")
			w.WriteHeader(http.StatusTooManyRequests)
		case strings.HasSuffix(r.URL.Path, "/broken"):
			w.WriteHeader(http.StatusBadGateway)
		case strings.HasSuffix(r.URL.Path, "/missing"):
			w.WriteHeader(http.StatusNotFound)
		case strings.HasSuffix(r.URL.Path, "/moved"):
			w.WriteHeader(http.StatusNotModified)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	defer srv.Close()
	m := metrics.New()
	hc := &http.Client{Transport: m.Transport(metrics.Discord, nil, nil)}
	get := func(path string) {
		t.Helper()
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	get("/api/v10/channels/1/messages/2")
	get("/api/v10/channels/3/messages/4")
	get("/api/v10/channels/3/limited")
	get("/api/v10/channels/3/reset")
	get("/api/v10/channels/3/broken")
	get("/api/v10/channels/3/missing")
	get("/api/v10/channels/3/moved")
	// A request that gets no answer.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	if _, err := hc.Get(dead + "/api/v10/users/@me"); err == nil {
		t.Fatal("a request to a closed port succeeded")
	}

	s := metricstest.ScrapeHandler(t, m.Handler())
	tests := []struct {
		route, class string
		want         float64
	}{
		{"GET /channels/{id}/messages/{id}", "2xx", 2},
		{"GET /channels/{id}/limited", "429", 1},
		{"GET /channels/{id}/reset", "429", 1},
		{"GET /channels/{id}/broken", "5xx", 1},
		{"GET /channels/{id}/missing", "4xx", 1},
		{"GET /channels/{id}/moved", "3xx", 1},
		{"GET /users/@me", "error", 1},
		{"GET /users/@me", "2xx", 0},
	}
	for _, tt := range tests {
		if got := s.Get("pinbot_upstream_requests_total", "upstream", "discord", "route", tt.route, "class", tt.class); got != tt.want {
			t.Errorf("requests{route=%q, class=%q} = %v, want %v", tt.route, tt.class, got, tt.want)
		}
	}
	if got := s.Get("pinbot_upstream_request_duration_seconds", "upstream", "discord", "route", "GET /channels/{id}/messages/{id}"); got != 2 {
		t.Errorf("duration count of the messages route = %v, want 2", got)
	}
	if got := s.Get("pinbot_upstream_retry_after_seconds", "upstream", "discord"); got != 2 {
		t.Errorf("retry-after observations = %v, want 2 (one per 429)", got)
	}
	if got := s.HistogramSum("pinbot_upstream_retry_after_seconds", "upstream", "discord"); got != 3.5 {
		t.Errorf("retry-after sum = %v, want 3.5 (3 s and 0.5 s)", got)
	}

	// Routes beyond the cap are counted as other.
	for i := range 80 {
		get(fmt.Sprintf("/api/v10/r%c%c", 'a'+i/26, 'a'+i%26))
	}
	s = metricstest.ScrapeHandler(t, m.Handler())
	routes := map[string]bool{}
	for _, ls := range s.Series("pinbot_upstream_requests_total") {
		routes[ls["route"]] = true
	}
	if len(routes) > 65 || !routes["other"] {
		t.Errorf("%d routes served (other: %v), want at most 64 and other", len(routes), routes["other"])
	}
}

func TestDiscordRetryWait(t *testing.T) {
	now := time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second, true},
		{http.Header{"Retry-After": {"0.25"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After": {now.Add(time.Minute).Format(http.TimeFormat)}}, time.Minute, true},
		{http.Header{"X-Ratelimit-Reset-After": {"1.5"}}, 1500 * time.Millisecond, true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{"Retry-After": {"-1"}}, 0, false},
		{http.Header{}, 0, false},
	}
	for i, tt := range tests {
		if got, ok := metrics.DiscordRetryWait(tt.h, now); got != tt.want || ok != tt.ok {
			t.Errorf("step %d: DiscordRetryWait(%v) = %v, %v; want %v, %v", i, tt.h, got, ok, tt.want, tt.ok)
		}
	}
}

// TestObservers reports to the engine's and the bot's observers and reads
// the result back from a scrape.
func TestObservers(t *testing.T) {
	m := metrics.New()
	e := m.Engine()
	e.Granted(3)
	e.Committed()
	e.Released()
	e.LeaseExpired(2)
	e.Refused(actors.RefusedLimit)
	e.Refused(actors.RefusedHeld)
	e.Refused(actors.RefusedHeld)
	e.Refused(actors.RefusedQueue)
	e.Refused(actors.Refusal(99)) // not a reason: ignored
	e.JournalBatch(7, time.Millisecond, nil)
	e.JournalBatch(1, time.Millisecond, errors.New("disk"))
	e.Loaded(time.Millisecond)
	e.Snapshotted(time.Millisecond)

	// The bot's command labels come from its command table; these
	// stand for them here.
	b := m.Bot([]string{"pin", "settings", "queue", "pin_autocomplete"})
	// An observer counts only the labels it was given; every observer
	// counts into the same series.
	m.Bot(nil).InteractionDone("settings", "error")
	b.PinDone("command", "pinned", "")
	b.PinDone("command", "pinned", "")
	b.PinDone("command", "queued", "")
	b.PinDone("command", "failed", "rate_limited")
	b.PinDone("command", "skipped", "rate_limited")
	b.PinDone("command", "unknown", "outcome_unknown")
	b.PinDone("command", "failed", "a reason nobody listed")
	b.PinDone("command", "exploded", "limit")
	b.InteractionDone("pin", "ok")
	b.InteractionDone("pin", "ok")
	b.InteractionDone("/rm -rf", "ok")
	b.InteractionDone("queue", "lost")
	b.InteractionDone("pin", "throttled")
	b.InteractionDone("settings", "throttled")
	b.InteractionDone("pin_autocomplete", "busy")
	b.InteractionDone("queue", "closing")
	m.HTTPRefused("http_rate")
	m.HTTPRefused("http_rate")
	m.HTTPRefused("operator_rate")
	m.HTTPRefused("a reason nobody listed")
	b.Acknowledged(40 * time.Millisecond)
	b.ShardReady(0, false, false)
	b.ShardReady(0, true, true)
	b.ShardReady(1, false, true)

	s := metricstest.ScrapeHandler(t, m.Handler())
	tests := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"pinbot_engine_grants_total", nil, 3},
		{"pinbot_engine_commits_total", nil, 1},
		{"pinbot_engine_releases_total", nil, 1},
		{"pinbot_engine_lease_expiries_total", nil, 2},
		{"pinbot_engine_refusals_total", []string{"reason", "limit"}, 1},
		{"pinbot_engine_refusals_total", []string{"reason", "held"}, 2},
		{"pinbot_engine_refusals_total", []string{"reason", "queue"}, 1},
		{"pinbot_engine_refusals_total", nil, 4},
		{"pinbot_journal_batch_writes", nil, 2},
		{"pinbot_journal_commit_seconds", nil, 2},
		{"pinbot_journal_write_failures_total", nil, 1},
		{"pinbot_engine_replay_seconds", nil, 1},
		{"pinbot_engine_snapshot_seconds", nil, 1},
		{"pinbot_pins_total", []string{"result", "pinned"}, 2},
		{"pinbot_pins_total", []string{"result", "queued"}, 1},
		{"pinbot_pins_total", []string{"result", "failed"}, 2},
		{"pinbot_pins_total", []string{"result", "skipped"}, 1},
		{"pinbot_pins_total", []string{"result", "unknown"}, 1},
		{"pinbot_pins_total", []string{"result", "other"}, 1},
		{"pinbot_pin_failures_total", []string{"reason", "rate_limited"}, 2},
		{"pinbot_pin_failures_total", []string{"reason", "outcome_unknown"}, 1},
		{"pinbot_pin_failures_total", []string{"reason", "limit"}, 1},
		{"pinbot_pin_failures_total", []string{"reason", "other"}, 1},
		{"pinbot_interactions_total", []string{"command", "pin", "result", "ok"}, 2},
		{"pinbot_interactions_total", []string{"command", "other", "result", "ok"}, 1},
		{"pinbot_interactions_total", []string{"command", "other", "result", "error"}, 1},
		{"pinbot_interactions_total", []string{"command", "settings", "result", "error"}, 0},
		{"pinbot_interactions_total", []string{"command", "queue", "result", "other"}, 1},
		{"pinbot_interactions_total", []string{"command", "pin", "result", "throttled"}, 1},
		{"pinbot_interactions_total", []string{"result", "throttled"}, 2},
		{"pinbot_interactions_total", []string{"command", "pin_autocomplete", "result", "busy"}, 1},
		{"pinbot_interactions_total", []string{"command", "queue", "result", "closing"}, 1},
		{"pinbot_interaction_refusals_total", []string{"reason", "throttled"}, 2},
		{"pinbot_interaction_refusals_total", []string{"reason", "busy"}, 1},
		{"pinbot_interaction_refusals_total", []string{"reason", "closing"}, 1},
		{"pinbot_interaction_refusals_total", nil, 4}, // ok, error and other are no refusals
		{"pinbot_http_refusals_total", []string{"reason", "http_rate"}, 2},
		{"pinbot_http_refusals_total", []string{"reason", "operator_rate"}, 1},
		{"pinbot_http_refusals_total", []string{"reason", "other"}, 1},
		{"pinbot_interaction_ack_seconds", nil, 1},
		{"pinbot_gateway_reconnects_total", nil, 2},
		{"pinbot_gateway_resumes_total", nil, 1},
	}
	for _, tt := range tests {
		if got := s.Get(tt.name, tt.labels...); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	if got := s.HistogramSum("pinbot_journal_batch_writes"); got != 8 {
		t.Errorf("account writes in batches = %v, want 8", got)
	}
}

// BenchmarkEngineObserver is the cost of the reports on the path of every
// grant, from every processor at once: no allocation.
func BenchmarkEngineObserver(b *testing.B) {
	o := metrics.New().Engine()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			o.Granted(1)
			o.Committed()
		}
	})
}

func TestBreakerState(t *testing.T) {
	m := metrics.New()
	state := "closed"
	read := func() map[string]float64 {
		out := map[string]float64{}
		mfs, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "pinbot_upstream_breaker_state" {
				continue
			}
			for _, mm := range mf.GetMetric() {
				for _, lp := range mm.GetLabel() {
					if lp.GetName() == "state" {
						out[lp.GetValue()] = mm.GetGauge().GetValue()
					}
				}
			}
		}
		return out
	}
	if got := read(); got["closed"] != 0 || len(got) != 3 {
		t.Fatalf("before WatchBreaker: %v, want 3 states at 0", got)
	}
	m.WatchBreaker(func() string { return state })
	if got := read(); got["closed"] != 1 || got["open"] != 0 {
		t.Fatalf("closed: %v", got)
	}
	state = "open"
	if got := read(); got["closed"] != 0 || got["open"] != 1 || got["half-open"] != 0 {
		t.Fatalf("open: %v", got)
	}
}
