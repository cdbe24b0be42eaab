// Package etcdtest runs etcd clusters inside a test process, on loopback
// with free ports and temporary directories, for the packages that keep
// state in etcd (persistence/etcdstore, internal/cluster) and for the
// cluster scenarios.
package etcdtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// Cluster is an etcd cluster of embedded members. Its methods are safe for
// simultaneous use.
type Cluster struct {
	t     testing.TB
	token string

	mu      sync.Mutex
	members []*member
}

type member struct {
	name       string
	dir        string
	peerURL    url.URL
	clientURL  url.URL
	etcd       *embed.Etcd // nil while stopped
	startedOut bool        // started once: a restart joins as existing
}

// Option adjusts a member's configuration before it starts.
type Option func(*embed.Config)

// QuotaBytes sets the members' backend quota (etcd refuses writes with
// "database space exceeded" beyond it).
func QuotaBytes(n int64) Option {
	return func(c *embed.Config) { c.QuotaBackendBytes = n }
}

// Start starts a cluster of n members and waits until it has a leader.
// The members stop when the test ends.
func Start(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("etcdtest: %d members", n)
	}
	c := &Cluster{t: t, token: fmt.Sprintf("pinbot-test-%d", time.Now().UnixNano())}
	for i := 0; i < n; i++ {
		c.members = append(c.members, &member{
			name:      fmt.Sprintf("m%d", i),
			dir:       t.TempDir(),
			peerURL:   url.URL{Scheme: "http", Host: freeAddr(t)},
			clientURL: url.URL{Scheme: "http", Host: freeAddr(t)},
		})
	}
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

func (c *Cluster) initialCluster() string {
	parts := make([]string, len(c.members))
	for i, m := range c.members {
		parts[i] = m.name + "=" + m.peerURL.String()
	}
	return strings.Join(parts, ",")
}

func (c *Cluster) start(i int, opts []Option) error {
	c.mu.Lock()
	m := c.members[i]
	if m.etcd != nil {
		c.mu.Unlock()
		return nil
	}
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
	for _, o := range opts {
		o(cfg)
	}
	c.mu.Unlock()

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

// Stop stops member i (its data stays for Restart).
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	e := c.members[i].etcd
	c.members[i].etcd = nil
	c.mu.Unlock()
	if e != nil {
		e.Close()
	}
}

// Restart starts member i again after Stop, with its data.
func (c *Cluster) Restart(i int, opts ...Option) {
	c.t.Helper()
	if err := c.start(i, opts); err != nil {
		c.t.Fatalf("etcdtest: restart member %d: %v", i, err)
	}
}

// Leader returns the index of the member that is leader, or -1.
func (c *Cluster) Leader() int {
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

// Close stops every member.
func (c *Cluster) Close() {
	for i := range c.members {
		c.Stop(i)
	}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdtest: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}
