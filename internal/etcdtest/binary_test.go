package etcdtest

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// TestFlags: the settings options may change become flags, and any other
// is refused by name rather than dropped.
func TestFlags(t *testing.T) {
	c := newCluster(t, 1, "etcd", nil)
	m := c.members[0]
	base := c.config(m)
	args, err := flags(base, c.config(m))
	if err != nil {
		t.Fatalf("flags of the defaults: %v", err)
	}
	for _, want := range []string{
		"--name=m0", "--data-dir=" + m.dir,
		"--listen-client-urls=" + m.clientURL.String(), "--advertise-client-urls=" + m.clientURL.String(),
		"--listen-peer-urls=" + m.peerURL.String(), "--initial-advertise-peer-urls=" + m.peerURL.String(),
		"--initial-cluster=m0=" + m.peerURL.String(), "--initial-cluster-state=new",
		"--initial-cluster-token=" + c.token, "--heartbeat-interval=50", "--election-timeout=500",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("flags %q lack %q", args, want)
		}
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--quota") || strings.HasPrefix(a, "--max-") || strings.HasPrefix(a, "--unsafe") {
			t.Errorf("flags of the defaults hold %q", a)
		}
	}

	cfg := c.config(m)
	for _, o := range []Option{QuotaBytes(2 << 20), func(c *embed.Config) {
		c.MaxTxnOps, c.MaxRequestBytes, c.UnsafeNoFsync, c.TickMs, c.ElectionMs = 32, 4096, true, 20, 200
	}} {
		o(cfg)
	}
	args, err = flags(base, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--quota-backend-bytes=2097152", "--max-txn-ops=32", "--max-request-bytes=4096", "--unsafe-no-fsync", "--heartbeat-interval=20", "--election-timeout=200"} {
		if !slices.Contains(args, want) {
			t.Errorf("flags %q lack %q", args, want)
		}
	}

	cfg = c.config(m)
	cfg.SnapshotCount, cfg.MaxTxnOps = 10, 64
	if _, err := flags(base, cfg); err == nil || !strings.Contains(err.Error(), "SnapshotCount") || strings.Contains(err.Error(), "MaxTxnOps") {
		t.Errorf("flags with SnapshotCount set = %v, want an error naming it alone", err)
	}
}

// TestBinaryCluster: a cluster of processes serves, reports its leader,
// elects another when the leader is killed, and the killed member comes
// back with what it had written.
func TestBinaryCluster(t *testing.T) {
	path := DebianEtcd(t)
	c := StartBinary(t, 3, path)
	cli := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	leader, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := memberStatus(ctx, c.Endpoints()[leader])
	if err != nil {
		t.Fatal(err)
	}
	if v, err := Version(path); err != nil || v != st.Version {
		t.Errorf("the server reports version %q, %s --version %q (%v)", st.Version, path, v, err)
	}

	c.Kill(leader)
	next, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatalf("no leader after the leader was killed: %v", err)
	}
	if next == leader {
		t.Fatalf("member %d, killed, is still leader", leader)
	}
	if _, err := cli.Put(ctx, "k", "v2"); err != nil {
		t.Fatalf("put with the leader killed: %v", err)
	}

	// The killed member is back with its data: asked alone, from its own
	// state, it holds the write made while it was down over the first.
	c.Restart(leader)
	one, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints()[leader : leader+1], DialTimeout: 5 * time.Second, Logger: nopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	resp, err := one.Get(ctx, "k", clientv3.WithSerializable())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v2" || resp.Kvs[0].Version != 2 {
		t.Fatalf("restarted member holds %v, want v2 at version 2", resp.Kvs)
	}

	c.Stop(next)
	if _, err := cli.Put(ctx, "k", "v3"); err != nil {
		t.Fatalf("put with the new leader stopped: %v", err)
	}
}

// TestInstalled: a missing etcd skips the test, or fails it when
// RequireEtcdEnv is "1".
func TestInstalled(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "etcd")
	for _, tt := range []struct {
		env           string
		skip, failure bool
	}{
		{"", true, false},
		{"0", true, false},
		{"1", false, true},
	} {
		t.Setenv(RequireEtcdEnv, tt.env)
		r := &recorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			installed(r, missing)
		}()
		<-done
		if r.skipped != tt.skip || r.failed != tt.failure {
			t.Errorf("%s=%q: skipped %v, failed %v (%q); want %v, %v", RequireEtcdEnv, tt.env, r.skipped, r.failed, r.msg, tt.skip, tt.failure)
		}
		if !strings.Contains(r.msg, "make etcd-deps") {
			t.Errorf("%s=%q: %q does not say how to install etcd", RequireEtcdEnv, tt.env, r.msg)
		}
	}
}

// recorder records a skip or a fatal failure and ends its goroutine, as
// the testing package does, without failing the test.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
