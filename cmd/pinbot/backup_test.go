package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
	"github.com/pinbot/pinbot/internal/app"
	"github.com/pinbot/pinbot/internal/backup"
)

// sandboxData fills a new data directory as the sandbox would: pins (alice
// 3, bob 12, carol 100), a key in DIR/sandbox.key and a token store with
// two users.
func sandboxData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	pinSome(t, dir)
	key := bytes.Repeat([]byte{0x42}, 32)
	if err := os.WriteFile(filepath.Join(dir, sandboxKeyName), key, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := badgerlinks.Open(filepath.Join(dir, linksSubdir), badgerlinks.Options{EncryptionKey: key}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, l := range []struct{ user, acct string }{{"u1", "alice"}, {"u2", "bob"}} {
		tok := &oauth2.Token{AccessToken: "a-" + l.acct, RefreshToken: "r-" + l.acct}
		if err := st.Link(context.Background(), l.user, links.Account{ID: l.acct, Username: l.acct + "_pins"}, tok); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// listed returns `accounts --json` of dir.
func listed(t *testing.T, dir string, args ...string) []listedAccount {
	t.Helper()
	r := pinbot(t, "", nil, append([]string{"accounts", "--json", "--data-dir", dir}, args...)...)
	r.wantCode(t, "accounts", exitOK)
	var got []listedAccount
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("accounts --json: %v\n%s", err, r.stdout)
	}
	return got
}

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestBackupRestoreCommands: a backup of a data directory no pinbot runs
// on, restored into a new one, has the same accounts, counts and links,
// every account held for the window and a lease; an existing backup file
// is replaced only with --force; a data directory that is not empty is
// restored into only with --force, which moves it aside.
func TestBackupRestoreCommands(t *testing.T) {
	t.Parallel()
	src := sandboxData(t)
	out := t.TempDir()
	file := filepath.Join(out, "pinbot.backup")

	r := pinbot(t, "", nil, "backup", "--data-dir", src, file)
	r.wantCode(t, "backup", exitOK)
	if !strings.Contains(r.stdout, "from its stores (no pinbot was running on it)") || !strings.Contains(r.stdout, "token store") {
		t.Errorf("backup said:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "\r") {
		t.Errorf("backup drew a progress line on a pipe: %q", r.stdout)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v, %v; want mode 0600", fi, err)
	}
	before, _ := os.ReadFile(file)

	r = pinbot(t, "", nil, "backup", "--data-dir", src, file)
	r.wantCode(t, "backup over a file", exitFailure)
	if !strings.Contains(r.stderr, "exists: use --force to replace it") {
		t.Errorf("backup over a file: %s", r.stderr)
	}
	if now, _ := os.ReadFile(file); !bytes.Equal(now, before) {
		t.Error("a refused backup changed the file")
	}
	pinbot(t, "", nil, "backup", "--data-dir", src, file, "--force").wantCode(t, "backup --force", exitOK)
	if got := entries(t, out); !slices.Equal(got, []string{"pinbot.backup"}) {
		t.Errorf("the backup's directory holds %v, want the backup alone", got)
	}

	dst := filepath.Join(t.TempDir(), "restored")
	key := filepath.Join(src, sandboxKeyName)
	start := time.Now()
	r = pinbot(t, "", nil, "restore", "--data-dir", dst, "--encryption-key-file", key, file)
	r.wantCode(t, "restore", exitOK)
	for _, w := range []string{"checks out", "restored " + file + " into " + dst, "(in 12h 5m): the backup does not hold the pins made after it",
		"the token store is encrypted with the key in " + key} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("restore did not say %q:\n%s", w, r.stdout)
		}
	}
	want := listed(t, src)
	got := listed(t, dst, "--encryption-key-file", key)
	if len(got) != len(want) {
		t.Fatalf("restored %d accounts, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Account != w.Account || g.Used != w.Used || g.Limit != w.Limit || g.Username != w.Username {
			t.Errorf("restored %+v, want %+v", g, w)
		}
		if g.NextFree == nil || g.NextFree.Before(start.Add(12*time.Hour+5*time.Minute)) {
			t.Errorf("%s: next slot free at %v, want the hold's end, 12h 5m after the restore", g.Account, g.NextFree)
		}
	}

	// Not empty: refused, untouched; then moved aside with --force.
	r = pinbot(t, "", nil, "restore", "--data-dir", dst, "--encryption-key-file", key, file)
	r.wantCode(t, "restore into a full directory", exitFailure)
	if !strings.Contains(r.stderr, "is not empty: use --force") {
		t.Errorf("restore into a full directory: %s", r.stderr)
	}
	marker := filepath.Join(dst, "mine")
	if err := os.WriteFile(marker, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = pinbot(t, "", nil, "restore", "--force", "--data-dir", dst, "--encryption-key-file", key, file)
	r.wantCode(t, "restore --force", exitOK)
	aside, _ := filepath.Glob(dst + ".before-restore-*")
	if len(aside) != 1 || !strings.Contains(r.stdout, "moved "+dst+" to "+aside[0]) {
		t.Fatalf("moved aside: %v\n%s", aside, r.stdout)
	}
	if b, err := os.ReadFile(filepath.Join(aside[0], "mine")); err != nil || string(b) != "keep me" {
		t.Errorf("the directory moved aside lost a file: %q, %v", b, err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the restored directory holds the old one's file: %v", err)
	}
	if got := listed(t, dst); len(got) != len(want) {
		t.Errorf("after restore --force: %d accounts, want %d", len(got), len(want))
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), "*.restoring-*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestRestoreKeepsTheSandboxKey: restoring a sandbox's backup over its
// data directory, with no key given, takes DIR/sandbox.key and carries it
// into the restored directory, which the sandbox's key still opens.
func TestRestoreKeepsTheSandboxKey(t *testing.T) {
	t.Parallel()
	dir := sandboxData(t)
	file := filepath.Join(t.TempDir(), "b")
	pinbot(t, "", nil, "backup", "--data-dir", dir, file).wantCode(t, "backup", exitOK)
	pinbot(t, "", nil, "restore", "--force", "--data-dir", dir, file).wantCode(t, "restore --force", exitOK)
	got := listed(t, dir)
	if len(got) != 3 || got[0].Username != "alice_pins" {
		t.Errorf("after the restore, with the sandbox's key: %+v", got)
	}
}

// TestRestoreRefusesDamage: a damaged, truncated or foreign file, or the
// wrong key, is refused before anything is written: the data directory
// stays as it was, and nothing is left beside it.
func TestRestoreRefusesDamage(t *testing.T) {
	t.Parallel()
	src := sandboxData(t)
	good := filepath.Join(t.TempDir(), "good")
	pinbot(t, "", nil, "backup", "--data-dir", src, good).wantCode(t, "backup", exitOK)
	b, _ := os.ReadFile(good)
	key := filepath.Join(src, sandboxKeyName)
	other := filepath.Join(t.TempDir(), "other.key")
	if err := os.WriteFile(other, bytes.Repeat([]byte{7}, 32), 0o600); err != nil {
		t.Fatal(err)
	}

	damaged := bytes.Clone(b)
	damaged[len(damaged)/2] ^= 0x10
	tests := []struct {
		name string
		data []byte
		key  string
		code int
		want string
	}{
		{"a changed byte", damaged, key, exitFailure, "corrupt or truncated"},
		{"cut short", b[:len(b)-40], key, exitFailure, "corrupt or truncated"},
		{"cut in half", b[:len(b)/2], key, exitFailure, "corrupt or truncated"},
		{"not a backup", []byte("hello, world\n"), key, exitFailure, "not a pinbot backup"},
		{"another key", b, other, exitUsage, "encrypted with another key"},
		{"no key", b, "", exitUsage, "holds a token store"},
	}
	for _, tt := range tests {
		parent := t.TempDir()
		dst := filepath.Join(parent, "data")
		if err := os.Mkdir(dst, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, "old"), []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(file, tt.data, 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"restore", "--force", "--data-dir", dst, file}
		if tt.key != "" {
			args = append(args, "--encryption-key-file", tt.key)
		}
		// An entry made in the parent, even if removed again, would
		// change its modification time.
		fi, err := os.Stat(parent)
		if err != nil {
			t.Fatal(err)
		}
		r := pinbot(t, "", nil, args...)
		r.wantCode(t, tt.name, tt.code)
		if !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%s: stderr %q, want %q", tt.name, r.stderr, tt.want)
		}
		if got := entries(t, parent); !slices.Equal(got, []string{"data"}) {
			t.Errorf("%s: the parent holds %v, want the data directory alone", tt.name, got)
		}
		if now, err := os.Stat(parent); err != nil || !now.ModTime().Equal(fi.ModTime()) {
			t.Errorf("%s: something was written beside the data directory (its parent changed at %v)", tt.name, now.ModTime())
		}
		if got := entries(t, dst); !slices.Equal(got, []string{"old"}) {
			t.Errorf("%s: the data directory holds %v, want it untouched", tt.name, got)
		}
	}
}

// runningPinbot opens dir's stores as a running pinbot does and serves
// backups on its control socket; writes go on through the returned store
// until the test ends.
func runningPinbot(t *testing.T, dir string, key []byte) app.EngineStore {
	t.Helper()
	l := layout{dir: dir}
	store, err := openStore(l.engine(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ls, err := app.OpenTokenStore(l.links(), key, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := backup.Listen(l.control())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: backup.Handler(backup.Stores{Engine: store, Links: ls, Key: key}, zerolog.Nop())}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		ls.Close()
		store.Close()
	})
	return store
}

// TestBackupOnline: while a pinbot runs on the data directory, backup
// asks it over the control socket (and needs no key), and restore refuses
// to replace that directory. An offline backup of a directory another
// process holds, without the socket, fails naming the cause.
func TestBackupOnline(t *testing.T) {
	t.Parallel()
	dir := sandboxData(t)
	key, _ := os.ReadFile(filepath.Join(dir, sandboxKeyName))
	if err := os.Remove(filepath.Join(dir, sandboxKeyName)); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "pinbot.key")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	runningPinbot(t, dir, key)

	file := filepath.Join(t.TempDir(), "online")
	r := pinbot(t, "", nil, "backup", "--data-dir", dir, file)
	r.wantCode(t, "online backup", exitOK)
	if !strings.Contains(r.stdout, "through the pinbot running on it") {
		t.Errorf("online backup said:\n%s", r.stdout)
	}
	r = pinbot(t, "", nil, "restore", "--force", "--data-dir", dir, "--encryption-key-file", keyFile, file)
	r.wantCode(t, "restore over a running pinbot", exitFailure)
	if !strings.Contains(r.stderr, "a pinbot is running on "+dir) {
		t.Errorf("restore over a running pinbot: %s", r.stderr)
	}
	dst := filepath.Join(t.TempDir(), "d")
	pinbot(t, "", nil, "restore", "--data-dir", dst, "--encryption-key-file", keyFile, file).wantCode(t, "restore", exitOK)
	if got := listed(t, dst, "--encryption-key-file", keyFile); len(got) != 3 || got[1].Username != "bob_pins" {
		t.Errorf("restored from an online backup: %+v", got)
	}

	// The stores held, no socket: the offline path finds them in use.
	if err := os.Remove(filepath.Join(dir, controlName)); err != nil {
		t.Fatal(err)
	}
	r = pinbot(t, "", nil, "backup", "--data-dir", dir, "--encryption-key-file", keyFile, filepath.Join(t.TempDir(), "x"))
	r.wantCode(t, "backup of a held directory", exitFailure)
	if !strings.Contains(r.stderr, "in use by another pinbot process, and it serves no backup") {
		t.Errorf("backup of a held directory: %s", r.stderr)
	}
	r = pinbot(t, "", nil, "restore", "--force", "--data-dir", dir, "--encryption-key-file", keyFile, file)
	r.wantCode(t, "restore over held stores", exitFailure)
	if !strings.Contains(r.stderr, "in use by another pinbot process") {
		t.Errorf("restore over held stores: %s", r.stderr)
	}
}

// TestProgressLine: on a terminal, the bytes written show on one line,
// redrawn in place and ended once; elsewhere nothing shows.
func TestProgressLine(t *testing.T) {
	t.Parallel()
	var file, bar bytes.Buffer
	p := &progressWriter{w: &file, bar: &bar, label: "backing up data"}
	p.Write(make([]byte, 1500))
	p.Write(make([]byte, 10)) // within progressEvery: not redrawn
	p.end()
	if want := "\rbacking up data: 1.5 KiB written\rbacking up data: 1.5 KiB written\n"; bar.String() != want {
		t.Errorf("progress line %q, want %q", bar.String(), want)
	}
	if file.Len() != 1510 {
		t.Errorf("%d bytes reached the file, want 1510", file.Len())
	}
	quiet := &progressWriter{w: &file, label: "x"}
	quiet.Write([]byte("abc"))
	quiet.end()
	if quiet.n != 3 {
		t.Errorf("counted %d bytes, want 3", quiet.n)
	}
}
