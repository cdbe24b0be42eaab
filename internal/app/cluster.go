package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/links/etcdlinks"
	"github.com/pinbot/pinbot/internal/cluster"
	"github.com/pinbot/pinbot/internal/clusterconf"
	"github.com/pinbot/pinbot/internal/clusterengine"
	"github.com/pinbot/pinbot/internal/clusterrpc"
	"github.com/pinbot/pinbot/internal/partition"
)

// ClusterConfig makes the program one member of a cluster (see
// docs/design.md, "Several processes"): the engine's state, the links
// and the tokens live in etcd, each account's work is done by the member
// owning its partition, and the others forward it there.
type ClusterConfig struct {
	// Endpoints are the etcd cluster's client URLs.
	Endpoints []string
	// Prefix is the etcd key prefix of this pinbot cluster ("/pinbot/"
	// when empty).
	Prefix string
	// Member is this member's id, unique in the cluster; Addr when empty.
	Member string
	// Addr is where peers reach this member: the address Listener
	// listens on, as the others can dial it.
	Addr string
	// Listener serves the peers' calls; Build takes it over.
	Listener net.Listener
	// Key is the peers' shared secret (at least 32 bytes): every call
	// between members is authenticated with it.
	Key []byte
	// Partitions is the partition count of a new cluster (0:
	// partition.DefaultCount); a member joining an existing one must
	// agree with it.
	Partitions int
	// LeaseTTL is the member's lease (0: cluster.DefaultLeaseTTL).
	LeaseTTL time.Duration
	// DialTimeout bounds the first connection to etcd (0: 5 s).
	DialTimeout time.Duration
}

// buildCluster opens the cluster's stores and joins it: the etcd client,
// the agreed settings, the links in etcd, the engine of a member and the
// peers' listener. It sets a.Links and a.Engine, and returns the bot's
// Peers.
func (a *App) buildCluster(cfg Config, ecfg actors.Config) (*peers, error) {
	cc := cfg.Cluster
	if cc.Member == "" {
		cc.Member = cc.Addr
	}
	if cc.Prefix == "" {
		cc.Prefix = "/pinbot/"
	}
	if cc.Partitions == 0 {
		cc.Partitions = partition.DefaultCount
	}
	if cc.DialTimeout == 0 {
		cc.DialTimeout = 5 * time.Second
	}
	switch {
	case len(cc.Endpoints) == 0:
		return nil, errors.New("app: cluster: no etcd endpoints")
	case cc.Addr == "" || cc.Listener == nil:
		return nil, errors.New("app: cluster: no address or listener for the peers")
	case len(cc.Key) < 32:
		return nil, fmt.Errorf("app: cluster: the cluster key has %d bytes, want at least 32", len(cc.Key))
	}
	keys := partition.NewKeys(cc.Prefix)
	ln := cc.Listener
	a.push("the peers' listener", 0, func(context.Context) error {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	})

	cli, err := clientv3.New(clientv3.Config{Endpoints: cc.Endpoints, DialTimeout: cc.DialTimeout, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("app: cluster: etcd client: %w", err)
	}
	a.push("the etcd client", 0, func(context.Context) error { return cli.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 4*cc.DialTimeout)
	defer cancel()
	settings, err := clusterconf.Agree(ctx, cli, keys, clusterconf.Settings{
		Partitions:    cc.Partitions,
		Limit:         ecfg.Limit,
		Window:        ecfg.Window,
		Lease:         ecfg.Lease,
		Shards:        cfg.Bot.Shards,
		EncryptionKey: clusterconf.KeyCheck(cfg.EncryptionKey, "encryption"),
		ClusterKey:    clusterconf.KeyCheck(cc.Key, "cluster"),
	})
	if err != nil {
		return nil, fmt.Errorf("app: cluster: %w", err)
	}

	lst, err := etcdlinks.Open(ctx, cli, keys, etcdlinks.Options{EncryptionKey: cfg.EncryptionKey}, cfg.Log)
	if err != nil {
		return nil, fmt.Errorf("app: cluster: the links in etcd: %w", err)
	}
	a.Links = lst
	a.push("the links in etcd", 0, func(context.Context) error { return lst.Close() })

	node, err := clusterengine.Start(ctx, clusterengine.Config{
		Client:     cli,
		Keys:       keys,
		Partitions: settings.Partitions,
		Member:     cluster.Config{Member: cc.Member, Addr: cc.Addr, LeaseTTL: cc.LeaseTTL, Log: cfg.Log},
		Engine:     ecfg,
		Log:        cfg.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("app: cluster: joining: %w", err)
	}
	a.node, a.Engine, a.rules = node, node.Engine, node.Store
	a.push("the cluster membership and engine", EngineCloseTimeout, node.Close)

	rpcLog := cfg.Log.With().Str("component", "peers").Logger()
	srv, err := clusterrpc.NewServer(cc.Key, cc.Member, clusterrpc.SystemClock{}, rpcLog)
	if err != nil {
		return nil, fmt.Errorf("app: cluster: %w", err)
	}
	client, err := clusterrpc.NewClient(cc.Key, cc.Member, clusterrpc.SystemClock{}, clusterrpc.WithLog(rpcLog))
	if err != nil {
		return nil, fmt.Errorf("app: cluster: %w", err)
	}
	peers := &peers{node: node, client: client, self: cc.Member, log: rpcLog}
	srv.Handle("pin", peers.handle("pin"))
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) {
			rpcLog.Error().Err(err).Msg("the peers' listener failed")
		}
	}()
	a.push("the peers' server", 10*time.Second, func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		client.Close()
		<-served
		return err
	})
	return peers, nil
}

