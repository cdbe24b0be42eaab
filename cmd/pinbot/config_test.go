package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
	"github.com/pinbot/pinbot/internal/app"
	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/persistence/badgerstore"
)

// A token shaped like Discord's (base64 application id, then two parts),
// and an app secret, that must never be printed.
const (
	testToken  = "MTIwMDAwMDAwMDAwMDAwMDAwMA.discordtest.0123456789abcdef0123456789abcdef"
	testSecret = "app-secret-never-shown"
)

// writeKey writes a key of n random bytes with mode perm and returns its
// path.
func writeKey(t *testing.T, dir string, n int, perm os.FileMode) string {
	t.Helper()
	key := make([]byte, n)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pinbot.key")
	if err := os.WriteFile(path, key, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil { // past the umask
		t.Fatal(err)
	}
	return path
}

// botEnv returns a complete bot configuration over dir, pointing at
// nothing that answers: tests of what happens before the bot connects.
func botEnv(t *testing.T, dir string) map[string]string {
	t.Helper()
	return map[string]string{
		discordTokenEnv:              testToken,
		"PINTEREST_CLIENT_ID":        "app-id",
		"PINTEREST_CLIENT_SECRET":    testSecret,
		"PINBOT_PUBLIC_URL":          "https://pinbot.example/",
		"PINBOT_ENCRYPTION_KEY_FILE": writeKey(t, dir, 32, 0o600),
		"PINBOT_DATA_DIR":            filepath.Join(dir, "data"),
		"PINBOT_HTTP_ADDR":           "127.0.0.1:0",
		"PINBOT_DISCORD_API_URL":     "http://127.0.0.1:1/api/v10",
		"PINBOT_PINTEREST_API_URL":   "http://127.0.0.1:1/v5",
	}
}

// with returns a copy of env with the changes; "" deletes a variable.
func with(env map[string]string, changes map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	for k, v := range changes {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// checkNoSecrets fails the test when r printed a secret.
func (r result) checkNoSecrets(t *testing.T, what string) {
	t.Helper()
	for _, s := range []string{testToken, testSecret} {
		if strings.Contains(r.stdout+r.stderr, s) {
			t.Errorf("%s printed a secret:\nstdout:\n%s\nstderr:\n%s", what, r.stdout, r.stderr)
		}
	}
}

// TestBotConfigErrors checks that a bad or incomplete bot configuration
// is refused with exit status 2, a message naming the setting, no secret
// shown, and nothing created on disk.
func TestBotConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	full := botEnv(t, dir)
	keyDir := t.TempDir()
	tests := []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{env: map[string]string{discordTokenEnv: testToken},
			want: []string{"DISCORD_TOKEN is set, so PINTEREST_CLIENT_ID (or --pinterest-client-id) is required"}},
		{env: full, args: []string{"--discord-token", testToken + "x", "--pinterest-client-secret", ""},
			want: []string{"--discord-token is set, so PINTEREST_CLIENT_SECRET (or --pinterest-client-secret) is required"}},
		{env: with(full, map[string]string{"PINBOT_PUBLIC_URL": ""}),
			want: []string{"PINBOT_PUBLIC_URL (or --public-url) is required"}},
		{env: with(full, map[string]string{"PINBOT_ENCRYPTION_KEY_FILE": ""}),
			want: []string{"PINBOT_ENCRYPTION_KEY_FILE (or --encryption-key-file) is required",
				"head -c 32 /dev/urandom > pinbot.key && chmod 600 pinbot.key"}},
		{env: with(full, map[string]string{"PINBOT_ENCRYPTION_KEY_FILE": filepath.Join(dir, "none.key")}),
			want: []string{"PINBOT_ENCRYPTION_KEY_FILE: key file " + filepath.Join(dir, "none.key") + " does not exist", "head -c 32"}},
		{env: with(full, map[string]string{"PINBOT_ENCRYPTION_KEY_FILE": writeKey(t, keyDir, 33, 0o600)}),
			want: []string{"holds 33 bytes; want exactly 16, 24 or 32 raw bytes"}},
		{env: full, args: []string{"--encryption-key-file", dir},
			want: []string{"--encryption-key-file: " + dir + " is not a regular file"}},
		{env: with(full, map[string]string{"PINBOT_PUBLIC_URL": "pinbot.example"}),
			want: []string{`invalid PINBOT_PUBLIC_URL "pinbot.example": want an absolute http or https URL`}},
		{env: full, args: []string{"--public-url", "https://pinbot.example/?a=b"},
			want: []string{`invalid --public-url "https://pinbot.example/?a=b": want an address without a query or fragment`}},
		{env: with(full, map[string]string{"PINBOT_PUBLIC_URL": "https://pinbot.example/?"}),
			want: []string{`invalid PINBOT_PUBLIC_URL "https://pinbot.example/?": want an address without a query or fragment`}},
		{env: full, args: []string{"--public-url", "https://pinbot.example#"},
			want: []string{`invalid --public-url "https://pinbot.example#": want an address without a query or fragment`}},
		{env: with(full, map[string]string{"PINBOT_HTTP_ADDR": "8080"}),
			want: []string{`invalid PINBOT_HTTP_ADDR "8080": want HOST:PORT`}},
		{env: with(full, map[string]string{"PINBOT_HTTP_ADDR": "127.0.0.1:99999"}),
			want: []string{`invalid PINBOT_HTTP_ADDR "127.0.0.1:99999"`}},
		{env: with(full, map[string]string{"PINBOT_SHARDS": "-1"}),
			want: []string{`invalid PINBOT_SHARDS "-1": want a whole number from 0`}},
		{env: full, args: []string{"--shards", "two"}, want: []string{`invalid --shards "two"`}},
		{env: with(full, map[string]string{"PINBOT_PINTEREST_CONTINUOUS_REFRESH": "yes"}),
			want: []string{`invalid PINBOT_PINTEREST_CONTINUOUS_REFRESH "yes": want true or false`}},
		{env: with(full, map[string]string{"PINBOT_DISCORD_GATEWAY_URL": "https://gateway.discord.gg"}),
			want: []string{`invalid PINBOT_DISCORD_GATEWAY_URL "https://gateway.discord.gg": want an absolute ws or wss URL`}},
		{env: with(full, map[string]string{"PINBOT_DISCORD_API_URL": "discord.com/api"}),
			want: []string{`invalid PINBOT_DISCORD_API_URL`}},
		{env: with(full, map[string]string{"PINBOT_PINTEREST_API_URL": "ftp://x"}),
			want: []string{`invalid PINBOT_PINTEREST_API_URL "ftp://x"`}},
		{env: with(full, map[string]string{"PINBOT_PINTEREST_OAUTH_URL": "/oauth"}),
			want: []string{`invalid PINBOT_PINTEREST_OAUTH_URL "/oauth"`}},
		{env: with(full, map[string]string{discordTokenEnv: "two words"}),
			want: []string{"invalid DISCORD_TOKEN: it contains spaces or line breaks"}},
		{env: with(full, map[string]string{"PINBOT_DISCORD_OAUTH_URL": "discord.com/oauth2/authorize"}),
			want: []string{`invalid PINBOT_DISCORD_OAUTH_URL "discord.com/oauth2/authorize": want an absolute http or https URL`}},
		{env: with(full, map[string]string{"PINBOT_DISCORD_CLIENT_SECRET": testSecret + " x"}),
			want: []string{"invalid PINBOT_DISCORD_CLIENT_SECRET: it contains spaces or line breaks"}},
		{env: with(full, map[string]string{"PINBOT_LOG_LEVEL": "chatty"}),
			want: []string{`invalid PINBOT_LOG_LEVEL "chatty"`}},
		{env: with(full, map[string]string{"PINBOT_MEMORY_LIMIT": "2GB"}),
			want: []string{`invalid PINBOT_MEMORY_LIMIT "2GB": want a positive whole number of bytes`}},
		{env: full, args: []string{"--memory-limit", "-1"},
			want: []string{`invalid --memory-limit "-1"`}},
		{env: with(full, map[string]string{"PINBOT_PARK_AFTER": "10m"}),
			want: []string{`invalid PINBOT_PARK_AFTER "10m": want a duration from 1s to 5m0s in whole milliseconds, such as 1m, or off`}},
		{env: full, args: []string{"--park-after", "soon"},
			want: []string{`invalid --park-after "soon"`}},
		{env: with(full, map[string]string{"PINBOT_RECONCILE_EVERY": "30s"}),
			want: []string{`invalid PINBOT_RECONCILE_EVERY "30s": want a duration from 1m0s to 24h0m0s, such as 15m, or off`}},
		{env: with(full, map[string]string{"PINBOT_REMEMBER_PINS": "30m"}),
			want: []string{`invalid PINBOT_REMEMBER_PINS "30m": want a duration from 1h0m0s to 26280h0m0s, such as 2160h (90 days), or off`}},
		{env: full, args: []string{"--count-all-pins", "sometimes"},
			want: []string{`invalid --count-all-pins "sometimes": want true or false`}},
		{env: with(full, map[string]string{"PINBOT_CLUSTER_ADDR": "10.0.0.5:7946"}),
			want: []string{"PINBOT_CLUSTER_ADDR is set but PINBOT_ETCD_ENDPOINTS (or --etcd-endpoints) is not"}},
		{env: with(full, map[string]string{"PINBOT_ETCD_ENDPOINTS": "http://10.0.0.1:2379,etcd-2:2379"}),
			want: []string{`invalid PINBOT_ETCD_ENDPOINTS: "etcd-2:2379" is not an http:// or https:// URL`,
				"PINBOT_ETCD_ENDPOINTS is set, so PINBOT_CLUSTER_ADDR (or --cluster-addr) is required",
				"PINBOT_ETCD_ENDPOINTS is set, so PINBOT_CLUSTER_KEY_FILE (or --cluster-key-file) is required"}},
		{env: with(full, map[string]string{"PINBOT_ETCD_ENDPOINTS": "http://10.0.0.1:2379", "PINBOT_CLUSTER_ADDR": ":7946",
			"PINBOT_CLUSTER_KEY_FILE": writeKey(t, t.TempDir(), 16, 0o600)}),
			want: []string{`invalid PINBOT_CLUSTER_ADDR ":7946": want HOST:PORT`, "holds 16 bytes, want at least 32"}},
	}
	if runtime.GOOS != "windows" {
		open := writeKey(t, t.TempDir(), 32, 0o644)
		tests = append(tests, struct {
			env  map[string]string
			args []string
			want []string
		}{env: with(full, map[string]string{"PINBOT_ENCRYPTION_KEY_FILE": open}),
			want: []string{"key file " + open + " has mode 0644", "chmod 600 " + open}})
	}
	for i, tt := range tests {
		r := pinbot(t, "", tt.env, tt.args...)
		r.wantCode(t, strings.Join(tt.args, " "), exitUsage)
		for _, w := range tt.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("step %d: stderr = %q, want it to contain %q", i, r.stderr, w)
			}
		}
		r.checkNoSecrets(t, "a configuration error")
	}
	if _, err := os.Stat(full["PINBOT_DATA_DIR"]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("data directory: Stat error %v, want it not created by a refused configuration", err)
	}
}

