//go:build !race && linux

// The bot in the container opens a real disgo gateway connection to the
// Discord stand-in: like the other TestDisgoGateway* tests, this one runs
// without -race (in `make container-test`, not in `make test`).

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// containerTestEnv, set to 1, runs TestDisgoGatewayContainer. Building an
// image takes podman and root, and tens of seconds: make container-test
// sets it, make test does not.
const containerTestEnv = "PINBOT_CONTAINER_TEST"

// containerUID is the user the image runs pinbot as (USER in the
// Containerfile).
const containerUID = 65532

// containerfile is the image's definition, relative to this package.
const containerfile = "../../docs/deploy/Containerfile"

// TestDisgoGatewayContainer builds the runtime stage of
// docs/deploy/Containerfile with podman, around a static binary built
// here with the same flags (the build stage's golang image needs a
// registry this test does not reach), and runs it: as UID 65532, with
// its volume a host directory and the key file mounted read-only, the
// bot between stand-ins of Discord and Pinterest on the host's loopback.
// It checks /healthz and /readyz, that the data landed in the volume,
// that `podman stop` (the image's STOPSIGNAL) stops pinbot cleanly with
// exit status 0, that the running bot serves a backup to a process
// exec'ed in its container, and that other containers on the volume back the data
// directory up and restore it over itself (which needs the data
// directory's parent writable, so the volume is that parent).
//
// podman reads its configuration as usual: where its defaults do not
// work (a sandbox that forbids raising rlimits, say), CONTAINERS_CONF
// names a containers.conf that does.
func TestDisgoGatewayContainer(t *testing.T) {
	if os.Getenv(containerTestEnv) != "1" {
		t.Skipf("%s is not 1: run make container-test to build and run the container image", containerTestEnv)
	}
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Fatalf("%s is 1 but podman is not installed (apt-get install podman runc, or make container-deps)", containerTestEnv)
	}
	if os.Geteuid() != 0 {
		t.Fatalf("%s is 1 but the test is not root: it hands the volume and the key file to UID 65532, which needs root", containerTestEnv)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("%s is 1 but there is no go command to build the binary with", containerTestEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	image := buildImage(ctx, t, podman, goTool)

	root := t.TempDir()
	volume := filepath.Join(root, "volume")
	keyFile := filepath.Join(root, "pinbot.key")
	if err := os.Mkdir(volume, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{volume, keyFile} {
		if err := os.Chown(p, containerUID, containerUID); err != nil {
			t.Fatal(err)
		}
	}

	dc := discordtest.NewServer()
	defer dc.Close()
	ps := pinteresttest.NewServer()
	defer ps.Close()
	var env []string
	for _, kv := range standInEnv(t, dc, ps, ps.URL, "/run/secrets/pinbot.key", "") {
		if !strings.HasPrefix(kv, "PINBOT_DATA_DIR=") { // the image's default
			env = append(env, kv)
		}
	}
	var addr string
	for _, kv := range env {
		if a, ok := strings.CutPrefix(kv, "PINBOT_HTTP_ADDR="); ok {
			addr = a
		}
	}

	name := fmt.Sprintf("pinbot-test-%d", time.Now().UnixNano())
	mounts := []string{"-v", volume + ":/var/lib/pinbot", "-v", keyFile + ":/run/secrets/pinbot.key:ro"}
	args := append([]string{"run", "--rm", "--name", name, "--network", "host"}, mounts...)
	for _, kv := range env {
		args = append(args, "-e", kv)
	}
	c := startContainer(ctx, t, podman, name, append(args, image))

	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, c.stderr())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d %s, want 200", path, resp.StatusCode, body)
		}
	}
	fi, err := os.Stat(filepath.Join(volume, "data", "engine"))
	if err != nil {
		t.Fatalf("the engine store is not in the volume: %v", err)
	}
	if uid := fileUID(fi); uid != containerUID {
		t.Errorf("the engine store belongs to UID %d, want %d: pinbot does not run as the image's user", uid, containerUID)
	}

	// A backup of the running bot, through its socket, from a second
	// process in the container, as the image's user.
	online, err := exec.CommandContext(ctx, podman, "exec", name, "/usr/local/bin/pinbot", "backup", "/var/lib/pinbot/online.backup").Output()
	if err != nil || !strings.Contains(string(online), "through the pinbot running on it") {
		t.Errorf("pinbot backup in the running container: %v, said %q%s", err, online, exitStderr(err))
	}

	// podman stop sends the image's STOPSIGNAL, then SIGKILL after -t.
	if out, err := exec.CommandContext(ctx, podman, "stop", "-t", "60", name).CombinedOutput(); err != nil {
		t.Fatalf("podman stop: %v\n%s", err, out)
	}
	<-c.exited
	if c.err != nil {
		t.Fatalf("the container after podman stop: %v, want exit status 0\n%s", c.err, c.stderr())
	}
	if logs := c.stderr(); !strings.Contains(logs, `"message":"pinbot stopped"`) {
		t.Errorf("the container's logs lack the clean stop:\n%s", logs)
	}

	key := []string{"-e", "PINBOT_ENCRYPTION_KEY_FILE=/run/secrets/pinbot.key"}
	podmanRun := func(what string, args ...string) string {
		t.Helper()
		all := append(append(append([]string{"run", "--rm"}, mounts...), key...), image)
		out, err := exec.CommandContext(ctx, podman, append(all, args...)...).Output()
		if err != nil {
			t.Fatalf("%s in a container: %v\n%s%s", what, err, out, exitStderr(err))
		}
		return string(out)
	}
	out := podmanRun("pinbot backup", "backup", "/var/lib/pinbot/pinbot.backup")
	if !strings.Contains(out, "backed up /var/lib/pinbot/data from its stores") {
		t.Errorf("pinbot backup said %q", out)
	}
	out = podmanRun("pinbot restore", "restore", "--force", "/var/lib/pinbot/pinbot.backup")
	if !strings.Contains(out, "/var/lib/pinbot/data.before-restore-") {
		t.Errorf("pinbot restore said %q, want the data directory moved aside", out)
	}
	var accounts []listedAccount
	if out := podmanRun("pinbot accounts", "accounts", "--json"); json.Unmarshal([]byte(out), &accounts) != nil {
		t.Errorf("pinbot accounts --json said %q", out)
	}
}

