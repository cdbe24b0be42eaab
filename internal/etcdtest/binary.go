package etcdtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// DebianPath is where Debian's etcd-server package installs etcd.
const DebianPath = "/usr/bin/etcd"

// RequireEtcdEnv, when "1", makes DebianEtcd fail the test instead of
// skipping it when etcd is not installed: make test sets it after make
// etcd-deps.
const RequireEtcdEnv = "PINBOT_REQUIRE_ETCD"

// stopGrace is how long a member process has to exit after a signal
// before it is killed.
const stopGrace = 20 * time.Second

// DebianEtcd returns DebianPath, skipping the test when no executable is
// there unless RequireEtcdEnv is "1", and then failing it. The version
// it runs is in the test's log.
func DebianEtcd(t testing.TB) string {
	t.Helper()
	return installed(t, DebianPath)
}

// installed is DebianEtcd of an executable at path.
func installed(t testing.TB, path string) string {
	t.Helper()
	if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		if os.Getenv(RequireEtcdEnv) == "1" {
			t.Fatalf("%s is not installed and %s=1: run make etcd-deps (apt-get install etcd-server)", path, RequireEtcdEnv)
		}
		t.Skipf("%s is not installed: run make etcd-deps (apt-get install etcd-server), or set %s=1 to fail instead of skipping", path, RequireEtcdEnv)
	}
	if v, err := Version(path); err == nil {
		t.Logf("etcd %s at %s", v, path)
	}
	return path
}

// Version returns the server version the etcd executable at path
// reports, such as "3.4.23".
func Version(path string) (string, error) {
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("etcdtest: %s --version: %w", path, err)
	}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(line, "etcd Version:"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("etcdtest: %s --version printed no version: %q", path, out)
}

// Binary returns a Starter of StartBinary's clusters of the etcd
// executable at path.
func Binary(path string) Starter {
	return func(t TB, n int, opts ...Option) *Cluster {
		t.Helper()
		return StartBinary(t, n, path, opts...)
	}
}

// StartBinary starts a cluster of n members, each a process of the etcd
// executable at path, run with the flags of etcd 3.4, and waits until it
// has a leader.
// The processes stop when the test ends, and die with the test process
// on Linux. Options set what the flags of etcd can: the heartbeat and
// election timeout, QuotaBytes, the transaction and request limits and
// UnsafeNoFsync (unknown to etcd 3.4); any other setting fails the test.
// A failing test logs each member's warnings and errors.
func StartBinary(t TB, n int, path string, opts ...Option) *Cluster {
	t.Helper()
	if path == "" {
		t.Fatalf("etcdtest: StartBinary with no executable")
	}
	c := newCluster(t, n, path, opts)
	for _, m := range c.members {
		m.log = &tail{max: 16 << 10}
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			for _, m := range c.members {
				t.Logf("etcd member %s's log:\n%s", m.name, m.log.String())
			}
		}
	})
	// The members start together: none is ready before a quorum runs.
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range c.members {
		wg.Go(func() { errs[i] = c.start(i, opts) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("etcdtest: member %d: %v", i, err)
		}
	}
	return c
}