// TestBotBadTokenRefusedBeforeStart gives a complete configuration whose
// token is not a Discord bot token: refused (status 2) without showing
// it, before anything is opened or logged.
func TestBotBadTokenRefusedBeforeStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := with(botEnv(t, dir), map[string]string{discordTokenEnv: "not-a-discord-bot-token-at-all"})
	r := pinbot(t, "", env)
	r.wantCode(t, "a malformed token", exitUsage)
	want := "pinbot: invalid DISCORD_TOKEN: it is not a Discord bot token (its first part must be the base64 application ID)\n" +
		"Run 'pinbot --help' for usage.\n"
	if r.stderr != want {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
	r.checkNoSecrets(t, "a malformed token")
	if _, err := os.Stat(env["PINBOT_DATA_DIR"]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("data directory: Stat error %v, want it not created for a malformed token", err)
	}
}

// TestBotConfigErrorsAllAtOnce checks that every problem with the bot's
// configuration is reported in one run, with status 2, before anything is
// opened or logged: stderr holds the list and the pointer to --help, and
// nothing else.
func TestBotConfigErrorsAllAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	full := botEnv(t, dir)
	const (
		badToken = "invalid DISCORD_TOKEN: it is not a Discord bot token (its first part must be the base64 application ID)"
		noID     = "DISCORD_TOKEN is set, so PINTEREST_CLIENT_ID (or --pinterest-client-id) is required"
		noSecret = "DISCORD_TOKEN is set, so PINTEREST_CLIENT_SECRET (or --pinterest-client-secret) is required"
		noURL    = "DISCORD_TOKEN is set, so PINBOT_PUBLIC_URL (or --public-url) is required"
		noKey    = "DISCORD_TOKEN is set, so PINBOT_ENCRYPTION_KEY_FILE (or --encryption-key-file) is required: " +
			"the OAuth tokens are stored encrypted with it. Create a key with: head -c 32 /dev/urandom > pinbot.key && chmod 600 pinbot.key"
	)
	missingKey := filepath.Join(dir, "none.key")
	tests := []struct {
		env  map[string]string
		args []string
		want []string // every problem, in order
	}{
		{env: map[string]string{discordTokenEnv: "x", "PINBOT_DATA_DIR": full["PINBOT_DATA_DIR"]},
			want: []string{badToken, noID, noSecret, noURL, noKey}},
		{env: map[string]string{discordTokenEnv: testToken, "PINBOT_DATA_DIR": full["PINBOT_DATA_DIR"]},
			want: []string{noID, noSecret, noURL, noKey}},
		{env: with(full, map[string]string{
			"PINBOT_LOG_LEVEL":           "chatty",
			"PINBOT_HTTP_ADDR":           "8080",
			"PINBOT_PUBLIC_URL":          "pinbot.example",
			"PINBOT_SHARDS":              "-1",
			"PINBOT_ENCRYPTION_KEY_FILE": missingKey,
		}), want: []string{
			`invalid PINBOT_LOG_LEVEL "chatty": want one of trace, debug, info, warn, error, disabled`,
			`invalid PINBOT_HTTP_ADDR "8080": want HOST:PORT, such as 127.0.0.1:8080`,
			`invalid PINBOT_PUBLIC_URL "pinbot.example": want an absolute http or https URL`,
			`invalid PINBOT_SHARDS "-1": want a whole number from 0 (Discord's recommendation) to 65536`,
			"PINBOT_ENCRYPTION_KEY_FILE: key file " + missingKey + " does not exist; " + keyHelp,
		}},
		{env: with(full, map[string]string{"PINTEREST_CLIENT_ID": "", "PINBOT_PINTEREST_CONTINUOUS_REFRESH": "yes"}),
			args: []string{"--public-url", "https://pinbot.example/?a=b", "--discord-gateway-url", "https://gateway.discord.gg"},
			want: []string{
				noID,
				`invalid --public-url "https://pinbot.example/?a=b": want an address without a query or fragment`,
				`invalid --discord-gateway-url "https://gateway.discord.gg": want an absolute ws or wss URL`,
				`invalid PINBOT_PINTEREST_CONTINUOUS_REFRESH "yes": want true or false`,
			}},
	}
	for i, tt := range tests {
		r := pinbot(t, "", tt.env, tt.args...)
		r.wantCode(t, strings.Join(tt.args, " "), exitUsage)
		want := fmt.Sprintf("pinbot: %d problems with the configuration:\n  - %s\nRun 'pinbot --help' for usage.\n",
			len(tt.want), strings.Join(tt.want, "\n  - "))
		if r.stderr != want {
			t.Errorf("step %d: stderr =\n%s\nwant\n%s", i, r.stderr, want)
		}
		r.checkNoSecrets(t, "configuration errors")
	}
	if _, err := os.Stat(full["PINBOT_DATA_DIR"]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("data directory: Stat error %v, want it not created by a refused configuration", err)
	}
}

