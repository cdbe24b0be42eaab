package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// result is what one run of pinbot produced.
type result struct {
	code           int
	stdout, stderr string
}

// pinbot runs the program in-process with stdin and an environment made of
// env alone, so that the caller's own environment (a DISCORD_TOKEN, say)
// cannot leak in.
func pinbot(t *testing.T, stdin string, env map[string]string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	getenv := func(k string) string { return env[k] }
	code := run(args, strings.NewReader(stdin), &stdout, &stderr, getenv)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// wantCode fails the test when r did not exit with code.
func (r result) wantCode(t *testing.T, what string, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("%s: exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", what, r.code, code, r.stdout, r.stderr)
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		cmd  string // the command whose help it is
	}{
		{args: []string{"--help"}},
		{args: []string{"-h"}},
		{args: []string{"-help"}},
		{args: []string{"help"}},
		{args: []string{"--data-dir", "elsewhere", "--help"}},
		{args: []string{"accounts", "--help"}, cmd: "accounts"},
		{args: []string{"accounts", "--json", "-h"}, cmd: "accounts"},
		{args: []string{"--data-dir", "x", "accounts", "-h"}, cmd: "accounts"},
		{args: []string{"help", "accounts"}, cmd: "accounts"},
		{args: []string{"jobs", "--help"}, cmd: "jobs"},
		{args: []string{"help", "jobs"}, cmd: "jobs"},
		{args: []string{"demo", "--help"}, cmd: "demo"},
		{args: []string{"help", "demo"}, cmd: "demo"},
		{args: []string{"backup", "--help"}, cmd: "backup"},
		{args: []string{"help", "backup"}, cmd: "backup"},
		{args: []string{"restore", "-h"}, cmd: "restore"},
		{args: []string{"help", "restore"}, cmd: "restore"},
		{args: []string{"reconcile", "--help"}, cmd: "reconcile"},
		{args: []string{"help", "reconcile"}, cmd: "reconcile"},
	}
	// DISCORD_TOKEN does not get in the way of help.
	env := map[string]string{discordTokenEnv: "token"}
	for i, tt := range tests {
		r := pinbot(t, "", env, tt.args...)
		r.wantCode(t, strings.Join(tt.args, " "), exitOK)
		if r.stderr != "" {
			t.Errorf("step %d: %q: stderr = %q, want nothing", i, tt.args, r.stderr)
		}
		want := []string{"Usage:", "--data-dir DIR", "PINBOT_DATA_DIR", "--log-level LEVEL", "PINBOT_LOG_LEVEL", "--help"}
		switch tt.cmd {
		case "accounts":
			want = append(want, "pinbot accounts [flags]", "--json", "--encryption-key-file FILE")
		case "jobs":
			want = append(want, "pinbot jobs [flags] ACCOUNT", "--json", "--encryption-key-file FILE", "DIR/pinbot.sock")
		case "demo":
			want = append(want, "pinbot demo [flags]", "pin ACCOUNT N", "status ACCOUNT")
		case "backup":
			want = append(want, "pinbot backup [flags] FILE", "--force", "--encryption-key-file FILE", "DIR/pinbot.sock")
		case "restore":
			want = append(want, "pinbot restore [flags] FILE", "--force", "--encryption-key-file FILE", "--pin-window DURATION",
				"DIR.before-restore-TIME", "never deleted")
		case "reconcile":
			want = append(want, "pinbot reconcile [flags]", "--pin-window DURATION", "--pin-limit N", "lost without a backup")
		default:
			want = append(want, "pinbot [flags] accounts [flags]", "pinbot [flags] jobs [flags] ACCOUNT", "pinbot [flags] demo [flags]", discordTokenEnv,
				"pinbot [flags] backup [flags] FILE", "pinbot [flags] restore [flags] FILE", "pinbot [flags] reconcile [flags]",
				"/pin 1001 1002", "/settings", "/switch ACCOUNT", "DIR/engine", "DIR/links",
				"head -c 32 /dev/urandom > pinbot.key", "PINBOT_PUBLIC_URL/oauth/callback", "Exit status:")
		}
		for _, w := range want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("step %d: %q: help lacks %q:\n%s", i, tt.args, w, r.stdout)
			}
		}
	}
}

