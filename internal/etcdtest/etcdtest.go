// Package etcdtest runs etcd clusters for tests, on loopback with free
// ports and temporary directories, for the packages that keep state in
// etcd (persistence/etcdstore, internal/cluster) and for the cluster
// scenarios.
//
// Start runs the members inside the test process, with the etcd server
// pinbot's go.mod names. StartBinary runs each member as a process of an
// etcd executable, such as Debian's (DebianEtcd), to test the client
// against the servers operators run; its members can also be killed.
package etcdtest

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pinbot/pinbot/internal/loopback"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// Cluster is an etcd cluster, of members inside the test process (Start)
// or of processes (StartBinary). Its methods are safe for simultaneous
// use.
type Cluster struct {
	t      TB
	token  string
	opts   []Option // every start's, Restart's after them
	binary string   // the executable of StartBinary's members; "" for Start's

	mu      sync.Mutex
	members []*member
}

type member struct {
	name       string
	dir        string
	peerURL    url.URL
	clientURL  url.URL
	etcd       *embed.Etcd // Start's, nil while stopped
	proc       *process    // StartBinary's, nil while stopped
	log        *tail       // StartBinary's member's own log
	startedOut bool        // started once: a restart joins as existing
}

// Option adjusts a member's configuration before it starts.
type Option func(*embed.Config)

// QuotaBytes sets the members' backend quota (etcd refuses writes with
// "database space exceeded" beyond it).
func QuotaBytes(n int64) Option {
	return func(c *embed.Config) { c.QuotaBackendBytes = n }
}

// Starter starts a cluster of n members for a test: Start, or what
// Binary returns. Tests written against a Starter run over either.
type Starter func(t TB, n int, opts ...Option) *Cluster

var _ Starter = Start

// Start starts a cluster of n members inside the test process and waits
// until it has a leader. The members stop when the test ends.
func Start(t TB, n int, opts ...Option) *Cluster {
	t.Helper()
	c := newCluster(t, n, "", opts)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range c.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.start(i, opts)
		}()
	}
	wg.Wait()
	t.Cleanup(c.Close)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("etcdtest: member %d: %v", i, err)
		}
	}
	return c
}

// newCluster returns a cluster of n members, none started, with a port
// pair and a directory each.
func newCluster(t TB, n int, binary string, opts []Option) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("etcdtest: %d members", n)
	}
	c := &Cluster{
		t:      t,
		token:  fmt.Sprintf("pinbot-test-%d", time.Now().UnixNano()),
		opts:   opts,
		binary: binary,
	}
	for i := 0; i < n; i++ {
		dir := t.TempDir()
		if binary != "" {
			// etcd creates its data directory itself, private, where it
			// warns of the test directory's permissions.
			dir = filepath.Join(dir, "data")
		}
		c.members = append(c.members, &member{
			name:      fmt.Sprintf("m%d", i),
			dir:       dir,
			peerURL:   url.URL{Scheme: "http", Host: freeAddr(t)},
			clientURL: url.URL{Scheme: "http", Host: freeAddr(t)},
		})
	}
	return c
}

func (c *Cluster) initialCluster() string {
	parts := make([]string, len(c.members))
	for i, m := range c.members {
		parts[i] = m.name + "=" + m.peerURL.String()
	}
	return strings.Join(parts, ",")
}

// config returns member m's configuration before options.
func (c *Cluster) config(m *member) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenPeerUrls = []url.URL{m.peerURL}
	cfg.AdvertisePeerUrls = []url.URL{m.peerURL}
	cfg.ListenClientUrls = []url.URL{m.clientURL}
	cfg.AdvertiseClientUrls = []url.URL{m.clientURL}
	cfg.InitialCluster = c.initialCluster()
	cfg.InitialClusterToken = c.token
	cfg.ClusterState = embed.ClusterStateFlagNew
	if m.startedOut {
		cfg.ClusterState = embed.ClusterStateFlagExisting
	}
	cfg.LogLevel = "fatal" // a member closing logs its listeners' errors
	cfg.TickMs = 50
	cfg.ElectionMs = 500
	return cfg
}