// TestPublicURLRedirect checks the OAuth redirect made from the public
// URL, and that a URL with a query or a fragment, even an empty one, is
// refused: the callback path would not end the redirect's path.
func TestPublicURLRedirect(t *testing.T) {
	t.Parallel()
	env := botEnv(t, t.TempDir())
	tests := []struct {
		publicURL, redirect string // redirect "" means refused
	}{
		{"https://pinbot.example", "https://pinbot.example/oauth/callback"},
		{"https://pinbot.example/", "https://pinbot.example/oauth/callback"},
		{"https://pinbot.example/bot/", "https://pinbot.example/bot/oauth/callback"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/oauth/callback"},
		{"https://pinbot.example/?", ""},
		{"https://pinbot.example?", ""},
		{"https://pinbot.example/?a=b", ""},
		{"https://pinbot.example/#", ""},
		{"https://pinbot.example#top", ""},
		{"https://pinbot.example/?#", ""},
	}
	for _, tt := range tests {
		st := newSettings(func(k string) string {
			if k == "PINBOT_PUBLIC_URL" {
				return tt.publicURL
			}
			return env[k]
		})
		b, err := st.validateBot()
		switch {
		case tt.redirect == "" && err == nil:
			t.Errorf("PINBOT_PUBLIC_URL %q accepted, with the redirect %q; want it refused", tt.publicURL, b.redirectURL)
		case tt.redirect == "" && !strings.Contains(err.Error(), "invalid PINBOT_PUBLIC_URL"):
			t.Errorf("PINBOT_PUBLIC_URL %q: error %q, want it to name PINBOT_PUBLIC_URL", tt.publicURL, err)
		case tt.redirect != "" && err != nil:
			t.Errorf("PINBOT_PUBLIC_URL %q: %v", tt.publicURL, err)
		case tt.redirect != "" && b.redirectURL != tt.redirect:
			t.Errorf("PINBOT_PUBLIC_URL %q: redirect %q, want %q", tt.publicURL, b.redirectURL, tt.redirect)
		}
	}
}

// TestDiscordSignInSettings: PINBOT_DISCORD_CLIENT_SECRET turns the
// sign-in with Discord on, with Discord's redirect next to Pinterest's.
func TestDiscordSignInSettings(t *testing.T) {
	t.Parallel()
	env := with(botEnv(t, t.TempDir()), map[string]string{"PINBOT_PUBLIC_URL": "https://pinbot.example/bot/"})
	st := newSettings(func(k string) string { return env[k] })
	b, err := st.validateBot()
	if err != nil || b.discordClientSecret != "" || b.discordRedirectURL != "" {
		t.Errorf("without a secret: %+v, %v; want no sign-in", b, err)
	}
	env = with(env, map[string]string{"PINBOT_DISCORD_CLIENT_SECRET": "d1sc0rd", "PINBOT_DISCORD_OAUTH_URL": "http://127.0.0.1:1/oauth2/authorize"})
	st = newSettings(func(k string) string { return env[k] })
	b, err = st.validateBot()
	if err != nil || b.discordClientSecret != "d1sc0rd" || b.discordOAuth != "http://127.0.0.1:1/oauth2/authorize" ||
		b.discordRedirectURL != "https://pinbot.example/bot/oauth/discord" {
		t.Errorf("with a secret: secret set %t, authorize %q, redirect %q, %v", b.discordClientSecret != "", b.discordOAuth, b.discordRedirectURL, err)
	}
}

// TestBotStartErrorsNameTheSetting checks that the errors met once the
// bot starts (the HTTP address taken), as the configuration errors (a
// malformed token), name the setting as it was given: by its flag when a
// flag set it, else by its variable.
func TestBotStartErrorsNameTheSetting(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() }) // after the parallel subtests
	taken := ln.Addr().String()

	t.Run("address taken", func(t *testing.T) {
		t.Parallel()
		env := botEnv(t, t.TempDir())
		r := pinbot(t, "", with(env, map[string]string{"PINBOT_HTTP_ADDR": taken}))
		r.wantCode(t, "HTTP address taken", exitFailure)
		if want := "listening on PINBOT_HTTP_ADDR " + taken; !strings.Contains(r.stderr, want) {
			t.Errorf("stderr = %q, want it to contain %q", r.stderr, want)
		}
		r = pinbot(t, "", env, "--http-addr", taken)
		r.wantCode(t, "HTTP address taken", exitFailure)
		if want := "listening on --http-addr " + taken; !strings.Contains(r.stderr, want) {
			t.Errorf("stderr = %q, want it to contain %q", r.stderr, want)
		}
	})
	t.Run("malformed token", func(t *testing.T) {
		t.Parallel()
		env := with(botEnv(t, t.TempDir()), map[string]string{discordTokenEnv: ""})
		const bad = "not-a-discord-bot-token-at-all"
		r := pinbot(t, "", env, "--discord-token", bad)
		r.wantCode(t, "a malformed token", exitUsage)
		if want := "invalid --discord-token: it is not a Discord bot token"; !strings.Contains(r.stderr, want) {
			t.Errorf("stderr = %q, want it to contain %q", r.stderr, want)
		}
		if strings.Contains(r.stderr, bad) {
			t.Errorf("stderr shows the token: %q", r.stderr)
		}
	})
}