// startProcess starts member i as a process with cfg, whose settings
// beyond base must have flags, and waits until it serves with a leader.
func (c *Cluster) startProcess(i int, base, cfg *embed.Config) error {
	args, err := flags(base, cfg)
	if err != nil {
		return err
	}
	c.mu.Lock()
	m := c.members[i]
	c.mu.Unlock()
	cmd := exec.Command(c.binary, args...)
	cmd.Env = processEnv()
	cmd.Stdout, cmd.Stderr = m.log, m.log
	setDeathSignal(cmd)
	p := &process{cmd: cmd, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := waitReady(ctx, m.clientURL.String(), p); err != nil {
		_ = p.stop(os.Kill, stopGrace)
		return fmt.Errorf("%w; its log:\n%s", err, m.log.String())
	}
	c.mu.Lock()
	m.proc, m.startedOut = p, true
	c.mu.Unlock()
	return nil
}

// flags returns the command line of a member configured as cfg, or an
// error naming a setting of cfg that differs from base and has no flag.
func flags(base, cfg *embed.Config) ([]string, error) {
	args := []string{
		"--name=" + cfg.Name,
		"--data-dir=" + cfg.Dir,
		"--listen-client-urls=" + cfg.ListenClientUrls[0].String(),
		"--advertise-client-urls=" + cfg.AdvertiseClientUrls[0].String(),
		"--listen-peer-urls=" + cfg.ListenPeerUrls[0].String(),
		"--initial-advertise-peer-urls=" + cfg.AdvertisePeerUrls[0].String(),
		"--initial-cluster=" + cfg.InitialCluster,
		"--initial-cluster-state=" + cfg.ClusterState,
		"--initial-cluster-token=" + cfg.InitialClusterToken,
		"--heartbeat-interval=" + strconv.FormatUint(uint64(cfg.TickMs), 10),
		"--election-timeout=" + strconv.FormatUint(uint64(cfg.ElectionMs), 10),
		// etcd 3.4 logs with capnslog unless told; warnings and errors
		// are what a failing test shows.
		"--logger=zap", "--log-outputs=stderr", "--log-level=warn",
	}
	// Each setting with a flag is copied into base as it is passed: what
	// still differs has none.
	if cfg.QuotaBackendBytes != base.QuotaBackendBytes {
		args = append(args, "--quota-backend-bytes="+strconv.FormatInt(cfg.QuotaBackendBytes, 10))
	}
	if cfg.MaxTxnOps != base.MaxTxnOps {
		args = append(args, "--max-txn-ops="+strconv.FormatUint(uint64(cfg.MaxTxnOps), 10))
	}
	if cfg.MaxRequestBytes != base.MaxRequestBytes {
		args = append(args, "--max-request-bytes="+strconv.FormatUint(uint64(cfg.MaxRequestBytes), 10))
	}
	if cfg.UnsafeNoFsync {
		args = append(args, "--unsafe-no-fsync")
	}
	seen := *base
	seen.TickMs, seen.ElectionMs = cfg.TickMs, cfg.ElectionMs
	seen.QuotaBackendBytes, seen.MaxTxnOps, seen.MaxRequestBytes = cfg.QuotaBackendBytes, cfg.MaxTxnOps, cfg.MaxRequestBytes
	seen.UnsafeNoFsync = cfg.UnsafeNoFsync
	if !reflect.DeepEqual(&seen, cfg) {
		return nil, fmt.Errorf("an option sets %s, which StartBinary cannot pass to etcd", differing(&seen, cfg))
	}
	return args, nil
}

// differing names the exported fields that differ between a and b.
func differing(a, b *embed.Config) string {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	var names []string
	for i := range va.NumField() {
		f := va.Type().Field(i)
		if f.IsExported() && !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			names = append(names, f.Name)
		}
	}
	if len(names) == 0 {
		return "an unexported setting"
	}
	return strings.Join(names, ", ")
}

// processEnv is the test process's environment without etcd's settings,
// which a member would take for flags, except ETCD_UNSUPPORTED_ARCH,
// which etcd needs on some architectures.
func processEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "ETCD_") && !strings.HasPrefix(kv, "ETCD_UNSUPPORTED_ARCH=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// process is a running member process.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once Wait returned
	err    error         // Wait's, set before exited closes
}

// stop sends sig and waits for the process to exit; after grace it is
// killed, and stop says so.
func (p *process) stop(sig os.Signal, grace time.Duration) error {
	_ = p.cmd.Process.Signal(sig) // fails only once the process is gone
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
		return nil
	case <-timer.C:
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	return fmt.Errorf("still running %v after %v: killed", grace, sig)
}

// status is what a member says of itself through etcd's JSON gateway.
type status struct {
	Header struct {
		MemberID uint64 `json:"member_id,string"`
	} `json:"header"`
	Leader  uint64 `json:"leader,string"` // 0: none known
	Version string `json:"version"`
}

// statusClient keeps no connection: members come and go.
var statusClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// memberStatus asks the member serving clients at clientURL for its
// status.
func memberStatus(ctx context.Context, clientURL string) (status, error) {
	var st status
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, clientURL+"/v3/maintenance/status", strings.NewReader("{}"))
	if err != nil {
		return st, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := statusClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return st, err
	}
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("status: %s: %s", resp.Status, bytes.TrimSpace(body.Bytes()))
	}
	if err := json.Unmarshal(body.Bytes(), &st); err != nil {
		return st, fmt.Errorf("status: %w", err)
	}
	return st, nil
}

// waitReady waits until the member at clientURL answers with a leader
// known. etcd answers clients only once the member has joined the
// cluster, which is what the embedded members' ReadyNotify tells.
func waitReady(ctx context.Context, clientURL string, p *process) error {
	var last error
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := memberStatus(actx, clientURL)
		cancel()
		switch {
		case err != nil:
			last = err
		case st.Leader == 0:
			last = errors.New("no leader")
		default:
			return nil
		}
		// A process that is starting does not say when it listens: it is
		// asked again shortly, unless it exited.
		select {
		case <-p.exited:
			return fmt.Errorf("exited while starting: %v", p.err)
		case <-ctx.Done():
			return fmt.Errorf("not ready after 30s: %v", last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// processLeader returns the index of the member process that says it is
// leader, or -1.
func (c *Cluster) processLeader() int {
	c.mu.Lock()
	var running []int
	for i, m := range c.members {
		if m.proc != nil {
			running = append(running, i)
		}
	}
	c.mu.Unlock()
	for _, i := range running {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := memberStatus(ctx, c.members[i].clientURL.String())
		cancel()
		if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberID {
			return i
		}
	}
	return -1
}

// tail keeps the last max bytes written to it. It is safe for
// simultaneous use.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}
