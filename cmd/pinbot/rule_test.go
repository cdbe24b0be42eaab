package main

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/badgerstore"
)

// TestPinRuleSettings: --pin-limit and --pin-window, or their variables,
// set the engine's limit and window; the flag wins; a bad value is named
// with what is wanted.
func TestPinRuleSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env    map[string]string
		args   []string
		limit  int
		window time.Duration
		errs   []string
	}{
		{limit: 100, window: 12 * time.Hour},
		{env: map[string]string{"PINBOT_PIN_LIMIT": "50", "PINBOT_PIN_WINDOW": "1h"}, limit: 50, window: time.Hour},
		{env: map[string]string{"PINBOT_PIN_LIMIT": "50"}, args: []string{"--pin-limit", "20", "--pin-window", "90m"}, limit: 20, window: 90 * time.Minute},
		{args: []string{"--pin-limit", "1", "--pin-window", "1s"}, limit: 1, window: time.Second},
		{args: []string{"--pin-limit", "65536", "--pin-window", actors.MaxWindow.String()}, limit: 65536, window: actors.MaxWindow},
		{args: []string{"--pin-limit", "0"}, errs: []string{`invalid --pin-limit "0": want a whole number of pins from 1 to 65536`}},
		{env: map[string]string{"PINBOT_PIN_LIMIT": "65537"}, errs: []string{`invalid PINBOT_PIN_LIMIT "65537": want a whole number of pins from 1 to 65536`}},
		{env: map[string]string{"PINBOT_PIN_LIMIT": "ten", "PINBOT_PIN_WINDOW": "forever"}, errs: []string{
			`invalid PINBOT_PIN_LIMIT "ten"`,
			`invalid PINBOT_PIN_WINDOW "forever": want a duration from 1s to 596h31m23.648s, such as 12h or 90m`}},
		{args: []string{"--pin-window", "999ms"}, errs: []string{`invalid --pin-window "999ms": want a duration from 1s`}},
		{args: []string{"--pin-window", "597h"}, errs: []string{`invalid --pin-window "597h"`}},
		{args: []string{"--pin-window", "-12h"}, errs: []string{`invalid --pin-window "-12h"`}},
		{args: []string{"--pin-window", "1.0005s"}, errs: []string{`invalid --pin-window "1.0005s": want a whole number of milliseconds`}},
	}
	for i, tt := range tests {
		cfg, errs := engineSettings(t, tt.env, tt.args)
		if len(errs) != len(tt.errs) {
			t.Errorf("step %d: errors %v, want %d", i, errs, len(tt.errs))
			continue
		}
		for j, e := range errs {
			if !strings.Contains(e.Error(), tt.errs[j]) {
				t.Errorf("step %d: error %q, want it to contain %q", i, e, tt.errs[j])
			}
		}
		if len(tt.errs) == 0 && (cfg.Limit != tt.limit || cfg.Window != tt.window || cfg.Validate() != nil) {
			t.Errorf("step %d: engine config %d/%v (%v), want %d/%v", i, cfg.Limit, cfg.Window, cfg.Validate(), tt.limit, tt.window)
		}
	}
}

// TestPinRuleErrorsAllAtOnce: the sandbox, the demo and the bot report a
// bad limit or window with every other problem, with status 2, before
// opening anything.
func TestPinRuleErrorsAllAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const (
		level  = `invalid --log-level "chatty": want one of trace, debug, info, warn, error, disabled`
		limit  = `invalid --pin-limit "0": want a whole number of pins from 1 to 65536`
		window = `invalid PINBOT_PIN_WINDOW "1ms": want a duration from 1s to 596h31m23.648s, such as 12h or 90m`
	)
	env := map[string]string{"PINBOT_DATA_DIR": filepath.Join(dir, "data"), "PINBOT_PIN_WINDOW": "1ms"}
	for _, tt := range []struct {
		what string
		env  map[string]string
		args []string
		want []string
	}{
		{"sandbox", env, []string{"--log-level", "chatty", "--pin-limit", "0"}, []string{level, limit, window}},
		{"demo", env, []string{"demo", "--log-level", "chatty", "--pin-limit", "0"}, []string{level, limit, window}},
		{"bot", with(botEnv(t, dir), env), []string{"--pin-limit", "0", "--shards", "-1"},
			[]string{limit, window, `invalid --shards "-1"`}},
	} {
		r := pinbot(t, "", tt.env, tt.args...)
		r.wantCode(t, tt.what, exitUsage)
		want := fmt.Sprintf("pinbot: %d problems with the configuration:\n  - ", len(tt.want))
		if !strings.HasPrefix(r.stderr, want) {
			t.Errorf("%s: stderr = %q, want it to start with %q", tt.what, r.stderr, want)
		}
		for _, w := range tt.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr = %q, want it to contain %q", tt.what, r.stderr, w)
			}
		}
		r.checkNoSecrets(t, tt.what)
	}
}

