package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRestoreHoldsByTheBackupWindow: restore holds every account for the
// window the backup's pinbot ran under plus a lease, not the default
// window's 12 hours, when no window is given, and says so; a window
// given (PINBOT_PIN_WINDOW or --pin-window) holds longer when it is
// longer, and never shorter than the backup's own rule needs.
func TestRestoreHoldsByTheBackupWindow(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	pinbot(t, "pin alice 2\n", map[string]string{"PINBOT_PIN_LIMIT": "2", "PINBOT_PIN_WINDOW": "30m"},
		"demo", "--data-dir", src).wantCode(t, "demo", exitOK)
	file := filepath.Join(t.TempDir(), "pinbot.backup")
	pinbot(t, "", nil, "backup", "--data-dir", src, file).wantCode(t, "backup", exitOK)

	for _, tt := range []struct {
		name    string
		env     map[string]string
		args    []string
		want    []string
		notWant string
	}{
		{name: "no window given", want: []string{
			"(in 35m): the backup does not hold the pins made after it",
			"pinbot: the hold assumes pinbot runs on under the backup's window, 30m: " +
				"to run it under a longer one, restore again with that window in PINBOT_PIN_WINDOW (or --pin-window)\n",
		}},
		{name: "a longer window", env: map[string]string{"PINBOT_PIN_WINDOW": "2h"},
			want: []string{"(in 2h 5m): the backup does not hold"}, notWant: "assumes"},
		{name: "a shorter window", args: []string{"--pin-window", "10m"},
			want: []string{"(in 35m): the backup does not hold"}, notWant: "assumes"},
	} {
		dst := filepath.Join(t.TempDir(), "restored")
		r := pinbot(t, "", tt.env, append([]string{"restore", "--data-dir", dst}, append(tt.args, file)...)...)
		r.wantCode(t, tt.name, exitOK)
		for _, w := range tt.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%s: restore did not say %q:\n%s", tt.name, w, r.stdout)
			}
		}
		if tt.notWant != "" && strings.Contains(r.stdout, tt.notWant) {
			t.Errorf("%s: restore said %q:\n%s", tt.name, tt.notWant, r.stdout)
		}
	}
}
