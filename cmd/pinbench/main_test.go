package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestMain lets the soak re-execute this test binary as its engine
// process, as it re-executes pinbench: `<test binary> soak-child ...`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == soakChildCommand || os.Args[1] == diskFullChildCommand) {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(runTests(m))
}

// runTests runs the tests with a temporary directory of their own
// ($TMPDIR, which the soak's children inherit), and fails them when they
// pass but leave something in it: pinbench's own temporary directories
// must not pile up in the system's.
func runTests(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "pinbench-test-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "pinbench tests: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if err := os.Setenv("TMPDIR", tmp); err != nil {
		fmt.Fprintf(os.Stderr, "pinbench tests: %v\n", err)
		return 1
	}
	code := m.Run()
	left, err := os.ReadDir(tmp)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pinbench tests: %v\n", err)
		return 1
	}
	if code == 0 && len(left) > 0 {
		names := make([]string, len(left))
		for i, e := range left {
			names[i] = e.Name()
		}
		fmt.Fprintf(os.Stderr, "FAIL: the tests left in the temporary directory: %s\n", strings.Join(names, ", "))
		return 1
	}
	return code
}

// result is what one run of pinbench produced.
type result struct {
	code           int
	stdout, stderr string
}

// pinbench runs the program in-process.
func pinbench(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// want fails the test when r did not exit with code.
func (r result) want(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

// decode parses r's stdout as JSON into v.
func (r result) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string // in stderr
	}{
		{nil, "no command given"},
		{[]string{"bench"}, `unknown command "bench"`},
		{[]string{"help", "nope"}, `unknown command "nope"`},
		{[]string{"run", "-c", "0"}, "-c/--callers 0 out of range [1, 1024]"},
		{[]string{"run", "--callers", "1025"}, "-c/--callers 1025 out of range [1, 1024]"},
		{[]string{"run", "-c", "1,x"}, `-c/--callers "1,x": want a number`},
		{[]string{"run", "-n", "999"}, "-n/--accounts 999 out of range [1000, 1000000]"},
		{[]string{"run", "--accounts", "1000001"}, "-n/--accounts 1000001 out of range [1000, 1000000]"},
		{[]string{"run", "--dist", "pareto"}, `--dist "pareto": want uniform or zipf`},
		{[]string{"run", "--dist", "zipf", "--zipf-s", "1"}, "--zipf-s 1: must be greater than 1"},
		{[]string{"run", "--dist", "zipf", "--zipf-v", "0.5"}, "--zipf-v 0.5: must be at least 1"},
		{[]string{"run", "--duration", "0s"}, "--duration 0s: must be positive"},
		{[]string{"run", "--ops", "-5"}, "--ops -5: must not be negative"},
		{[]string{"run", "--rate", "fast"}, `--rate "fast": want a positive number`},
		{[]string{"run", "--rate", "-10"}, `--rate "-10"`},
		{[]string{"run", "--limit", "0"}, "--limit 0 out of range"},
		{[]string{"run", "--window", "0s"}, "--window 0s: must be at least 1ms"},
		{[]string{"run", "--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"run", "--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"run", "extra"}, `unexpected argument "extra"`},
		{[]string{"compare", "-c", "1,16"}, "compare takes one number of callers"},
		{[]string{"compare", "-c", "2048"}, "-c/--callers 2048 out of range"},
		{[]string{"compare", "--only", "memcached"}, `--only: unknown system "memcached"`},
		{[]string{"compare", "--only", "redis-always", "--skip-redis"}, "no system left to measure"},
		{[]string{"compare", "--redis-pipeline", "maybe"}, `--redis-pipeline "maybe": want auto or off`},
		{[]string{"soak", "--cycles", "0"}, "--cycles 0 out of range"},
		{[]string{"soak", "-c", "0"}, "-c/--callers 0 out of range"},
		{[]string{"soak", "--accounts", "0"}, "-n/--accounts 0 out of range"},
		{[]string{"soak", "--window", "0s"}, "--window 0s"},
		{[]string{"soak", "--kill-min", "2s", "--kill-max", "1s"}, "--kill-max 1s: must be positive and at least --kill-min"},
		{[]string{"soak", "--seed", "abc"}, `--seed "abc"`},
		{[]string{"soak", "--disk-full", "--disk-full-mode", "nfs"}, `--disk-full-mode "nfs"`},
	}
	for i, tt := range tests {
		r := pinbench(t, tt.args...)
		if r.code != exitUsage {
			t.Errorf("step %d: %q: exit status %d, want %d\nstderr:\n%s", i, tt.args, r.code, exitUsage, r.stderr)
			continue
		}
		if !strings.Contains(r.stderr, tt.want) {
			t.Errorf("step %d: %q: stderr lacks %q:\n%s", i, tt.args, tt.want, r.stderr)
		}
		if !strings.Contains(r.stderr, "--help' for usage") {
			t.Errorf("step %d: %q: stderr does not point to --help:\n%s", i, tt.args, r.stderr)
		}
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"help"}, []string{"pinbench run", "pinbench compare", "pinbench soak"}},
		{[]string{"--help"}, []string{"pinbench run", "pinbench compare", "pinbench soak"}},
		{[]string{"run", "--help"}, []string{"--accounts", "--callers", "--dist", "--rate", "--restart", "--plot", "--json", "--durable", "--reserve-only"}},
		{[]string{"help", "compare"}, []string{"--skip-redis", "make bench-deps", "--redis-pipeline", "--only", "--rate", "0.5xredis-always"}},
		{[]string{"soak", "-h"}, []string{"--cycles", "--kill-max", "--disk-full", "--window", "--limit"}},
	}
	for i, tt := range tests {
		r := pinbench(t, tt.args...)
		r.want(t, exitOK)
		for _, w := range tt.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("step %d: %q: help lacks %q", i, tt.args, w)
			}
		}
		if strings.Contains(r.stdout, soakChildCommand) {
			t.Errorf("step %d: %q: the help shows the hidden %s command", i, tt.args, soakChildCommand)
		}
	}
}
