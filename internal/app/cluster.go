package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/links/etcdlinks"
	"github.com/pinbot/pinbot/internal/cluster"
	"github.com/pinbot/pinbot/internal/clusterconf"
	"github.com/pinbot/pinbot/internal/clusterengine"
	"github.com/pinbot/pinbot/internal/clusterrpc"
	"github.com/pinbot/pinbot/internal/metrics"
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
	// Clock stamps the peers' calls and answers, against which the
	// members' clocks are compared (nil: the system clock). Tests set
	// one ahead or behind to play a member whose clock is off.
	Clock clusterrpc.Clock
}

// peerMethods are the methods the peers' server serves (its handlers
// below): the values of the peer metrics' method label, beside pings.
var peerMethods = []string{"pin", "engine", "boards"}

// maxSkew bounds how far the members' clocks may disagree: the engine
// counts every pin for the window plus maxSkew, and a member whose
// clock is further from a live peer's is not ready (skewCheck).
const maxSkew = clusterengine.DefaultMaxSkew

// How the members' clocks are compared: every skewEvery, a member pings
// each live peer (at most skewPingTimeout each), and judges by the
// measures of the last skewKeep alone.
const (
	skewEvery       = 5 * time.Second
	skewPingTimeout = 2 * time.Second
	skewKeep        = 3 * skewEvery
)

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

	cm := a.Metrics.Cluster(peerMethods)
	ecfg.Observer = cm.Engine()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: cc.Endpoints, DialTimeout: cc.DialTimeout, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(timeEtcd(cm))},
	})
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
		Member:     cluster.Config{Member: cc.Member, Addr: cc.Addr, LeaseTTL: cc.LeaseTTL, Log: cfg.Log, Observer: cm},
		Engine:     ecfg,
		MaxSkew:    maxSkew,
		Log:        cfg.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("app: cluster: joining: %w", err)
	}
	a.node, a.Engine, a.rules = node, node.Engine, node.Store
	a.push("the cluster membership and engine", EngineCloseTimeout, node.Close)
	cm.WatchMember(func() metrics.MemberSummary {
		st := node.Member.Status()
		return metrics.MemberSummary{Held: st.Held, Members: st.Members, Remaining: st.Remaining}
	})

	rpcLog := cfg.Log.With().Str("component", "peers").Logger()
	clock := cc.Clock
	if clock == nil {
		clock = clusterrpc.SystemClock{}
	}
	srv, err := clusterrpc.NewServer(cc.Key, cc.Member, clock, rpcLog, clusterrpc.WithObserver(cm.Peers()))
	if err != nil {
		return nil, fmt.Errorf("app: cluster: %w", err)
	}
	client, err := clusterrpc.NewClient(cc.Key, cc.Member, clock, clusterrpc.WithLog(rpcLog), clusterrpc.WithObserver(cm.Peers()))
	if err != nil {
		return nil, fmt.Errorf("app: cluster: %w", err)
	}
	skew := &skewCheck{client: client, member: node.Member, self: cc.Member, clock: clock, maxSkew: maxSkew, log: rpcLog}
	cm.WatchClocks(skew.offsets)
	peers := &peers{node: node, client: client, self: cc.Member, log: rpcLog, metrics: cm, skew: skew}
	srv.Handle("pin", peers.handle("pin"))
	srv.Handle("engine", peers.handle("engine"))
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
	sctx, stopSkew := context.WithCancel(context.Background())
	skewDone := make(chan struct{})
	go func() {
		defer close(skewDone)
		skew.run(sctx, skewEvery)
	}()
	a.push("the clock skew check", 0, func(context.Context) error {
		stopSkew()
		<-skewDone
		return nil
	})
	return peers, nil
}

// timeEtcd is a gRPC interceptor timing each attempt of the etcd
// client's unary requests (its own retries wrap it) into cm.
func timeEtcd(cm *metrics.ClusterMetrics) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		start := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		cm.EtcdRequest(method, time.Since(start), err)
		return err
	}
}

// peers is the bot's Peers over the cluster: the owner of an account is
// the member holding its partition, reached through clusterrpc.
type peers struct {
	node    *clusterengine.Node
	client  *clusterrpc.Client
	self    string
	log     zerolog.Logger
	metrics *metrics.ClusterMetrics
	skew    *skewCheck
	bot     atomic.Pointer[bot.Bot] // set once built; calls before then are refused
}