// TestBotStoresInUse starts the bot on a data directory whose engine
// store, then token store, another process holds, and with a token store
// written with another key.
func TestBotStoresInUse(t *testing.T) {
	t.Parallel()
	t.Run("engine", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		env := botEnv(t, dir)
		store, err := badgerstore.Open(filepath.Join(env["PINBOT_DATA_DIR"], engineSubdir), badgerstore.Options{}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		r := pinbot(t, "", env)
		r.wantCode(t, "engine store in use", exitFailure)
		if !strings.Contains(r.stderr, "pinbot: data directory is in use by another pinbot process") {
			t.Errorf("stderr = %q, want the in-use message", r.stderr)
		}
	})
	t.Run("links", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		env := botEnv(t, dir)
		key, err := os.ReadFile(env["PINBOT_ENCRYPTION_KEY_FILE"])
		if err != nil {
			t.Fatal(err)
		}
		st, err := badgerlinks.Open(filepath.Join(env["PINBOT_DATA_DIR"], linksSubdir), badgerlinks.Options{EncryptionKey: key}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		r := pinbot(t, "", env)
		r.wantCode(t, "token store in use", exitFailure)
		if !strings.Contains(r.stderr, "pinbot: data directory is in use by another pinbot process") {
			t.Errorf("stderr = %q, want the in-use message", r.stderr)
		}
	})
	t.Run("key", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		env := botEnv(t, dir)
		other := make([]byte, 32)
		st, err := badgerlinks.Open(filepath.Join(env["PINBOT_DATA_DIR"], linksSubdir), badgerlinks.Options{EncryptionKey: other}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		r := pinbot(t, "", env)
		r.wantCode(t, "token store with another key", exitUsage)
		if !strings.Contains(r.stderr, "was written with another key than the one given") {
			t.Errorf("stderr = %q, want the key mismatch explained", r.stderr)
		}
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		env := with(botEnv(t, t.TempDir()), map[string]string{"PINBOT_HTTP_ADDR": ln.Addr().String()})
		r := pinbot(t, "", env)
		r.wantCode(t, "HTTP address taken", exitFailure)
		if !strings.Contains(r.stderr, "listening on PINBOT_HTTP_ADDR "+ln.Addr().String()) {
			t.Errorf("stderr = %q, want the listen failure", r.stderr)
		}
	})
}

func TestOldLayoutRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "MANIFEST"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"demo", "--data-dir", dir}, {"accounts", "--data-dir", dir}} {
		r := pinbot(t, "status a\n", nil, args...)
		r.wantCode(t, strings.Join(args, " "), exitFailure)
		if !strings.Contains(r.stderr, "layout of an earlier pinbot") || !strings.Contains(r.stderr, filepath.Join(dir, "engine")) {
			t.Errorf("%q: stderr = %q, want the old layout explained", args, r.stderr)
		}
	}
}

func TestLoggerRedactsSecrets(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	log := newLogger(&b, zerolog.InfoLevel, func(string) string { return "" }, testToken, testSecret, "short", `quo"te-secret`)
	log.Info().Str("payload", `{"token":"`+testToken+`"}`).Msg("identify " + testSecret)
	log.Info().Str("k", `quo"te-secret`).Msg("short stays")
	got := b.String()
	for _, s := range []string{testToken, testSecret, `quo\"te-secret`} {
		if strings.Contains(got, s) {
			t.Errorf("log shows %q:\n%s", s, got)
		}
	}
	if strings.Count(got, redacted) != 3 || !strings.Contains(got, "short stays") {
		t.Errorf("log = %s, want three redactions and short strings kept", got)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(got), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("redacted line is not JSON: %s", line)
		}
	}
}