// buildImage builds the static binary and the runtime stage of the
// Containerfile, and returns the image's name; the test removes it.
func buildImage(ctx context.Context, t *testing.T, podman, goTool string) string {
	t.Helper()
	def, err := os.ReadFile(containerfile)
	if err != nil {
		t.Fatal(err)
	}
	// The runtime stage is everything from the last FROM on.
	text := string(def)
	i := strings.LastIndex(text, "\nFROM ")
	if i < 0 || !strings.Contains(text[i:], "--from=build") {
		t.Fatalf("%s: no runtime stage copying from the build stage", containerfile)
	}
	runtimeStage := text[i+1:]

	dir := t.TempDir()
	build := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, "pinbot"), ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	certs, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if errors.Is(err, fs.ErrNotExist) {
		certs = nil // the stand-ins speak plain HTTP
	} else if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca-certificates.crt"), certs, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A stage named build holding what the real build stage leaves.
	local := "FROM scratch AS build\n" +
		"COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt\n" +
		"COPY pinbot /out/pinbot\n" +
		"COPY state /out/state\n\n" + runtimeStage
	if err := os.WriteFile(filepath.Join(dir, "Containerfile"), []byte(local), 0o644); err != nil {
		t.Fatal(err)
	}
	image := fmt.Sprintf("localhost/pinbot-test:%d", time.Now().UnixNano())
	out, err := exec.CommandContext(ctx, podman, "build", "-q", "--layers=false", "-t", image, "-f", filepath.Join(dir, "Containerfile"), dir).CombinedOutput()
	if err != nil {
		t.Fatalf("podman build: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(podman, "rmi", "-f", image).CombinedOutput(); err != nil {
			t.Logf("podman rmi %s: %v\n%s", image, err, out)
		}
	})
	var cfg []struct {
		Config struct {
			User       string
			StopSignal string
			Volumes    map[string]struct{}
		}
	}
	out, err = exec.CommandContext(ctx, podman, "image", "inspect", image).Output()
	if err != nil {
		t.Fatalf("podman image inspect: %v", err)
	}
	if err := json.Unmarshal(out, &cfg); err != nil || len(cfg) != 1 {
		t.Fatalf("podman image inspect: %v\n%s", err, out)
	}
	got := cfg[0].Config
	if _, ok := got.Volumes["/var/lib/pinbot"]; got.User != fmt.Sprintf("%d:%d", containerUID, containerUID) || !ok ||
		(got.StopSignal != "SIGTERM" && got.StopSignal != "15") {
		t.Errorf("image config: user %q, volumes %v, stop signal %q; want %d:%d, /var/lib/pinbot, SIGTERM",
			got.User, got.Volumes, got.StopSignal, containerUID, containerUID)
	}
	return image
}

// container is a `podman run` in the foreground, with its stderr (the
// bot's JSON log lines) kept.
type container struct {
	mu     sync.Mutex
	logs   strings.Builder
	exited chan struct{}
	err    error // of Wait, once exited
}

func (c *container) stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.logs.String()
}

// startContainer runs podman with args and waits until pinbot logs that
// it runs. The test removes the container if it is still there.
func startContainer(ctx context.Context, t *testing.T, podman, name string, args []string) *container {
	t.Helper()
	c := &container{exited: make(chan struct{})}
	cmd := exec.Command(podman, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr // podman's own messages, if any, go to the same pipe
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	running := make(chan struct{})
	go func() {
		defer close(c.exited)
		once := sync.Once{}
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			c.mu.Lock()
			c.logs.WriteString(sc.Text() + "\n")
			c.mu.Unlock()
			if strings.Contains(sc.Text(), `"message":"pinbot running"`) {
				once.Do(func() { close(running) })
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		c.err = cmd.Wait()
	}()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = exec.Command(podman, "rm", "-f", "-t", "0", name).Run()
			<-c.exited
		}
	})
	select {
	case <-running:
	case <-c.exited:
		t.Fatalf("the container exited before pinbot ran: %v\n%s", c.err, c.stderr())
	case <-ctx.Done():
		t.Fatalf("pinbot not running in the container: %v\n%s", ctx.Err(), c.stderr())
	}
	return c
}

// exitStderr returns the stderr an *exec.ExitError kept, if any.
func exitStderr(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

// fileUID returns the owner of the file fi describes.
func fileUID(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
