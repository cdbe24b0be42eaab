package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/persistence/badgerstore"
	"github.com/rs/zerolog"
)

// listedAccount is one element of `accounts --json` as a client reads it.
type listedAccount struct {
	Account  string     `json:"account"`
	Username string     `json:"username"`
	LinkedBy []string   `json:"linked_by"`
	Used     int        `json:"used"`
	Pending  int        `json:"pending"`
	Limit    int        `json:"limit"`
	Blocked  int        `json:"blocked"`
	Free     int        `json:"free"`
	Queued   int        `json:"queued"`
	NextFree *time.Time `json:"next_free"`
	Error    string     `json:"error"`
}

// pinSome fills dir with a few pins: alice 3, bob 12 and carol 100.
func pinSome(t *testing.T, dir string) {
	t.Helper()
	stdin := "pin alice 3\npin bob 10\npin bob 2\n" + strings.Repeat("pin carol 10\n", 10)
	pinbot(t, stdin, nil, "demo", "--data-dir", dir).wantCode(t, "demo", exitOK)
}

func TestAccountsJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Now()
	pinSome(t, dir)

	r := pinbot(t, "", nil, "accounts", "--json", "--data-dir", dir)
	r.wantCode(t, "accounts --json", exitOK)
	var got []listedAccount
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("output is not a JSON array of accounts: %v\n%s", err, r.stdout)
	}
	want := []listedAccount{
		{Account: "alice", Used: 3, Limit: 100, Free: 97},
		{Account: "bob", Used: 12, Limit: 100, Free: 88},
		{Account: "carol", Used: 100, Limit: 100},
	}
	if len(got) != len(want) {
		t.Fatalf("listed %d accounts, want %d:\n%s", len(got), len(want), r.stdout)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Account != w.Account || g.Used != w.Used || g.Pending != w.Pending || g.Limit != w.Limit ||
			g.Free != w.Free || g.Blocked != 0 || g.Queued != 0 || g.Error != "" {
			t.Errorf("account %d = %+v, want %+v", i, g, w)
		}
		if g.NextFree == nil || g.NextFree.Before(start) {
			t.Errorf("account %s: next_free = %v, want a time after the test started", g.Account, g.NextFree)
		}
	}
	// A full account frees its first slot 12 hours after its first pin.
	if nf := got[2].NextFree; nf != nil && nf.Sub(start) < 11*time.Hour {
		t.Errorf("carol: next_free = %v, want about 12 hours after %v", nf, start)
	}
	// The keys are exactly the documented ones.
	var raw []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatal(err)
	}
	keys := []string{"account", "used", "pending", "limit", "blocked", "free", "queued", "next_free"}
	for _, key := range keys {
		if _, ok := raw[0][key]; !ok {
			t.Errorf("object %v lacks %q", raw[0], key)
		}
	}
	if len(raw[0]) != len(keys) {
		t.Errorf("object %v has keys beyond the %d documented", raw[0], len(keys))
	}
}

func TestAccountsTable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pinSome(t, dir)
	// The data directory comes from the environment this time.
	r := pinbot(t, "", map[string]string{"PINBOT_DATA_DIR": dir}, "accounts")
	r.wantCode(t, "accounts", exitOK)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	want := [][]string{
		{"ACCOUNT", "12-HOUR PINS", "PENDING", "FREE", "QUEUED", "NEXT SLOT FREE"},
		{"alice", "3/100", "0", "97", "0", "now"},
		{"bob", "12/100", "0", "88", "0", "now"},
		{"carol", "100/100", "0", "0", "0", "in"},
	}
	if len(lines) != len(want) {
		t.Fatalf("table has %d lines, want %d:\n%s", len(lines), len(want), r.stdout)
	}
	for i, w := range want {
		fields := strings.Fields(lines[i])
		for j, cell := range w {
			if !strings.Contains(lines[i], cell) || (i > 0 && j < 5 && fields[j] != cell) {
				t.Errorf("line %d = %q, want cell %d %q", i, lines[i], j, cell)
			}
		}
	}
}

