package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"
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
	// Credentials are what the client checks etcd and proves itself
	// with (see EtcdConfig).
	Credentials EtcdCredentials
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
	// Join, when not nil, bounds the tries to join the cluster: while
	// etcd cannot be reached, or this member's previous run still holds
	// its id, Build tries again with a backoff until Join ends (the
	// program's stop signal). Nil: one try.
	Join context.Context
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
// clock is out of bound with its live peers gives up its partitions and
// is not ready (skewCheck).
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
	ccfg, err := EtcdConfig(cc.Endpoints, cc.Credentials, cc.DialTimeout)
	if err != nil {
		return nil, fmt.Errorf("app: cluster: %w", err)
	}
	ccfg.DialOptions = []grpc.DialOption{grpc.WithChainUnaryInterceptor(timeEtcd(cm))}
	cli, err := dialEtcd(cc, ccfg, cfg.Log)
	if err != nil {
		return nil, err
	}
	a.push("the etcd client", 0, func(context.Context) error { return cli.Close() })

	lst, node, err := a.join(cfg, cc, cli, keys, ecfg, cm)
	if err != nil {
		return nil, err
	}
	a.Links = lst
	a.push("the links in etcd", 0, func(context.Context) error { return lst.Close() })
	a.node, a.Engine, a.rules = node, node.Engine, node.Store
	a.push("the cluster membership and engine", EngineCloseTimeout, node.Close)
	cm.WatchMember(func() metrics.MemberSummary {
		st := node.Member.Status()
		return metrics.MemberSummary{Held: st.Held, Members: st.Members, Remaining: st.Remaining, Shards: st.HeldShards}
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
	cm.WatchSuspended(skew.suspended)
	peers := &peers{node: node, client: client, self: cc.Member, log: rpcLog, metrics: cm, skew: skew}
	for _, method := range peerMethods {
		srv.Handle(method, peers.handle(method))
	}
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

// Joining the cluster is tried again, while ClusterConfig.Join lives,
// after joinRetryMin, doubling up to joinRetryMax; each try is bounded
// by twice ClusterConfig.DialTimeout.
const (
	joinRetryMin = 250 * time.Millisecond
	joinRetryMax = 5 * time.Second
)

// join agrees on the cluster's settings, opens the links in etcd and
// starts the member's engine. While etcd cannot be reached, or the
// member's id is still held by its previous run's lease, it tries again
// with a backoff, logging each failure, until cc.Join ends (at once
// when cc.Join is nil); settings that differ from the cluster's end it
// at once.
func (a *App) join(cfg Config, cc *ClusterConfig, cli *clientv3.Client, keys partition.Keys, ecfg actors.Config, cm *metrics.ClusterMetrics) (*etcdlinks.Store, *clusterengine.Node, error) {
	wait := joinRetryMin
	for attempt := 1; ; attempt++ {
		lst, node, err := a.joinOnce(cfg, cc, cli, keys, ecfg, cm)
		if err == nil {
			return lst, node, nil
		}
		if cc.Join == nil || errors.Is(err, clusterconf.ErrMismatch) {
			return nil, nil, err
		}
		cfg.Log.Warn().Err(err).Int("attempt", attempt).Dur("retry_in", wait).
			Msg("joining the cluster failed: trying again (etcd unreachable, or this member's previous run still holds its id until its lease expires)")
		t := time.NewTimer(wait)
		select {
		case <-cc.Join.Done():
			t.Stop()
			return nil, nil, fmt.Errorf("%w (gave up: %w)", err, context.Cause(cc.Join))
		case <-t.C:
		}
		wait = min(2*wait, joinRetryMax)
	}
}

func (a *App) joinOnce(cfg Config, cc *ClusterConfig, cli *clientv3.Client, keys partition.Keys, ecfg actors.Config, cm *metrics.ClusterMetrics) (*etcdlinks.Store, *clusterengine.Node, error) {
	parent := context.Background()
	if cc.Join != nil {
		parent = cc.Join
	}
	ctx, cancel := context.WithTimeout(parent, 2*cc.DialTimeout)
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
		return nil, nil, fmt.Errorf("app: cluster: %w", err)
	}
	lst, err := etcdlinks.Open(ctx, cli, keys, etcdlinks.Options{EncryptionKey: cfg.EncryptionKey}, cfg.Log)
	if err != nil {
		return nil, nil, fmt.Errorf("app: cluster: the links in etcd: %w", err)
	}
	// The gateway's shards are leased with the partitions.
	shards, err := newShardHost(ctx, cli, keys, cc.Member, settings.Shards, cfg.Bot, cfg.Log)
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("app: cluster: %w", err), lst.Close())
	}
	a.shards = shards
	node, err := clusterengine.Start(ctx, clusterengine.Config{
		Client:     cli,
		Keys:       keys,
		Partitions: settings.Partitions,
		Member:     cluster.Config{Member: cc.Member, Addr: cc.Addr, LeaseTTL: cc.LeaseTTL, Log: cfg.Log, Observer: cm, Shards: shards.config()},
		Engine:     ecfg,
		MaxSkew:    maxSkew,
		Log:        cfg.Log,
	})
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("app: cluster: joining: %w", err), lst.Close())
	}
	shards.setTenure(node.Member.ShardTenure)
	return lst, node, nil
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

