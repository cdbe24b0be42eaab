package web_test

import (
	"net/http"
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
		{"no store", web.Config{Pinterest: e.pin}, "Config.Links"},
		{"no client", web.Config{Links: e.store}, "Config.Pinterest"},
		{"negative timeout", web.Config{Links: e.store, Pinterest: e.pin, CallbackTimeout: -time.Second}, "Config.CallbackTimeout"},
	}
	for _, tt := range tests {
		if _, err := web.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: New = %v, want an error naming %s", tt.name, err, tt.msg)
		}
	}
}

func TestServerSettings(t *testing.T) {
	e := newEnv(t, nil)
	h, err := web.New(web.Config{Links: e.store, Pinterest: e.pin, CallbackTimeout: time.Minute})
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
