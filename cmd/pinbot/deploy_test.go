package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// deployFiles are the deployment guide and the files it ships, relative
// to this package.
var deployFiles = []string{
	"../../docs/deploy.md",
	"../../docs/deploy/pinbot.service",
	"../../docs/deploy/Containerfile",
}

// settingName matches what looks like the name of one of pinbot's
// environment variables.
var settingName = regexp.MustCompile(`\b(PINBOT_[A-Z0-9_]+|PINTEREST_[A-Z0-9_]+|DISCORD_[A-Z0-9_]+)\b`)

// TestDeployNamesRealSettings keeps the deployment guide, the systemd
// unit and the Containerfile in step with the settings: every variable
// they name is one pinbot reads.
func TestDeployNamesRealSettings(t *testing.T) {
	t.Parallel()
	// PINBOT_CONTAINER_TEST runs the container test (make container-test).
	known := map[string]bool{"PINBOT_CONTAINER_TEST": true}
	for _, o := range allOptions {
		known[o.env] = true
	}
	for _, f := range deployFiles {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, name := range settingName.FindAllString(string(text), -1) {
			if !known[name] && !seen[name] {
				t.Errorf("%s names %s, which is no setting of pinbot", f, name)
			}
			seen[name] = true
		}
	}
}

// TestSystemdUnitVerifies runs systemd-analyze verify on the unit, its
// ExecStart pointed at an executable that exists here; any complaint
// (an unknown directive, a value systemd cannot parse) fails the test.
func TestSystemdUnitVerifies(t *testing.T) {
	t.Parallel()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (apt-get install systemd): the unit is not verified")
	}
	unit, err := os.ReadFile("../../docs/deploy/pinbot.service")
	if err != nil {
		t.Fatal(err)
	}
	const execStart = "ExecStart=/usr/local/bin/pinbot\n"
	if !strings.Contains(string(unit), execStart) {
		t.Fatalf("the unit lacks %q", execStart)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	local := strings.Replace(string(unit), execStart, "ExecStart="+self+"\n", 1)
	path := filepath.Join(t.TempDir(), "pinbot.service")
	if err := os.WriteFile(path, []byte(local), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
