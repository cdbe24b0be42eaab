package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// adminTokenSample is a token that the admin-token tests write; it must
// never be printed.
const adminTokenSample = "admin-token-0123456789abcdef"

// writeFile writes content to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeMode writes content to name in dir with mode perm (whatever the
// umask) and returns its path.
func writeMode(t *testing.T, dir, name, content string, perm os.FileMode) string {
	t.Helper()
	path := writeFile(t, dir, name, content)
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadAdminToken: the file's one line, without its line break.
func TestReadAdminToken(t *testing.T) {
	dir := t.TempDir()
	for i, content := range []string{adminTokenSample, adminTokenSample + "\n", adminTokenSample + "\r\n", adminTokenSample + "\n\n"} {
		s := setting{opt: &adminTokenFileOption, value: writeFile(t, dir, "t", content), from: "PINBOT_ADMIN_TOKEN_FILE"}
		got, err := readAdminToken(&s)
		if err != nil || string(got) != adminTokenSample {
			t.Errorf("step %d: %q, %v", i, got, err)
		}
	}
}

// TestAdminTokenFileErrors: a bad token file is refused with exit status
// 2 and a message naming the setting, before anything starts, without
// showing the token; every problem is listed with the others.
func TestAdminTokenFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	full := botEnv(t, dir)
	missing := filepath.Join(dir, "none.token")
	for i, c := range []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{env: with(full, map[string]string{"PINBOT_ADMIN_TOKEN_FILE": missing}),
			want: []string{"PINBOT_ADMIN_TOKEN_FILE: token file " + missing + " does not exist", "head -c 24 /dev/urandom | base64"}},
		{env: full, args: []string{"--admin-token-file", dir},
			want: []string{"--admin-token-file: " + dir + " is not a regular file"}},
		{env: with(full, map[string]string{"PINBOT_ADMIN_TOKEN_FILE": writeFile(t, dir, "empty", "")}),
			want: []string{"PINBOT_ADMIN_TOKEN_FILE: token file " + filepath.Join(dir, "empty") + " is empty"}},
		{env: with(full, map[string]string{"PINBOT_ADMIN_TOKEN_FILE": writeFile(t, dir, "newline", "\n")}),
			want: []string{"is empty"}},
		{env: with(full, map[string]string{"PINBOT_ADMIN_TOKEN_FILE": writeFile(t, dir, "two", adminTokenSample+"\n"+adminTokenSample)}),
			want: []string{"holds spaces, line breaks or control characters"}},
		{env: with(full, map[string]string{"PINBOT_ADMIN_TOKEN_FILE": writeFile(t, dir, "space", "admin token 0123456789")}),
			want: []string{"holds spaces"}},
		{env: with(full, map[string]string{"PINBOT_ADMIN_TOKEN_FILE": writeFile(t, dir, "short", "short\n")}),
			want: []string{"is 5 bytes long; want at least 16"}},
		// Listed with the other problems.
		{env: with(full, map[string]string{"PINBOT_ADMIN_TOKEN_FILE": missing, "PINBOT_SHARDS": "-1"}),
			want: []string{"2 problems with the configuration", "does not exist", "invalid PINBOT_SHARDS"}},
	} {
		r := pinbot(t, "", c.env, c.args...)
		r.wantCode(t, strings.Join(c.args, " "), exitUsage)
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("step %d: stderr = %q, want it to contain %q", i, r.stderr, w)
			}
		}
		if strings.Contains(r.stdout+r.stderr, adminTokenSample) {
			t.Errorf("step %d: the token was printed:\n%s", i, r.stderr)
		}
		r.checkNoSecrets(t, "an admin token error")
	}
}

// TestAdminTokenFileMode: a token file its group or others may read or
// change is refused, as the key file is, with exit status 2 and how to
// fix it; one readable by its owner alone is taken.
func TestAdminTokenFileMode(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("Windows file modes do not say who may read a file")
	}
	dir := t.TempDir()
	full := botEnv(t, dir)
	for i, c := range []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{env: with(full, map[string]string{"PINBOT_ADMIN_TOKEN_FILE": writeMode(t, dir, "group", adminTokenSample, 0o640)}),
			want: []string{"PINBOT_ADMIN_TOKEN_FILE: token file " + filepath.Join(dir, "group") + " has mode 0640: " +
				"others than its owner may read or change it; run: chmod 600 " + filepath.Join(dir, "group")}},
		{env: full, args: []string{"--admin-token-file", writeMode(t, dir, "world", adminTokenSample, 0o644)},
			want: []string{"--admin-token-file: token file " + filepath.Join(dir, "world") + " has mode 0644"}},
		{env: with(full, map[string]string{"PINBOT_ADMIN_TOKEN_FILE": writeMode(t, dir, "all", adminTokenSample+"\n", 0o666)}),
			want: []string{"has mode 0666: others than its owner may read or change it"}},
		{env: with(full, map[string]string{"PINBOT_ADMIN_TOKEN_FILE": writeMode(t, dir, "writable", adminTokenSample, 0o620)}),
			want: []string{"has mode 0620"}},
	} {
		r := pinbot(t, "", c.env, c.args...)
		r.wantCode(t, strings.Join(c.args, " "), exitUsage)
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("step %d: stderr = %q, want it to contain %q", i, r.stderr, w)
			}
		}
		if strings.Contains(r.stdout+r.stderr, adminTokenSample) {
			t.Errorf("step %d: the token was printed:\n%s", i, r.stderr)
		}
	}
	for _, perm := range []os.FileMode{0o600, 0o400} {
		path := writeMode(t, dir, fmt.Sprintf("own-%o", perm), adminTokenSample, perm)
		s := setting{opt: &adminTokenFileOption, value: path, from: "PINBOT_ADMIN_TOKEN_FILE"}
		if got, err := readAdminToken(&s); err != nil || string(got) != adminTokenSample {
			t.Errorf("mode %04o: %q, %v; want the token", perm, got, err)
		}
	}
}

// TestAdminTokenFileIgnoredInSandbox: the sandbox says it ignores the
// setting.
func TestAdminTokenFileIgnoredInSandbox(t *testing.T) {
	st := newSettings(func(k string) string {
		if k == "PINBOT_ADMIN_TOKEN_FILE" {
			return "admin.token"
		}
		return ""
	})
	if got := st.ignoredInSandbox(); len(got) != 1 || got[0] != "PINBOT_ADMIN_TOKEN_FILE" {
		t.Fatalf("ignored in the sandbox: %q", got)
	}
}
