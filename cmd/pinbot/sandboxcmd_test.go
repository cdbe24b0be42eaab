package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxHTTPAddrRefused: the sandbox takes PINBOT_HTTP_ADDR (and
// --http-addr) as the bot does: a malformed address is a usage error
// and a taken one fails naming the setting, both before the sandbox
// starts.
func TestSandboxHTTPAddrRefused(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := filepath.Join(t.TempDir(), "data")

	r := pinbot(t, "quit\n", map[string]string{"PINBOT_HTTP_ADDR": "8080"}, "--data-dir", dir)
	r.wantCode(t, "sandbox on a malformed address", exitUsage)
	if want := `invalid PINBOT_HTTP_ADDR "8080": want HOST:PORT, such as 127.0.0.1:8080`; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}

	for _, c := range []struct {
		env  map[string]string
		args []string
		name string
	}{
		{env: map[string]string{"PINBOT_HTTP_ADDR": taken.Addr().String()}, name: "PINBOT_HTTP_ADDR"},
		{args: []string{"--http-addr", taken.Addr().String()}, name: "--http-addr"},
	} {
		r = pinbot(t, "quit\n", c.env, append([]string{"--data-dir", dir}, c.args...)...)
		r.wantCode(t, "sandbox on a taken address", exitFailure)
		if want := "pinbot: listening on " + c.name + " " + taken.Addr().String() + ": "; !strings.Contains(r.stderr, want) {
			t.Errorf("stderr = %q, want %q", r.stderr, want)
		}
		if strings.Contains(r.stderr, "ignores") {
			t.Errorf("the sandbox says it ignores a setting it uses: %s", r.stderr)
		}
	}
}