// TestHelpListsEveryFlag keeps the hand-formatted help in step with the
// flags actually defined, and every variable read with its flag.
func TestHelpListsEveryFlag(t *testing.T) {
	t.Parallel()
	st := newSettings(func(string) string { return "" })
	accounts, _ := accountsFlags(&st)
	jobs, _ := jobsFlags(&st)
	demo := newFlagSet("demo")
	st.bind(demo, "demo")
	backupFlags, restoreFlags := newFlagSet("backup"), newFlagSet("restore")
	backupFlags.Bool("force", false, forceBackupHelp)
	restoreFlags.Bool("force", false, forceRestoreHelp)
	st.bind(backupFlags, "backup")
	st.bind(restoreFlags, "restore")
	invite := newFlagSet("invite")
	st.bind(invite, "invite")
	reconcile := newFlagSet("reconcile")
	st.bind(reconcile, "reconcile")
	for cmd, fset := range map[string]*flag.FlagSet{"": mainFlags(&st), "accounts": accounts, "jobs": jobs, "demo": demo,
		"backup": backupFlags, "restore": restoreFlags, "invite": invite, "reconcile": reconcile} {
		var b strings.Builder
		printUsage(&b, cmd)
		fset.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(b.String(), "--"+f.Name) {
				t.Errorf("help of %q lacks --%s:\n%s", commandPath(cmd), f.Name, b.String())
			}
		})
	}
	var b strings.Builder
	printUsage(&b, "")
	for _, env := range []string{
		"DISCORD_TOKEN", "PINTEREST_CLIENT_ID", "PINTEREST_CLIENT_SECRET", "PINBOT_DATA_DIR", "PINBOT_HTTP_ADDR",
		"PINBOT_PUBLIC_URL", "PINBOT_ENCRYPTION_KEY_FILE", "PINBOT_DISCORD_API_URL", "PINBOT_DISCORD_GATEWAY_URL",
		"PINBOT_PINTEREST_API_URL", "PINBOT_PINTEREST_OAUTH_URL", "PINBOT_LOG_LEVEL", "PINBOT_SHARDS",
		"PINBOT_PIN_LIMIT", "PINBOT_PIN_WINDOW", "PINBOT_HTTP_RATE", "PINBOT_OPERATOR_RATE", "PINBOT_TRUSTED_PROXIES", "PINBOT_USER_RATE",
		"PINBOT_DISCORD_CLIENT_SECRET", "PINBOT_DISCORD_OAUTH_URL", "PINBOT_ADMIN_TOKEN_FILE",
	} {
		if !strings.Contains(b.String(), "env "+env+",") {
			t.Errorf("help lacks the variable %s", env)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		args       []string
		env        map[string]string
		wantStderr string
	}{
		{[]string{"--log-level", "loud"}, nil, `invalid --log-level "loud": want one of trace, debug, info, warn, error, disabled`},
		{nil, map[string]string{"PINBOT_LOG_LEVEL": "loud"}, `invalid PINBOT_LOG_LEVEL "loud"`},
		{[]string{"accounts", "--log-level", "INFO"}, nil, `invalid --log-level "INFO"`},
		{[]string{"--data-dir", ""}, nil, `invalid --data-dir ""`},
		{nil, map[string]string{"PINBOT_DATA_DIR": "  "}, `invalid PINBOT_DATA_DIR "  "`},
		{[]string{"accounts", "--data-dir", ""}, map[string]string{"PINBOT_DATA_DIR": dir}, `invalid --data-dir ""`},
		{[]string{"--bogus"}, nil, "flag provided but not defined: -bogus"},
		{[]string{"--json"}, nil, "flag provided but not defined: -json"},
		{[]string{"frobnicate"}, nil, `unknown command "frobnicate"`},
		{[]string{"accounts", "extra"}, nil, `unexpected argument "extra"`},
		{[]string{"help", "nope"}, nil, `help: unknown command "nope"`},
		{[]string{"help", "accounts", "nope"}, nil, "help: want at most one command"},
		{[]string{"demo", "extra"}, nil, `demo: unexpected argument "extra"`},
		{[]string{"demo", "--json"}, nil, "flag provided but not defined: -json"},
		{[]string{"demo", "--log-level", "x"}, nil, `invalid --log-level "x"`},
		{[]string{"--log-level", "x"}, map[string]string{discordTokenEnv: "t"}, `invalid --log-level "x"`},
		{[]string{"backup"}, nil, "backup: want one FILE to write, got 0 arguments"},
		{[]string{"backup", "a", "b"}, nil, "backup: want one FILE to write, got 2 arguments"},
		{[]string{"backup", "f", "--json"}, nil, "flag provided but not defined: -json"},
		{[]string{"restore"}, nil, "restore: want one backup FILE to read, got 0 arguments"},
		{[]string{"restore", "f", "--pin-window", "0s"}, nil, `invalid --pin-window "0s"`},
	}
	for i, tt := range tests {
		r := pinbot(t, "", tt.env, tt.args...)
		r.wantCode(t, strings.Join(tt.args, " "), exitUsage)
		if !strings.Contains(r.stderr, tt.wantStderr) {
			t.Errorf("step %d: %q: stderr = %q, want it to contain %q", i, tt.args, r.stderr, tt.wantStderr)
		}
		if !strings.Contains(r.stderr, "--help' for usage.") {
			t.Errorf("step %d: %q: stderr = %q, want a pointer to --help", i, tt.args, r.stderr)
		}
	}
}

