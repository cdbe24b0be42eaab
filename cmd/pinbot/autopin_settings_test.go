package main

import (
	"strings"
	"testing"
)

// TestAutopinSettings: auto-pin channels are on by default;
// PINBOT_AUTOPIN turns them off with off, false or 0 (on again with on,
// true or 1), the flag wins, and anything else is refused naming the
// setting.
func TestAutopinSettings(t *testing.T) {
	t.Parallel()
	full := botEnv(t, t.TempDir())
	st := newSettings(func(k string) string { return full[k] })
	b, err := st.validateBot()
	if err != nil || b.noAutopin {
		t.Fatalf("defaults: no auto-pin %v, %v; want auto-pin on", b.noAutopin, err)
	}
	for i, c := range []struct {
		env  string
		args []string
		off  bool
		bad  bool
	}{
		{env: "off", off: true},
		{env: "FALSE", off: true},
		{env: "0", off: true},
		{env: "on"},
		{env: "1"},
		{env: "off", args: []string{"--autopin", "on"}},
		{env: "sometimes", bad: true},
	} {
		env := with(full, map[string]string{"PINBOT_AUTOPIN": c.env})
		st := newSettings(func(k string) string { return env[k] })
		fs := newFlagSet("")
		st.bind(fs, "")
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		st.noteFlags(fs)
		b, err := st.validateBot()
		if c.bad {
			if err == nil || !strings.Contains(err.Error(), "PINBOT_AUTOPIN") {
				t.Errorf("step %d: %v, want an error naming PINBOT_AUTOPIN", i, err)
			}
			continue
		}
		if err != nil || b.noAutopin != c.off {
			t.Errorf("step %d: no auto-pin %v, %v; want %v", i, b.noAutopin, err, c.off)
		}
	}
}
