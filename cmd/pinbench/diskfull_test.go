package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// fakeDiskFullChild writes a shell script standing in for the disk-full
// child: it prints stdout and stderr, then exits with code.
func fakeDiskFullChild(t *testing.T, dir, stdout, stderr string, code int) string {
	t.Helper()
	exe := filepath.Join(dir, "fake-pinbench")
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s' '%s'\nprintf '%%s' '%s' >&2\nexit %d\n", stdout, stderr, code)
	// The script is written by cp, not by this process: a child forked
	// meanwhile by a parallel test would inherit a descriptor open for
	// writing on it until that child's exec, and running the script then
	// fails with "text file busy" (ETXTBSY, golang/go#22315).
	src := exe + ".txt"
	if err := os.WriteFile(src, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", src, exe).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	if err := os.Chmod(exe, 0o700); err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestDiskFullTmpfsRunReadsTheChildsExit: in the tmpfs mode, only the
// child's exitViolation after a failed step means "a step failed and was
// reported". Any other end of the child (an error of its own, such as the
// store failing to close, or a crash) is a failed step of its own, which
// carries the child's message, and the child's output goes to stderr.
func TestDiskFullTmpfsRunReadsTheChildsExit(t *testing.T) {
	t.Parallel()
	const (
		okSteps = "STEP\tok\tgrants before the disk fills\t8 accounts granted one slot each\n" +
			"STEP\tok\tgrants resume once space is back\t8 of 8 accounts\n"
		failedStep = "STEP\tok\tgrants before the disk fills\t8 accounts granted one slot each\n" +
			"STEP\tFAIL\tReserve refuses while the disk is full\t200 attempts after the disk filled, all granted\n"
	)
	tests := []struct {
		name           string
		stdout, stderr string
		code           int
		passed         bool
		added          string // the What of the step added for the child's failure; "" for none
		want           string // in that step's Detail and on stderr
	}{
		{name: "every step passed", stdout: okSteps, code: exitOK, passed: true},
		{name: "a step failed", stdout: failedStep, stderr: "pinbench: invariant violated\n", code: exitViolation},
		{
			name: "the child failed after every step passed", stdout: okSteps,
			stderr: "pinbench: closing the store: input/output error\n", code: exitFailure,
			added: "the engine process runs the scenario to its end", want: "closing the store: input/output error",
		},
		{
			name: "a step failed, then closing the store failed", stdout: failedStep,
			stderr: "pinbench: closing the store: input/output error\n", code: exitFailure,
			added: "the engine process runs the scenario to its end", want: "closing the store: input/output error",
		},
		{
			name: "the store did not open", stderr: "pinbench: badgerstore: open badger: permission denied\n", code: exitFailure,
			added: "the engine process runs the scenario to its end", want: "open badger: permission denied",
		},
		{
			name: "a violation status without a failed step", stdout: okSteps, stderr: "pinbench: invariant violated\n", code: exitViolation,
			added: "the engine process runs the scenario to its end", want: "invariant violated",
		},
		{
			name: "the child crashed", stdout: okSteps[:strings.Index(okSteps, "\n")+1],
			stderr: "unexpected fault address 0x7f00\nfatal error: fault\n[signal SIGBUS: bus error code=0x2 addr=0x7f00 pc=0x4a0]\n\n" +
				"goroutine 7 [running]:\ngithub.com/dgraph-io/badger/v4.(*logFile).writeEntry(0xc000, 0x1)\n",
			code:  2,
			added: "the engine process survives the full disk", want: "fatal error: fault",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			o := &soakOptions{exe: fakeDiskFullChild(t, dir, tt.stdout, tt.stderr, tt.code), logLevel: "warn"}
			var steps []dfStep
			var stderr strings.Builder
			passed, err := diskFullTmpfsRun(context.Background(), o, dir, func(s dfStep) { steps = append(steps, s) }, &stderr, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			if passed != tt.passed {
				t.Fatalf("passed %v, want %v; steps %+v", passed, tt.passed, steps)
			}
			printed := strings.Count(tt.stdout, "STEP\t")
			if len(steps) < printed {
				t.Fatalf("%d steps emitted, the child printed %d: %+v", len(steps), printed, steps)
			}
			added := steps[printed:]
			if tt.added == "" {
				if len(added) > 0 || stderr.Len() > 0 {
					t.Errorf("steps added %+v and stderr %q, want none: the child's exit says it all", added, stderr.String())
				}
				return
			}
			if len(added) == 0 || added[0].OK || added[0].What != tt.added || !strings.Contains(added[0].Detail, tt.want) {
				t.Fatalf("steps after the child's own %+v; want first a failed %q saying %q", added, tt.added, tt.want)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr lacks the child's output %q:\n%s", tt.want, stderr.String())
			}
			// Then the store the child left is checked in-process.
			checked := false
			for _, s := range added[1:] {
				checked = checked || s.What == "acknowledged grants survive the failure"
			}
			if !checked {
				t.Errorf("the store was not checked after the child's failure: %+v", added)
			}
		})
	}
}

func TestChildError(t *testing.T) {
	tests := []struct{ output, want string }{
		{"", "nothing on its stderr"},
		{"{\"level\":\"warn\"}\npinbench: closing the store: boom\n", "closing the store: boom"},
		{"pinbench: first\nsome log line\npinbench: last\nRun 'pinbench x --help' for usage.\n", "last"},
		{"no prefix here\n", "no prefix here"},
	}
	for i, tt := range tests {
		if got := childError(tt.output); got != tt.want {
			t.Errorf("step %d: childError(%q) = %q want %q", i, tt.output, got, tt.want)
		}
	}
}
