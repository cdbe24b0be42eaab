//go:build !race && unix

// The sandbox opens a real disgo gateway connection, in this process or
// in a child running this test binary, whose close races with its
// heartbeat under -race (upstream): these tests run in `make gateway`.
// The child is started through TestMain, which is built on unix only.

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDisgoGatewaySandboxCommand runs `pinbot` without DISCORD_TOKEN: the
// sandbox, with the console on stdin and stdout and the logs in
// DIR/sandbox.log, twice on one data directory, then lists the accounts
// with their usernames from the sandbox's token store.
func TestDisgoGatewaySandboxCommand(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	env := map[string]string{"PINBOT_PUBLIC_URL": "https://ignored.example"}

	r := pinbot(t, "/pin 1001 1002\n/settings\nquit\n", env, "--data-dir", dir)
	r.wantCode(t, "first sandbox run", exitOK)
	for _, w := range []string{
		"pinbot: starting the local sandbox on " + dir,
		"You are alice in #general.",
		"12-hour pin count: 3/100",
		"▶ @alice_pins (active) — 12-hour pins: 3/100",
		"pinbot: sandbox stopped; its pin counts and links stay in " + dir + ". Bye!\n",
	} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("first run: stdout lacks %q:\n%s", w, r.stdout)
		}
	}
	if strings.Contains(r.stdout, `"level"`) {
		t.Errorf("log lines on the console:\n%s", r.stdout)
	}
	if want := "it ignores PINBOT_PUBLIC_URL"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
	logs, err := os.ReadFile(filepath.Join(dir, sandboxLogName))
	if err != nil || !strings.Contains(string(logs), `"message":"sandbox running"`) {
		t.Errorf("sandbox log (%v) lacks the start:\n%s", err, logs)
	}

	r = pinbot(t, "/settings\n", nil, "--data-dir", dir)
	r.wantCode(t, "second sandbox run", exitOK)
	if w := "▶ @alice_pins (active) — 12-hour pins: 3/100"; !strings.Contains(r.stdout, w) {
		t.Errorf("second run: stdout lacks %q:\n%s", w, r.stdout)
	}

	r = pinbot(t, "", nil, "accounts", "--json", "--data-dir", dir)
	r.wantCode(t, "accounts", exitOK)
	var got []listedAccount
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(got) != 1 || got[0].Account != "7001" || got[0].Username != "alice_pins" || got[0].Used != 3 {
		t.Errorf("accounts = %+v, want 7001 (alice_pins) with 3 pins", got)
	}
}

// TestDisgoGatewaySandboxSignal starts the sandbox as a process, waits
// for its console, and stops it with SIGINT: it exits 0 after closing
// everything, and a new run sees what the first one pinned.
func TestDisgoGatewaySandboxSignal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The context kills a sandbox that stops answering, so that the test
	// fails instead of hanging.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "--data-dir", dir)
	cmd.Env = append(os.Environ(), runMainEnv+"=1", discordTokenEnv+"=")
	stderr := interruptAfter(t, cmd, "/pinmsg 2001\n", syscall.SIGINT, func(line string) bool {
		return strings.Contains(line, "12-hour pin count: 1/100")
	})
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sandbox after SIGINT: %v, want exit status 0\nstderr:\n%s", err, stderr.String())
	}
	logs, err := os.ReadFile(filepath.Join(dir, sandboxLogName))
	if err != nil || !strings.Contains(string(logs), `"message":"sandbox closed"`) {
		t.Errorf("sandbox log (%v) lacks the clean close:\n%s", err, logs)
	}
	r := pinbot(t, "/settings\n", nil, "--data-dir", dir)
	r.wantCode(t, "second run", exitOK)
	if w := "12-hour pins: 1/100"; !strings.Contains(r.stdout, w) {
		t.Errorf("second run: stdout lacks %q:\n%s", w, r.stdout)
	}
}