// peers is the bot's Peers over the cluster: the owner of an account is
// the member holding its partition, reached through clusterrpc.
type peers struct {
	node   *clusterengine.Node
	client *clusterrpc.Client
	self   string
	log    zerolog.Logger
	bot    atomic.Pointer[bot.Bot] // set once built; calls before then are refused
}

func (p *peers) Serves(account string) bool { return p.node.Serves(account) }

func (p *peers) Forward(ctx context.Context, account, method string, body []byte) ([]byte, error) {
	owner, ok := p.node.Member.OwnerOf(account)
	if !ok {
		return nil, fmt.Errorf("%w: account %s has no owner yet", bot.ErrNotForwarded, account)
	}
	if owner.ID == p.self {
		// This member's view says it owns the partition, but it does not
		// serve it (acquiring, handing over, or past its deadline).
		return nil, fmt.Errorf("%w: account %s is changing hands here", bot.ErrNotForwarded, account)
	}
	ans, err := p.client.Call(ctx, owner.Addr, method, body)
	if err != nil && clusterrpc.IsRetryable(err) {
		return nil, fmt.Errorf("%w: %s: %w", bot.ErrNotForwarded, owner.ID, err)
	}
	return ans, err
}

// handle serves a peer's call of method through the bot; a refusal
// before any work reaches the caller as one (it may try again).
func (p *peers) handle(method string) func(ctx context.Context, from string, body []byte) ([]byte, error) {
	return func(ctx context.Context, from string, body []byte) ([]byte, error) {
		b := p.bot.Load()
		if b == nil {
			return nil, clusterrpc.Refuse("starting", "the bot is not running yet")
		}
		ans, err := b.HandlePeer(ctx, method, body)
		if errors.Is(err, bot.ErrNotForwarded) {
			return nil, clusterrpc.Refuse("not-owner", err.Error())
		}
		return ans, err
	}
}

// clusterReady names what keeps the member from serving, for /readyz.
func clusterReady(node *clusterengine.Node) []string {
	st := node.Member.Status()
	var failing []string
	switch {
	case st.Closing:
		failing = append(failing, "cluster member closing")
	case st.Lease == 0:
		failing = append(failing, "cluster lease not held")
	case st.Remaining == 0:
		failing = append(failing, "cluster lease past its serving deadline")
	case !st.Synced:
		failing = append(failing, "cluster view not following etcd")
	case !st.Ready:
		failing = append(failing, "cluster member not registered")
	}
	return failing
}
