package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeDataDir checks the data directory `make run` and `make demo`
// give pinbot (with make -n, which runs nothing): DATA on make's command
// line wins, else PINBOT_DATA_DIR from the environment, else ./data; the
// demo runs in DIR/demo of that one unless DEMO_DATA says otherwise.
func TestMakeDataDir(t *testing.T) {
	t.Parallel()
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// The environment without the variables under test, nor those a make
	// running this test passes its children (its command-line variables
	// travel in MAKEFLAGS).
	var base []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "PINBOT_DATA_DIR", "DATA", "DEMO_DATA", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "GNUMAKEFLAGS":
			continue
		}
		base = append(base, kv)
	}
	for _, tt := range []struct {
		name      string
		env, args []string
		run, demo string
	}{
		{name: "defaults", run: "./data", demo: "./data/demo"},
		{name: "environment", env: []string{"PINBOT_DATA_DIR=/tmp/pinbot-env"}, run: "/tmp/pinbot-env", demo: "/tmp/pinbot-env/demo"},
		{name: "DATA", args: []string{"DATA=/tmp/pinbot-arg"}, run: "/tmp/pinbot-arg", demo: "/tmp/pinbot-arg/demo"},
		{name: "DATA over the environment", env: []string{"PINBOT_DATA_DIR=/tmp/pinbot-env"}, args: []string{"DATA=/tmp/pinbot-arg"},
			run: "/tmp/pinbot-arg", demo: "/tmp/pinbot-arg/demo"},
		{name: "DEMO_DATA", env: []string{"PINBOT_DATA_DIR=/tmp/pinbot-env"}, args: []string{"DEMO_DATA=/tmp/pinbot-demo"},
			run: "/tmp/pinbot-env", demo: "/tmp/pinbot-demo"},
	} {
		cmd := exec.Command(mk, append([]string{"-s", "-n", "-C", root, "run", "demo"}, tt.args...)...)
		cmd.Env = append(append([]string(nil), base...), tt.env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: make -n run demo: %v\n%s", tt.name, err, out)
		}
		for _, want := range []string{
			"bin/pinbot --data-dir " + tt.run + " ||",
			"bin/pinbot --data-dir " + tt.demo + " demo ||",
		} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%s: make -n run demo printed:\n%s\nwant a line with %q", tt.name, out, want)
			}
		}
	}
}
