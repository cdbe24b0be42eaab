//go:build unix

package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// runMainEnv, set in the environment of a test binary, makes it run
// main instead of the tests, so that a test can signal a real process.
const runMainEnv = "PINBOT_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestSignalStopsDemo sends SIGINT and SIGTERM to a demo process waiting
// for input and checks that it exits 0 after saving what it did.
func TestSignalStopsDemo(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "demo", "--data-dir", dir)
			cmd.Env = append(os.Environ(), runMainEnv+"=1", discordTokenEnv+"=", "PINBOT_LOG_LEVEL=info")
			stderr := interruptAfter(t, cmd, "pin erin 2\n", sig, func(line string) bool {
				// The reply to the pin shows the demo is up and serving,
				// signal handler included.
				return line == "12-hour pin count: 2/100"
			})
			if err := cmd.Wait(); err != nil {
				t.Fatalf("demo after %v: %v, want exit status 0\nstderr:\n%s", sig, err, stderr.String())
			}
			if !strings.Contains(stderr.String(), "engine and store closed") {
				t.Errorf("stderr lacks the shutdown log:\n%s", stderr.String())
			}
			runDemoSteps(t, dir, []demoStep{{stdin: "status erin\n", want: []string{"erin — 12-hour pins: 2/100"}}})
		})
	}
}

// interruptAfter starts cmd (a pinbot child), writes input to it, reads
// its stdout until ready holds for a line, then sends it sig and reads its
// stdout to the end. The caller waits for cmd. It returns cmd's stderr.
func interruptAfter(t *testing.T, cmd *exec.Cmd, input string, sig syscall.Signal, ready func(line string) bool) *strings.Builder {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close() })
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := new(strings.Builder)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, input); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	seen := false
	for !seen && sc.Scan() {
		seen = ready(sc.Text())
	}
	if !seen {
		err := cmd.Wait()
		t.Fatalf("%s ended (%v) before it was ready\nstderr:\n%s", cmd.Args, err, stderr.String())
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, stdout); err != nil {
		t.Fatal(err)
	}
	return stderr
}
