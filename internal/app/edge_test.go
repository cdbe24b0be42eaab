package app

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/bot/web"
	"github.com/pinbot/pinbot/internal/gcra"
)

// TestBuildLimitsHTTP: every route of the listener is behind the
// per-client limit, with its headers on every answer; NoHTTPLimit takes
// it away.
func TestBuildLimitsHTTP(t *testing.T) {
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()

	cfg := testConfig(t, dc, ps, t.TempDir())
	cfg.HTTPLimit.Rate = gcra.Rate{Limit: 2, Period: time.Hour}
	base := "http://" + cfg.Listener.Addr().String()
	a, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	for i, tt := range []struct {
		path      string
		status    int
		remaining string
	}{
		{web.HealthPath, 200, "1"},
		{web.CallbackPath, 400, "0"},
		{web.HealthPath, 429, "0"},
		{"/elsewhere", 429, "0"},
	} {
		resp, err := http.Get(base + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if resp.StatusCode != tt.status || h.Get("RateLimit-Limit") != "2" || h.Get("RateLimit-Remaining") != tt.remaining || h.Get("X-RateLimit-Reset") == "" {
			t.Errorf("step %d: GET %s: %d, headers %v; want %d and remaining %s", i, tt.path, resp.StatusCode, h, tt.status, tt.remaining)
		}
		if tt.status == 429 && h.Get("Retry-After") != "1800" {
			t.Errorf("step %d: Retry-After %q, want 1800", i, h.Get("Retry-After"))
		}
	}
	if a.Edge.Clients() != 1 {
		t.Errorf("%d clients, want 1", a.Edge.Clients())
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
