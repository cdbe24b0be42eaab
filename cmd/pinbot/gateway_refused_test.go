//go:build !race && unix

// The bot process this test starts opens a real disgo gateway connection,
// whose close races with its heartbeat (upstream): the child is this test
// binary, so it must be built without -race. The test runs in
// `make gateway`.

package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// TestDisgoGatewayRefusedIdentifyFailsStart: the REST API accepts the
// token, but the gateway refuses IDENTIFY with a close code disgo does not
// retry (4004 Authentication failed). disgo's sharding only logs that, so
// pinbot checks its shards after opening them: it must not log "pinbot
// running" and stay up with no gateway connection, but exit with status 1
// (Discord refusing to start).
func TestDisgoGatewayRefusedIdentifyFailsStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	dc := discordtest.NewServer()
	defer dc.Close()
	other := discordtest.NewServer() // a gateway that knows another token
	defer other.Close()
	ps := pinteresttest.NewServer()
	defer ps.Close()

	dir := t.TempDir()
	addr := freeAddr(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), runMainEnv+"=1",
		discordTokenEnv+"="+dc.Token(),
		"PINBOT_DISCORD_API_URL="+dc.APIURL(),
		"PINBOT_DISCORD_GATEWAY_URL="+other.GatewayURL(),
		"PINBOT_SHARDS=1",
		"PINTEREST_CLIENT_ID="+ps.ClientID(),
		"PINTEREST_CLIENT_SECRET="+ps.ClientSecret(),
		"PINBOT_PINTEREST_API_URL="+ps.APIBase(),
		"PINBOT_PINTEREST_OAUTH_URL="+ps.AuthURL(),
		"PINBOT_HTTP_ADDR="+addr,
		"PINBOT_PUBLIC_URL=http://"+addr,
		"PINBOT_ENCRYPTION_KEY_FILE="+writeKey(t, dir, 32, 0o600),
		"PINBOT_DATA_DIR="+filepath.Join(dir, "data"),
		"PINBOT_LOG_LEVEL=info",
		"NO_COLOR=1",
	)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	defer stop()
	var logs strings.Builder
	running := false
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		logs.WriteString(line + "\n")
		if strings.Contains(line, `"message":"pinbot running"`) && !running {
			running = true
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	werr := cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("pinbot neither ran nor exited in time\n%s", logs.String())
	}
	if running {
		t.Fatalf("pinbot logged \"pinbot running\" although the gateway refused it (4004), and only stopped on SIGTERM (%v)\n%s",
			werr, logs.String())
	}
	if ee, ok := werr.(*exec.ExitError); !ok || ee.ExitCode() != exitFailure {
		t.Errorf("exit: %v, want status %d\n%s", werr, exitFailure, logs.String())
	}
}