func (c *Cluster) start(i int, opts []Option) error {
	c.mu.Lock()
	m := c.members[i]
	if m.etcd != nil || m.proc != nil {
		c.mu.Unlock()
		return nil
	}
	base, cfg := c.config(m), c.config(m)
	for _, o := range opts {
		o(cfg)
	}
	c.mu.Unlock()

	if c.binary != "" {
		return c.startProcess(i, base, cfg)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return err
	case <-time.After(30 * time.Second):
		e.Close()
		return fmt.Errorf("not ready after 30s")
	}
	c.mu.Lock()
	m.etcd, m.startedOut = e, true
	c.mu.Unlock()
	return nil
}

// Endpoints returns the client URLs of every member, running or not.
func (c *Cluster) Endpoints() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	eps := make([]string, len(c.members))
	for i, m := range c.members {
		eps[i] = m.clientURL.String()
	}
	return eps
}

// Client returns a client of the whole cluster, closed when the test ends.
func (c *Cluster) Client() *clientv3.Client {
	c.t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      nopLogger(),
	})
	if err != nil {
		c.t.Fatalf("etcdtest: client: %v", err)
	}
	c.t.Cleanup(func() { cli.Close() })
	return cli
}

// Stop stops member i (its data stays for Restart). A process member
// gets SIGTERM, as a service manager stops etcd.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	m := c.members[i]
	e, p := m.etcd, m.proc
	m.etcd, m.proc = nil, nil
	c.mu.Unlock()
	if e != nil {
		e.Close()
	}
	if p != nil {
		if err := p.stop(syscall.SIGTERM, stopGrace); err != nil {
			c.t.Errorf("etcdtest: stop member %d: %v", i, err)
		}
	}
}

// Kill kills member i with SIGKILL, a crash with no shutdown at all (its
// data stays for Restart). Only StartBinary's members can be killed.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	if c.binary == "" {
		c.t.Fatalf("etcdtest: Kill(%d): members inside the test process cannot be killed: start the cluster with StartBinary", i)
	}
	c.mu.Lock()
	m := c.members[i]
	p := m.proc
	m.proc = nil
	c.mu.Unlock()
	if p != nil {
		if err := p.stop(syscall.SIGKILL, stopGrace); err != nil {
			c.t.Errorf("etcdtest: kill member %d: %v", i, err)
		}
	}
}

// Restart starts member i again after Stop or Kill, with its data, under
// the options it started with followed by opts.
func (c *Cluster) Restart(i int, opts ...Option) {
	c.t.Helper()
	if err := c.start(i, append(slices.Clip(c.opts), opts...)); err != nil {
		c.t.Fatalf("etcdtest: restart member %d: %v", i, err)
	}
}

// Leader returns the index of the member that is leader, or -1.
func (c *Cluster) Leader() int {
	if c.binary != "" {
		return c.processLeader()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.members {
		if m.etcd != nil && m.etcd.Server.Leader() == m.etcd.Server.MemberID() {
			return i
		}
	}
	return -1
}

// WaitLeader waits until a running member is leader.
func (c *Cluster) WaitLeader(ctx context.Context) (int, error) {
	for {
		if i := c.Leader(); i >= 0 {
			return i, nil
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close stops every member. StartBinary's are killed, all at once: a
// leader stopped gracefully waits, for seconds, to hand its leadership
// to followers that are stopping too.
func (c *Cluster) Close() {
	if c.binary == "" {
		for i := range c.members {
			c.Stop(i)
		}
		return
	}
	var wg sync.WaitGroup
	for i := range c.members {
		wg.Go(func() { c.Kill(i) })
	}
	wg.Wait()
}

// freeAddr is an address kept by a member across its restarts (see
// package loopback).
func freeAddr(t TB) string {
	t.Helper()
	addr, err := loopback.Addr()
	if err != nil {
		t.Fatalf("etcdtest: free port: %v", err)
	}
	return addr
}

// TB is what the package needs of its caller: testing.TB has it, and so
// can a program running a cluster outside tests (cmd/devcluster), whose
// Fatalf ends what it was doing.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
	TempDir() string
	Failed() bool
}