// TestAccountsShowsUsernames fills a data directory as the sandbox does
// (its key, the token store, pins in the engine store) and checks that
// accounts names the accounts, and falls back to ids with a wrong key.
func TestAccountsShowsUsernames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pinbot(t, "pin 7001 3\npin 7002 1\n", nil, "demo", "--data-dir", dir).wantCode(t, "demo", exitOK)
	keyPath := filepath.Join(dir, sandboxKeyName)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, key, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := badgerlinks.Open(filepath.Join(dir, linksSubdir), badgerlinks.Options{EncryptionKey: key}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	tok := &oauth2.Token{AccessToken: "pina_x", RefreshToken: "pinr_x"}
	if err := st.Link(context.Background(), "11", links.Account{ID: "7001", Username: "alice_pins"}, tok); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	r := pinbot(t, "", nil, "accounts", "--json", "--data-dir", dir)
	r.wantCode(t, "accounts --json", exitOK)
	var got []listedAccount
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(got) != 2 || got[0].Username != "alice_pins" || got[0].Used != 3 || got[1].Username != "" || got[1].Used != 1 {
		t.Errorf("accounts = %+v, want 7001 named alice_pins with 3 pins and 7002 unnamed with 1", got)
	}
	r = pinbot(t, "", nil, "accounts", "--data-dir", dir)
	r.wantCode(t, "accounts", exitOK)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ACCOUNT   USERNAME") ||
		strings.Join(strings.Fields(lines[1])[:3], " ") != "7001 @alice_pins 3/100" ||
		strings.Join(strings.Fields(lines[2])[:3], " ") != "7002 - 1/100" {
		t.Errorf("table =\n%s", r.stdout)
	}

	wrong := writeKey(t, t.TempDir(), 32, 0o600)
	r = pinbot(t, "", map[string]string{"PINBOT_ENCRYPTION_KEY_FILE": wrong}, "accounts", "--json", "--data-dir", dir)
	r.wantCode(t, "accounts with a wrong key", exitOK)
	if strings.Contains(r.stdout, "alice_pins") || !strings.Contains(r.stdout, `"account": "7001"`) {
		t.Errorf("with a wrong key: %s, want ids only", r.stdout)
	}
	if !strings.Contains(r.stderr, "usernames not shown") {
		t.Errorf("with a wrong key: stderr = %q, want a warning", r.stderr)
	}
}

// TestBotSecretsAreRedacted: every secret setting of the bot reaches the
// logger's redaction list.
func TestBotSecretsAreRedacted(t *testing.T) {
	t.Parallel()
	cfg := botSettings{token: testToken, clientSecret: testSecret, discordClientSecret: "discord-secret-123",
		adminToken: []byte("admin-token-0123456789")}
	var b bytes.Buffer
	log := newLogger(&b, zerolog.DebugLevel, func(string) string { return "" }, cfg.secrets()...)
	for _, s := range []string{testToken, testSecret, "discord-secret-123", "admin-token-0123456789"} {
		log.Debug().Str("v", s).Msg("x " + s)
		if strings.Contains(b.String(), s) {
			t.Errorf("log shows %q:\n%s", s, b.String())
		}
	}
}

// TestSandboxMemoryLimitRefused: the sandbox refuses a memory limit it
// cannot read, before it starts.
func TestSandboxMemoryLimitRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := pinbot(t, "", map[string]string{"PINBOT_DATA_DIR": filepath.Join(dir, "data"), "PINBOT_MEMORY_LIMIT": "lots"})
	r.wantCode(t, "sandbox", exitUsage)
	if w := `invalid PINBOT_MEMORY_LIMIT "lots"`; !strings.Contains(r.stderr, w) {
		t.Errorf("stderr = %q, want it to contain %q", r.stderr, w)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("data directory: Stat error %v, want it not created", err)
	}
}

