package web_test

import (
	"net/http"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/web"
)

func TestRoutes(t *testing.T) {
	e := newEnv(t, nil)
	tests := []struct {
		method, path string
		code         int
		body         string
		allow        string
	}{
		{http.MethodGet, web.HealthPath, http.StatusOK, "ok\n", ""},
		{http.MethodPost, web.HealthPath, http.StatusMethodNotAllowed, "only answers GET", "GET"},
		{http.MethodHead, web.HealthPath, http.StatusMethodNotAllowed, "", "GET"},
		{http.MethodPost, web.CallbackPath + "?code=x&state=y", http.StatusMethodNotAllowed, "only answers GET", "GET"},
		{http.MethodPut, web.CallbackPath, http.StatusMethodNotAllowed, "only answers GET", "GET"},
		{http.MethodPost, web.DiscordCallbackPath, http.StatusMethodNotAllowed, "only answers GET", "GET"},
		{http.MethodPut, web.ConfirmPath, http.StatusMethodNotAllowed, "only answers GET and POST", "GET, POST"},
		{http.MethodGet, web.ConfirmPath, http.StatusBadRequest, "This link request expired or the bot restarted", ""},
		{http.MethodPost, web.ConfirmPath, http.StatusBadRequest, "did not come from the confirmation page", ""},
		{http.MethodGet, web.DiscordCallbackPath + "?code=x&state=y", http.StatusBadRequest, "sign-in is not valid", ""},
		{http.MethodGet, "/", http.StatusNotFound, "nothing here", ""},
		{http.MethodGet, "/oauth/callback/extra", http.StatusNotFound, "nothing here", ""},
	}
	for _, tt := range tests {
		status, body, hdr := e.do(t, tt.method, e.ts.URL+tt.path)
		if status != tt.code || !strings.Contains(body, tt.body) || hdr.Get("Allow") != tt.allow {
			t.Errorf("%s %s: %d %q Allow %q; want %d with %q, Allow %q",
				tt.method, tt.path, status, body, hdr.Get("Allow"), tt.code, tt.body, tt.allow)
		}
	}
	if n := e.tokenRequests(); n != 0 {
		t.Errorf("%d token requests; want none", n)
	}

	// The health check is liveness: a closed store makes the program not
	// ready (internal/app's /readyz), not dead.
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	if status, body, _ := e.get(t, e.ts.URL+web.HealthPath); status != http.StatusOK || body != "ok\n" {
		t.Errorf("healthz with a closed store: %d %q; want 200 ok", status, body)
	}
}

func TestNewValidates(t *testing.T) {
	e := newEnv(t, nil)
	tests := []struct {
		name string
		cfg  web.Config
		msg  string
	}{
		{"no store", web.Config{Pinterest: e.pin, Discord: e.discord}, "Config.Links"},
		{"no client", web.Config{Links: e.store, Discord: e.discord}, "Config.Pinterest"},
		{"no discord", web.Config{Links: e.store, Pinterest: e.pin}, "Config.Discord"},
		{"negative timeout", web.Config{Links: e.store, Pinterest: e.pin, Discord: e.discord, CallbackTimeout: -time.Second}, "Config.CallbackTimeout"},
		{"negative confirm TTL", web.Config{Links: e.store, Pinterest: e.pin, Discord: e.discord, ConfirmTTL: -time.Second}, "Config.ConfirmTTL"},
		{"public URL", web.Config{Links: e.store, Pinterest: e.pin, Discord: e.discord, PublicURL: "pinbot.example"}, "Config.PublicURL"},
	}
	for _, tt := range tests {
		if _, err := web.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: New = %v, want an error naming %s", tt.name, err, tt.msg)
		}
	}
}

func TestServerSettings(t *testing.T) {
	e := newEnv(t, nil)
	h, err := web.New(web.Config{Links: e.store, Pinterest: e.pin, Discord: e.discord, CallbackTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	srv := h.Server("127.0.0.1:0")
	if srv.Addr != "127.0.0.1:0" || srv.Handler != h {
		t.Errorf("Server: Addr %q, Handler %v", srv.Addr, srv.Handler)
	}
	if srv.ReadHeaderTimeout != web.ReadHeaderTimeout || srv.ReadTimeout != web.ReadTimeout ||
		srv.IdleTimeout != web.IdleTimeout || srv.MaxHeaderBytes != web.MaxHeaderBytes {
		t.Errorf("Server timeouts = %v %v %v %d", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
	if want := time.Minute + web.WriteMargin; srv.WriteTimeout != want {
		t.Errorf("WriteTimeout = %v, want %v (the callback timeout plus a margin)", srv.WriteTimeout, want)
	}
}

// TestFlowSharesADirectory: the pages of the flow link to each other by
// relative addresses ("confirm?link=…"), which hold only while they
// share a directory.
func TestFlowSharesADirectory(t *testing.T) {
	dir := path.Dir(web.ConfirmPath)
	if path.Dir(web.CallbackPath) != dir || path.Dir(web.DiscordCallbackPath) != dir || path.Base(web.ConfirmPath) != "confirm" {
		t.Errorf("%s, %s and %s are not in one directory, or the confirmation page is not named confirm",
			web.CallbackPath, web.ConfirmPath, web.DiscordCallbackPath)
	}
}