// processes returns how many processes share the bot's token: the live
// members, suspended ones included (they still send requests), for the
// bot's share of Discord's global REST limit.
func (p *peers) processes() int { return len(p.node.Member.Members()) }

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
// offsets"), and has the member give up its partitions while its own
// clock is the one out of bound (outOfBound): the member is suspended
// (cluster.Member.Suspend: its partitions handed over to the others, none
// acquired) and not ready, until its clock has been back within the
// bound for skewResumeRounds rounds in a row. A peer's clock found beyond
// maxSkew is logged once per episode, so is the recovery; a member that
// keeps its partitions stays ready. It is safe for simultaneous use.
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
	// out is the peers this member's clock was found beyond at the last
	// judgement that found it out of bound, while suspended; nil when not.
	out []string
	// within counts the rounds in a row found within the bound while
	// suspended.
	within int
}

// skewResumeRounds is how many rounds in a row a suspended member's clock
// must be found back within the bound before it takes partitions again:
// a clock that wavers about the bound does not move them every round.
const skewResumeRounds = 2

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
	s.judge(ctx)
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

// outOfBound says whether member self's clock is the one out of bound,
// from its offsets to its peers: when the peers it is beyond maxSkew from
// (beyond, sorted) outnumber those within it, itself counted among the
// latter; at a tie (two members, or two halves), the side without the
// smallest member id gives up, so that the other keeps serving. Every
// member judges by its own measures alone, and two members' measures of
// each other agree within their error, so the members' verdicts agree.
func outOfBound(self string, offsets map[string]clusterrpc.Offset, maxSkew time.Duration) (out bool, beyond []string) {
	firstWithin := self
	for peer, o := range offsets {
		if o.Bound() > maxSkew {
			beyond = append(beyond, peer)
		} else if peer < firstWithin {
			firstWithin = peer
		}
	}
	slices.Sort(beyond)
	within := len(offsets) - len(beyond) + 1
	switch {
	case len(beyond) > within:
		return true, beyond
	case len(beyond) == within:
		return beyond[0] < firstWithin, beyond
	}
	return false, beyond
}

// judge judges the recent offsets (verdict) and suspends or resumes the
// member accordingly. It writes the member key's suspension every round
// (Suspend and Resume write only when etcd does not show it yet), so that
// a write that failed is made again.
func (s *skewCheck) judge(ctx context.Context) {
	var err error
	if reason := s.verdict(s.offsets()); reason != "" {
		err = s.member.Suspend(ctx, reason)
	} else {
		err = s.member.Resume(ctx)
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warn().Err(err).Msg("writing this member's suspension to etcd failed; trying again next round")
	}
}

// verdict checks offsets against maxSkew and returns why the member must
// be suspended, "" when it must not: from the round outOfBound finds it
// out until skewResumeRounds rounds in a row find it back. It logs an
// episode's start and end, and the suspension's.
func (s *skewCheck) verdict(offsets map[string]clusterrpc.Offset) string {
	s.mu.Lock()
	defer s.mu.Unlock()
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
			Msg("a peer's clock is further from this member's than the members' clocks may disagree: the member whose clock is out of bound gives up its partitions (check NTP on both)")
	case ok && was != "":
		s.log.Info().Str("peer", was).Dur("max_skew", s.maxSkew).Msg("the peers' clocks are back within the bound")
	}
	out, beyond := outOfBound(s.self, offsets, s.maxSkew)
	switch {
	case out:
		if s.out == nil {
			s.log.Error().Strs("beyond", beyond).Int("peers", len(offsets)).Dur("max_skew", s.maxSkew).
				Msg("this member's clock is out of bound with its peers: it gives up its partitions and is not ready until its clock is back within the bound (check NTP)")
		}
		s.out, s.within = beyond, 0
	case s.out != nil:
		s.within++
		if s.within >= skewResumeRounds {
			s.log.Info().Int("rounds", s.within).Msg("this member's clock is back within the bound: it takes its share of the partitions again")
			s.out, s.within = nil, 0
		}
	}
	if s.out == nil {
		return ""
	}
	return fmt.Sprintf("clock beyond %v from %s", s.maxSkew, strings.Join(s.out, ", "))
}

// failing names, for /readyz, this member's clock while it has given up
// its partitions for it.
func (s *skewCheck) failing() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out == nil {
		return nil
	}
	return []string{fmt.Sprintf("clock beyond %v from %s: partitions given up", s.maxSkew, strings.Join(s.out, ", "))}
}

// suspended says whether this member has given up its partitions, for
// the metrics.
func (s *skewCheck) suspended() bool {
	_, ok := s.member.Suspended()
	return ok
}