// TestPinRuleAcrossRuns: the demo runs under the limit and window given,
// and stores them; the accounts listing runs under the stored ones and
// changes nothing; a run under other settings keeps the pins made before
// from freeing slots early.
func TestPinRuleAcrossRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := pinbot(t, "pin alice 7\n", nil, "demo", "--data-dir", dir, "--pin-limit", "5", "--pin-window", "90m")
	r.wantCode(t, "demo under 5 per 90m", exitOK)
	checkReplies(t, "demo under 5 per 90m", r.stdout, []string{
		"90-minute pin count: 1/5", "90-minute pin count: 2/5", "90-minute pin count: 3/5",
		"90-minute pin count: 4/5", "90-minute pin count: 5/5",
		"Pin limit reached (5/1h30m). Skipped remaining pins.",
		"Next slot frees in 1h 30m*",
	})
	if !strings.Contains(r.stdout, "5 pins per account in any rolling 90 minutes") {
		t.Errorf("the demo's banner does not name the rule:\n%s", r.stdout)
	}

	want := persistence.Rules{Current: persistence.Rule{Limit: 5, Window: (90 * time.Minute).Milliseconds()},
		Lease: actors.DefaultConfig().Lease.Milliseconds()}
	r = pinbot(t, "", nil, "accounts", "--data-dir", dir)
	r.wantCode(t, "accounts", exitOK)
	for _, w := range []string{"90-MINUTE PINS", "alice     5/5"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("accounts lists\n%s\nwant it to contain %q", r.stdout, w)
		}
	}
	checkStoredRules(t, dir, want)

	// Back to the defaults: the 5 pins of the last run keep its rule full
	// for its 90 minutes, though 100 per 12 hours would allow more.
	r = pinbot(t, "pin alice 1\nstatus alice\n", nil, "demo", "--data-dir", dir)
	r.wantCode(t, "demo under the defaults", exitOK)
	checkReplies(t, "demo under the defaults", r.stdout, []string{
		"alice is at its limit (100/12h), and the limit in force before the last change still counts the pins made under it: no pins made. Next slot frees in 1h*",
		"alice — 12-hour pins: 5/100, and the limit in force before the last change still counts the pins made under it; next slot frees in 1h*",
	})
}

// checkStoredRules checks the rules stored in dir's engine store.
func checkStoredRules(t *testing.T, dir string, want persistence.Rules) {
	t.Helper()
	s, err := badgerstore.Open(layout{dir: dir}.engine(), badgerstore.Options{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Rules(t.Context()); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("stored rules %+v, %v; want %+v", got, err, want)
	}
}

// TestParkAfterSetting: --park-after, or PINBOT_PARK_AFTER, sets how long
// an account stays idle before it parks; off never parks; a value out of
// range is named with what is wanted.
func TestParkAfterSetting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  map[string]string
		args []string
		want time.Duration
		err  string
	}{
		{want: time.Minute},
		{env: map[string]string{"PINBOT_PARK_AFTER": "5s"}, want: 5 * time.Second},
		{env: map[string]string{"PINBOT_PARK_AFTER": "5s"}, args: []string{"--park-after", "off"}, want: 0},
		{args: []string{"--park-after", "5m"}, want: 5 * time.Minute},
		{args: []string{"--park-after", "500ms"}, err: `invalid --park-after "500ms": want a duration from 1s to 5m0s`},
		{env: map[string]string{"PINBOT_PARK_AFTER": "never"}, err: `invalid PINBOT_PARK_AFTER "never"`},
		{args: []string{"--park-after", "1.0005s"}, err: `invalid --park-after "1.0005s": want a duration from 1s to 5m0s in whole milliseconds`},
	}
	for i, tt := range tests {
		cfg, errs := engineSettings(t, tt.env, tt.args)
		switch {
		case tt.err != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.err)):
			t.Errorf("step %d: errors %v, want one containing %q", i, errs, tt.err)
		case tt.err == "" && (len(errs) != 0 || cfg.ParkAfter != tt.want || cfg.Validate() != nil):
			t.Errorf("step %d: ParkAfter %v (errors %v, %v), want %v", i, cfg.ParkAfter, errs, cfg.Validate(), tt.want)
		}
	}
}

// engineSettings is the engine's configuration as pinbot reads it from
// env and args, and the problems found.
func engineSettings(t *testing.T, env map[string]string, args []string) (actors.Config, configErrors) {
	t.Helper()
	st := newSettings(func(k string) string { return env[k] })
	fs := mainFlags(&st)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	st.noteFlags(fs)
	var errs configErrors
	cfg := st.checkEngine(&errs)
	st.checkParkAfter(&errs, &cfg)
	return cfg, errs
}