// TestEtcdCredentialSettings: the bot's settings of etcd's TLS and user
// are read into its credentials, and each bad one is refused with a
// message naming it: a file unreadable or holding no certificate, a key
// not the certificate's, a certificate without its key, TLS files with
// http:// endpoints, a password file others may read. https://
// endpoints with no CA are fine: the system's roots check etcd.
func TestEtcdCredentialSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certs, other := etcdtest.NewCerts(t), etcdtest.NewCerts(t)
	pw := filepath.Join(dir, "etcd.password")
	if err := os.WriteFile(pw, []byte("s3cret-etcd-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	cluster := map[string]string{
		"PINBOT_ETCD_ENDPOINTS":   "https://10.0.0.1:2379,https://10.0.0.2:2379",
		"PINBOT_CLUSTER_ADDR":     "10.0.0.5:7946",
		"PINBOT_CLUSTER_KEY_FILE": writeKey(t, t.TempDir(), 32, 0o600),
	}
	full := with(botEnv(t, dir), cluster)
	tlsEnv := with(full, map[string]string{
		"PINBOT_ETCD_CA_FILE": certs.CAFile, "PINBOT_ETCD_CERT_FILE": certs.ClientCert, "PINBOT_ETCD_KEY_FILE": certs.ClientKey,
		"PINBOT_ETCD_USERNAME": "pinbot", "PINBOT_ETCD_PASSWORD_FILE": pw,
	})
	validate := func(env map[string]string, args ...string) (botSettings, error) {
		st := newSettings(func(k string) string { return env[k] })
		fs := newFlagSet("")
		st.bind(fs, "")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		st.noteFlags(fs)
		return st.validateBot()
	}

	b, err := validate(tlsEnv)
	want := app.EtcdCredentials{CAFile: certs.CAFile, CertFile: certs.ClientCert, KeyFile: certs.ClientKey,
		Username: "pinbot", Password: "s3cret-etcd-password"}
	if err != nil || b.etcdCredentials != want {
		t.Fatalf("TLS and user settings: %+v, %v; want %+v", b.etcdCredentials, err, want)
	}
	if !slices.Contains(b.secrets(), "s3cret-etcd-password") {
		t.Errorf("the etcd password is not among the secrets the log hides")
	}
	if b, err := validate(full); err != nil || b.etcdCredentials != (app.EtcdCredentials{}) {
		t.Fatalf("https:// endpoints without a CA: %+v, %v; want no credentials, the system's roots", b.etcdCredentials, err)
	}

	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("-----BEGIN NOTHING-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{env: with(full, map[string]string{"PINBOT_ETCD_CA_FILE": missing}),
			want: []string{"invalid PINBOT_ETCD_CA_FILE: open " + missing + ": no such file or directory"}},
		{env: full, args: []string{"--etcd-ca-file", junk},
			want: []string{"invalid --etcd-ca-file: " + junk + " holds no PEM certificate"}},
		{env: with(tlsEnv, map[string]string{"PINBOT_ETCD_CERT_FILE": certs.ClientKey}),
			want: []string{"invalid PINBOT_ETCD_CERT_FILE: " + certs.ClientKey + " holds no PEM certificate"}},
		{env: with(tlsEnv, map[string]string{"PINBOT_ETCD_KEY_FILE": other.ClientKey}),
			want: []string{"invalid PINBOT_ETCD_KEY_FILE: " + other.ClientKey + " is not the key of the certificate in " + certs.ClientCert}},
		{env: with(tlsEnv, map[string]string{"PINBOT_ETCD_KEY_FILE": certs.ClientCert}),
			want: []string{"invalid PINBOT_ETCD_KEY_FILE: " + certs.ClientCert + " holds no PEM private key"}},
		{env: with(tlsEnv, map[string]string{"PINBOT_ETCD_KEY_FILE": ""}),
			want: []string{"PINBOT_ETCD_CERT_FILE is set, so PINBOT_ETCD_KEY_FILE (or --etcd-key-file) is required"}},
		{env: with(full, nil), args: []string{"--etcd-key-file", certs.ClientKey},
			want: []string{"--etcd-key-file is set, so PINBOT_ETCD_CERT_FILE (or --etcd-cert-file) is required"}},
		{env: with(tlsEnv, map[string]string{"PINBOT_ETCD_ENDPOINTS": "https://10.0.0.1:2379,http://10.0.0.2:2379"}),
			want: []string{`PINBOT_ETCD_CA_FILE is set, so PINBOT_ETCD_ENDPOINTS must be https:// URLs, not "http://10.0.0.2:2379"`,
				`PINBOT_ETCD_CERT_FILE is set, so PINBOT_ETCD_ENDPOINTS must be https:// URLs`}},
		{env: with(full, map[string]string{"PINBOT_ETCD_ENDPOINTS": "http://10.0.0.1:2379"}), args: []string{"--etcd-ca-file", certs.CAFile},
			want: []string{`--etcd-ca-file is set, so PINBOT_ETCD_ENDPOINTS must be https:// URLs, not "http://10.0.0.1:2379"`}},
		{env: with(full, map[string]string{"PINBOT_ETCD_ENDPOINTS": "https://10.0.0.1:2379,http://10.0.0.2:2379"}),
			want: []string{"invalid PINBOT_ETCD_ENDPOINTS: they mix http:// and https:// URLs"}},
		{env: with(tlsEnv, map[string]string{"PINBOT_ETCD_PASSWORD_FILE": ""}),
			want: []string{"PINBOT_ETCD_USERNAME is set, so PINBOT_ETCD_PASSWORD_FILE (or --etcd-password-file) is required"}},
		{env: with(tlsEnv, map[string]string{"PINBOT_ETCD_PASSWORD_FILE": missing}),
			want: []string{"invalid PINBOT_ETCD_PASSWORD_FILE: stat " + missing + ": no such file or directory"}},
		{env: with(botEnv(t, dir), map[string]string{"PINBOT_ETCD_CERT_FILE": certs.ClientCert}),
			want: []string{"PINBOT_ETCD_CERT_FILE is set but PINBOT_ETCD_ENDPOINTS (or --etcd-endpoints) is not"}},
	}
	if runtime.GOOS != "windows" {
		open := filepath.Join(t.TempDir(), "open.password")
		if err := os.WriteFile(open, []byte("pw\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, struct {
			env  map[string]string
			args []string
			want []string
		}{env: with(tlsEnv, map[string]string{"PINBOT_ETCD_PASSWORD_FILE": open}),
			want: []string{"PINBOT_ETCD_PASSWORD_FILE: password file " + open + " has mode 0644"}})
	}
	for i, tt := range tests {
		_, err := validate(tt.env, tt.args...)
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("step %d: %v, want an error containing %q", i, err, w)
			}
		}
	}
	// The program refuses them as usage errors, before it starts.
	r := pinbot(t, "", with(tlsEnv, map[string]string{"PINBOT_ETCD_KEY_FILE": other.ClientKey}))
	r.wantCode(t, "a key of another certificate", exitUsage)
	if w := "invalid PINBOT_ETCD_KEY_FILE"; !strings.Contains(r.stderr, w) {
		t.Errorf("stderr = %q, want it to contain %q", r.stderr, w)
	}
	r.checkNoSecrets(t, "an etcd configuration error")
}