// TestAccountsPrintsOnlyTheListing checks that accounts writes its
// listing and nothing else, unless logs are asked for with --log-level
// or PINBOT_LOG_LEVEL.
func TestAccountsPrintsOnlyTheListing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pinSome(t, dir)
	tests := []struct {
		env      map[string]string
		args     []string
		wantLogs bool
	}{
		{args: []string{"accounts"}},
		{args: []string{"accounts", "--json"}},
		{args: []string{"accounts", "--log-level", "info"}, wantLogs: true},
		{args: []string{"--log-level", "debug", "accounts", "--json"}, wantLogs: true},
		{env: map[string]string{"PINBOT_LOG_LEVEL": "info"}, args: []string{"accounts"}, wantLogs: true},
		{env: map[string]string{"PINBOT_LOG_LEVEL": "info"}, args: []string{"accounts", "--log-level", "warn"}},
	}
	for i, tt := range tests {
		r := pinbot(t, "", with(map[string]string{"PINBOT_DATA_DIR": dir}, tt.env), tt.args...)
		r.wantCode(t, strings.Join(tt.args, " "), exitOK)
		if !strings.Contains(r.stdout, "alice") {
			t.Errorf("step %d: %q: stdout lacks the listing:\n%s", i, tt.args, r.stdout)
		}
		if logged := strings.Contains(r.stderr, `"level":"info"`); logged != tt.wantLogs || (!tt.wantLogs && r.stderr != "") {
			t.Errorf("step %d: %q: stderr = %q, want logs %v and nothing else", i, tt.args, r.stderr, tt.wantLogs)
		}
	}
}

func TestAccountsFlagOverridesEnvironment(t *testing.T) {
	t.Parallel()
	envDir, flagDir := filepath.Join(t.TempDir(), "env"), t.TempDir()
	env := map[string]string{"PINBOT_DATA_DIR": envDir}
	pinbot(t, "pin dave 2\n", env, "--data-dir", flagDir, "demo").wantCode(t, "demo", exitOK)
	if _, err := os.Stat(envDir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("PINBOT_DATA_DIR directory: Stat error %v, want it unused", err)
	}
	// A flag before the command holds for the command too.
	for _, args := range [][]string{
		{"accounts", "--json", "--data-dir", flagDir},
		{"--data-dir", flagDir, "accounts", "--json"},
	} {
		r := pinbot(t, "", env, args...)
		r.wantCode(t, strings.Join(args, " "), exitOK)
		var got []listedAccount
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 1 || got[0].Account != "dave" || got[0].Used != 2 {
			t.Errorf("%q: listed %+v (%v), want dave with 2 pins", args, got, err)
		}
	}
}

func TestAccountsEmptyAndMissingDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := pinbot(t, "", nil, "accounts", "--json", "--data-dir", dir)
	r.wantCode(t, "accounts --json on an empty directory", exitOK)
	if r.stdout != "[]\n" {
		t.Errorf("JSON of no accounts = %q, want []", r.stdout)
	}
	r = pinbot(t, "", nil, "accounts", "--data-dir", dir)
	r.wantCode(t, "accounts on an empty directory", exitOK)
	if want := "No accounts stored in " + dir + ".\n"; r.stdout != want {
		t.Errorf("table of no accounts = %q, want %q", r.stdout, want)
	}

	missing := filepath.Join(dir, "missing")
	r = pinbot(t, "", nil, "accounts", "--data-dir", missing)
	r.wantCode(t, "accounts on a missing directory", exitFailure)
	if !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("stderr = %q, want it to say the directory does not exist", r.stderr)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: Stat error %v, want it still missing", err)
	}
}

func TestAccountsOnLockedDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pinSome(t, dir)
	store, err := badgerstore.Open(filepath.Join(dir, engineSubdir), badgerstore.Options{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	r := pinbot(t, "", nil, "accounts", "--data-dir", dir)
	r.wantCode(t, "accounts on a locked directory", exitFailure)
	if !strings.Contains(r.stderr, "pinbot: data directory is in use by another pinbot process") {
		t.Errorf("stderr = %q, want the in-use message", r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout = %q, want nothing", r.stdout)
	}
}
