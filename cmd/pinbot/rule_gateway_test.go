//go:build !race && unix

// See sandbox_gateway_test.go for why these run in `make gateway`.

package main

import (
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