func TestNewLoggerWritesJSONWhenNotATerminal(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	log := newLogger(&b, zerolog.InfoLevel, func(string) string { return "" })
	log.Debug().Msg("hidden")
	log.Info().Str("k", "v").Msg("shown")
	got := b.String()
	if strings.Contains(got, "hidden") {
		t.Errorf("debug message logged at info level: %q", got)
	}
	if !strings.HasPrefix(got, "{") || !strings.Contains(got, `"k":"v"`) || !strings.Contains(got, `"message":"shown"`) {
		t.Errorf("log = %q, want a JSON line", got)
	}
}

func TestWhenFree(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1_700_000_000_000)
	tests := []struct {
		next time.Time
		want string // prefix
	}{
		{t0.Add(-time.Second), "now"},
		{t0, "now"},
		{t0.Add(time.Millisecond), "in 1s, at "},
		{t0.Add(1500 * time.Millisecond), "in 2s, at "},
		{t0.Add(12*time.Hour - 12*time.Second - time.Millisecond), "in 11h 59m 48s, at "},
		{t0.Add(12 * time.Hour), "in 12h, at "},
	}
	for i, tt := range tests {
		if got := whenFree(tt.next, t0); !strings.HasPrefix(got, tt.want) {
			t.Errorf("step %d: whenFree(t0%+v, t0) = %q want prefix %q", i, tt.next.Sub(t0), got, tt.want)
		}
	}
}

func TestDisplayAccount(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"alice", "alice"},
		{"été-42", "été-42"},
		{"", `""`},
		{"a b", `"a b"`},
		{"a\x1b[2Jb", `"a\x1b[2Jb"`},
		{"a\xffb", `"a\xffb"`},
	}
	for i, tt := range tests {
		if got := displayAccount(tt.in); got != tt.want {
			t.Errorf("step %d: displayAccount(%q) = %s want %s", i, tt.in, got, tt.want)
		}
	}
}

func TestWindowNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		w                      time.Duration
		adjective, short, noun string
	}{
		{12 * time.Hour, "12-hour", "12h", "12 hours"},
		{time.Hour, "1-hour", "1h", "hour"},
		{90 * time.Minute, "90-minute", "1h30m", "90 minutes"},
		{20 * time.Second, "20-second", "20s", "20 seconds"},
		{7 * 24 * time.Hour, "7-day", "7d", "7 days"},
	}
	for i, tt := range tests {
		if a, s, n := windowAdjective(tt.w), windowShort(tt.w), windowNoun(tt.w); a != tt.adjective || s != tt.short || n != tt.noun {
			t.Errorf("step %d: names of %v = %q, %q, %q want %q, %q, %q", i, tt.w, a, s, n, tt.adjective, tt.short, tt.noun)
		}
	}
}
