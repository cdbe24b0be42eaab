package app

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/dashboard"
)

// TestBuildAdmin: with an admin token the listener serves the dashboard
// to requests carrying it, its accounts named from the token store, and
// refuses others with 401; without one, /admin is the listener's 404.
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
		// Linked and used before the dashboard's first look.
		if err := a.Links.Link(context.Background(), "801", links.Account{ID: "4242", Username: "alice_art"}, &oauth2.Token{AccessToken: "at"}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Engine.Reserve(context.Background(), "4242", 1); err != nil {
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
		if c.status == http.StatusOK {
			checkAdminNames(t, addr, c.auth)
		}
		if err := a.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// checkAdminNames checks that the dashboard names account 4242 by its
// Pinterest username and the Discord user who linked it.
func checkAdminNames(t *testing.T, addr, auth string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/admin/data.json", nil)
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var data dashboard.Data
	if err := json.NewDecoder(resp.Body).Decode(&data); err != nil {
		t.Fatal(err)
	}
	if len(data.Busiest) != 1 || data.Busiest[0].Username != "alice_art" || !slices.Equal(data.Busiest[0].LinkedBy, []string{"801"}) {
		t.Errorf("the dashboard's accounts: %+v, want 4242 named alice_art, linked by 801", data.Busiest)
	}
}