// TestClusterStatusTLS: cluster status reaches an etcd that serves TLS
// alone and admits only client certificates its CA signed, with the
// member's settings; without the client certificate, or trusting
// another CA, it is refused at once, saying why; TLS files with http://
// endpoints are a usage error.
func TestClusterStatusTLS(t *testing.T) {
	t.Parallel()
	certs, other := etcdtest.NewCerts(t), etcdtest.NewCerts(t)
	etcd := etcdtest.Start(t, 1, etcdtest.ClientTLS(certs))
	env := map[string]string{
		"PINBOT_ETCD_ENDPOINTS": strings.Join(etcd.SecureEndpoints(), ","),
		"PINBOT_ETCD_CA_FILE":   certs.CAFile, "PINBOT_ETCD_CERT_FILE": certs.ClientCert, "PINBOT_ETCD_KEY_FILE": certs.ClientKey,
	}
	r := pinbot(t, "", env, "cluster", "status")
	r.wantCode(t, "cluster status over TLS", exitOK)
	if !strings.Contains(r.stdout, "No pinbot cluster in this etcd") {
		t.Fatalf("cluster status over TLS:\n%s", r.stdout)
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no client certificate", with(env, map[string]string{"PINBOT_ETCD_CERT_FILE": "", "PINBOT_ETCD_KEY_FILE": ""}), "tls: certificate required"},
		{"trusting another CA", with(env, map[string]string{"PINBOT_ETCD_CA_FILE": other.CAFile}), "certificate signed by unknown authority"},
	} {
		start := time.Now()
		r := pinbot(t, "", c.env, "cluster", "status")
		r.wantCode(t, "cluster status, "+c.name, exitFailure)
		if !strings.Contains(r.stderr, c.want) {
			t.Errorf("cluster status, %s: stderr = %q, want it to contain %q", c.name, r.stderr, c.want)
		}
		if took := time.Since(start); took > app.DefaultEtcdDialTimeout {
			t.Errorf("cluster status, %s: refused after %v, want within the dial timeout", c.name, took)
		}
	}
	r = pinbot(t, "", with(env, map[string]string{"PINBOT_ETCD_ENDPOINTS": strings.Join(etcd.Endpoints(), ",")}), "cluster", "status")
	r.wantCode(t, "cluster status, TLS files with http:// endpoints", exitUsage)
	if w := "PINBOT_ETCD_CA_FILE is set, so PINBOT_ETCD_ENDPOINTS must be https:// URLs"; !strings.Contains(r.stderr, w) {
		t.Errorf("cluster status, TLS files with http:// endpoints: stderr = %q, want it to contain %q", r.stderr, w)
	}
}
