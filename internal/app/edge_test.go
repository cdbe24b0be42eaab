package app

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/bot/web"
	"github.com/pinbot/pinbot/internal/limit/gcra"
	"github.com/pinbot/pinbot/internal/metrics/metricstest"
)

// TestBuildLimitsHTTP: every route of the listener is behind the
// per-client limit, with its headers on every answer; the health checks
// and metrics count against the operator's rate, apart from the public
// pages; NoHTTPLimit takes it all away.
func TestBuildLimitsHTTP(t *testing.T) {
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()

	cfg := testConfig(t, dc, ps, t.TempDir())
	cfg.HTTPLimit.Rate = gcra.Rate{Limit: 2, Period: time.Hour}
	cfg.HTTPLimit.OperatorRate = gcra.Rate{Limit: 3, Period: time.Hour}
	base := "http://" + cfg.Listener.Addr().String()
	a, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	for i, tt := range []struct {
		path             string
		status           int
		limit, remaining string
		retry            string
	}{
		{web.CallbackPath, 400, "2", "1", ""},
		{"/elsewhere", 404, "2", "0", ""},
		{web.CallbackPath, 429, "2", "0", "1800"},
		{web.HealthPath, 200, "3", "2", ""},
		{ReadyPath, 503, "3", "1", ""}, // not started: no shard connected
		{"/metrics", 200, "3", "0", ""},
		{web.HealthPath, 429, "3", "0", "1200"},
		{"/elsewhere", 429, "2", "0", "1800"},
	} {
		resp, err := http.Get(base + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if resp.StatusCode != tt.status || h.Get("RateLimit-Limit") != tt.limit || h.Get("RateLimit-Remaining") != tt.remaining || h.Get("X-RateLimit-Reset") == "" {
			t.Errorf("step %d: GET %s: %d, headers %v; want %d, limit %s and remaining %s", i, tt.path, resp.StatusCode, h, tt.status, tt.limit, tt.remaining)
		}
		if h.Get("Retry-After") != tt.retry {
			t.Errorf("step %d: Retry-After %q, want %q", i, h.Get("Retry-After"), tt.retry)
		}
	}
	if a.Edge.Clients() != 1 {
		t.Errorf("%d clients, want 1", a.Edge.Clients())
	}
	// Each 429 is counted by the limit that refused it.
	s := metricstest.ScrapeHandler(t, a.Metrics.Handler())
	for reason, want := range map[string]float64{"http_rate": 2, "operator_rate": 1} {
		if got := s.Get("pinbot_http_refusals_total", "reason", reason); got != want {
			t.Errorf("pinbot_http_refusals_total{reason=%q} = %v, want %v", reason, got, want)
		}
	}

	cfg = testConfig(t, dc, ps, t.TempDir())
	cfg.NoHTTPLimit = true
	base = "http://" + cfg.Listener.Addr().String()
	b, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	resp, err := http.Get(base + web.HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("RateLimit-Limit") != "" || b.Edge != nil {
		t.Errorf("without a limit: %d, headers %v", resp.StatusCode, resp.Header)
	}
}