func (p *peers) Serves(account string) bool { return p.node.Serves(account) }

func (p *peers) Forward(ctx context.Context, account, method string, body []byte) ([]byte, error) {
	ans, err := p.forward(ctx, account, method, body)
	p.metrics.Forwarded(method, forwardOutcome(err))
	return ans, err
}

func (p *peers) forward(ctx context.Context, account, method string, body []byte) ([]byte, error) {
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

// forwardOutcome is the metrics' outcome of a Forward that returned err
// (metrics.ForwardOutcomes).
func forwardOutcome(err error) string {
	var re *clusterrpc.RemoteError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, bot.ErrNotForwarded):
		return "refused"
	case errors.As(err, &re) && !re.Refused:
		return "error"
	}
	return "unknown"
}

// ready names what keeps the member from serving, for /readyz: its
// membership's trouble and a peer's clock too far from its own.
func (p *peers) ready() []string {
	return append(clusterReady(p.node), p.skew.failing()...)
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

// skewCheck compares this member's clock with its live peers', from the
// offsets clusterrpc measures (see its package documentation, "Clock
// offsets"). A peer's clock further than maxSkew from this member's, by
// a recent measure, makes the member not ready and is logged once per
// episode; so is the recovery. The member keeps its partitions all the
// same: their writes stay fenced, and every pin counts for the window
// plus maxSkew, so a clock off by more costs precision, never the
// limit. It is safe for simultaneous use.
type skewCheck struct {
	client  *clusterrpc.Client
	member  *cluster.Member
	self    string
	clock   clusterrpc.Clock // the client's: Offset.At is read on it
	maxSkew time.Duration
	log     zerolog.Logger

	mu sync.Mutex
	// beyond is the peer found furthest off at the last judgement, while
	// beyond maxSkew; "" when every peer is within it.
	beyond string
}

// run measures and judges every interval until ctx ends.
func (s *skewCheck) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// round pings every live peer at once, then judges the offsets.
func (s *skewCheck) round(ctx context.Context) {
	var wg sync.WaitGroup
	for _, m := range s.member.Members() {
		if m.ID == s.self || m.Addr == "" {
			continue
		}
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, skewPingTimeout)
			defer cancel()
			// A peer refusing the ping (its clock too far from this
			// one's) still answers with its clock: the offset is kept.
			if _, err := s.client.Ping(pctx, m.Addr); err != nil && ctx.Err() == nil {
				s.log.Debug().Err(err).Str("peer", m.ID).Msg("pinging a peer to compare clocks failed")
			}
		})
	}
	wg.Wait()
	s.judge()
}

// offsets returns the recent measures of the live peers' clocks, by
// member id.
func (s *skewCheck) offsets() map[string]clusterrpc.Offset {
	recent := clusterrpc.Recent(s.client.Offsets(), s.clock.Now().Add(-skewKeep))
	out := make(map[string]clusterrpc.Offset, len(recent))
	for _, m := range s.member.Members() {
		if o, ok := recent[m.ID]; ok && m.ID != s.self {
			out[m.ID] = o
		}
	}
	return out
}

// judge checks the offsets against maxSkew, logging an episode's start
// and end.
func (s *skewCheck) judge() {
	s.mu.Lock()
	defer s.mu.Unlock()
	offsets := s.offsets()
	ok, worst := clusterrpc.WithinSkew(offsets, s.maxSkew)
	was := s.beyond
	s.beyond = ""
	if !ok {
		s.beyond = worst
	}
	switch {
	case !ok && was == "":
		o := offsets[worst]
		s.log.Error().Str("peer", worst).Dur("offset", o.Offset).Dur("rtt", o.RTT).Dur("max_skew", s.maxSkew).
			Msg("a peer's clock is further from this member's than the members' clocks may disagree: this member is not ready until it is fixed (check NTP on both)")
	case ok && was != "":
		s.log.Info().Str("peer", was).Dur("max_skew", s.maxSkew).Msg("the peers' clocks are back within the bound")
	}
}

// failing names the peer whose clock is too far off, for /readyz.
func (s *skewCheck) failing() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.beyond == "" {
		return nil
	}
	return []string{fmt.Sprintf("clock skew with %s beyond %v", s.beyond, s.maxSkew)}
}
