//go:build !race && unix

// See sandbox_gateway_test.go for why these run in `make gateway`.

package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestDisgoGatewaySandboxPinRule runs the sandbox under 2 pins per 90
// minutes: the bot's replies and /settings name that rule.
func TestDisgoGatewaySandboxPinRule(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	env := map[string]string{"PINBOT_PIN_LIMIT": "2", "PINBOT_PIN_WINDOW": "90m"}
	r := pinbot(t, "/pin 1001 1002\n/settings\nquit\n", env, "--data-dir", dir)
	r.wantCode(t, "sandbox under 2 per 90m", exitOK)
	for _, w := range []string{
		"90-minute pin count: 1/2",
		"90-minute pin count: 2/2",
		"Pin limit reached (2/1h30m). Skipped remaining pins.",
		"▶ @alice_pins (active) — 90-minute pins: 2/2",
	} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
		}
	}
	if strings.Contains(r.stderr, "ignores") {
		t.Errorf("the sandbox says it ignores a setting it uses: %s", r.stderr)
	}
}

// TestDisgoGatewaySandboxHTTPAddr: the sandbox serves its HTTP listener
// (the OAuth callback, /metrics, /readyz, the dashboard) on
// PINBOT_HTTP_ADDR, run after run, as its banner says; without it, on a
// free loopback port.
func TestDisgoGatewaySandboxHTTPAddr(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // free again, for the sandbox
	dir := filepath.Join(t.TempDir(), "data")
	env := map[string]string{"PINBOT_HTTP_ADDR": addr}
	for run := range 2 {
		r := pinbot(t, "quit\n", env, "--data-dir", dir)
		r.wantCode(t, "sandbox on PINBOT_HTTP_ADDR", exitOK)
		for _, w := range []string{
			"OAuth callback: http://" + addr + "/oauth/callback\n",
			"Operator: http://" + addr + "/metrics, http://" + addr + "/readyz, dashboard http://" + addr + "/admin/login",
		} {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("run %d: stdout lacks %q:\n%s", run+1, w, r.stdout)
			}
		}
		if strings.Contains(r.stderr, "ignores") {
			t.Errorf("run %d: the sandbox says it ignores a setting it uses: %s", run+1, r.stderr)
		}
	}
	r := pinbot(t, "quit\n", nil, "--data-dir", dir)
	r.wantCode(t, "sandbox without PINBOT_HTTP_ADDR", exitOK)
	if !strings.Contains(r.stdout, "OAuth callback: http://127.0.0.1:") || strings.Contains(r.stdout, addr) {
		t.Errorf("without PINBOT_HTTP_ADDR: want a free loopback port, not %s:\n%s", addr, r.stdout)
	}
}
