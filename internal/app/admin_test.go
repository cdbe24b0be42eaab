package app

import (
	"context"
	"net/http"
	"testing"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// TestBuildAdmin: with an admin token the listener serves the dashboard
// to requests carrying it and refuses others with 401; without one,
// /admin is the listener's 404.
func TestBuildAdmin(t *testing.T) {
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()
	for _, c := range []struct {
		token          string
		auth           string
		status, health int
	}{
		{"", "", http.StatusNotFound, http.StatusOK},
		{"", "Bearer anything", http.StatusNotFound, http.StatusOK},
		{"admin-token-0123456789", "", http.StatusUnauthorized, http.StatusOK},
		{"admin-token-0123456789", "Bearer wrong", http.StatusUnauthorized, http.StatusOK},
		{"admin-token-0123456789", "Bearer admin-token-0123456789", http.StatusOK, http.StatusOK},
	} {
		cfg := testConfig(t, dc, ps, t.TempDir())
		cfg.AdminToken = []byte(c.token)
		addr := cfg.Listener.Addr().String()
		a, err := Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]int{"/admin": c.status, "/admin/data.json": c.status, "/healthz": c.health} {
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("token %q, %s with %q: %d want %d", c.token, path, c.auth, resp.StatusCode, want)
			}
			if want == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("token %q, %s: 401 without WWW-Authenticate", c.token, path)
			}
		}
		if err := a.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
