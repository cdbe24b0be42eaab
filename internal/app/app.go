// Package app builds the whole program from one Config: the engine's
// store and engine, the token store, the Pinterest client, the HTTP
// handler (OAuth callback, liveness at /healthz, readiness at /readyz,
// metrics at /metrics and, given an admin token, the operator dashboard,
// behind a per-client rate limit, package internal/edge), the metrics
// every part reports to, the reconciliation with Pinterest's ledger
// (package internal/reconcile), the rebuild of the accounts' windows from
// it after a restore (package internal/rebuild) and the Discord bot, and
// tears them down in reverse order with one closer stack. The bot
// command and the local sandbox both build through it; the sandbox
// passes the stand-ins' addresses.
//
// # Usage
//
//	a, err := app.Build(cfg)
//	if err != nil { ... }
//	defer a.Close(context.Background())
//	if err := a.Start(ctx); err != nil { ... } // connects the gateway
//	select {
//	case <-ctx.Done():
//	case err := <-a.HTTPFailed():
//	}
package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/discorduser"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/etcdlinks"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/web"
	"github.com/pinbot/pinbot/internal/app/enginestore"
	"github.com/pinbot/pinbot/internal/backup"
	"github.com/pinbot/pinbot/internal/clusterengine"
	"github.com/pinbot/pinbot/internal/control"
	"github.com/pinbot/pinbot/internal/dashboard"
	"github.com/pinbot/pinbot/internal/edge"
	"github.com/pinbot/pinbot/internal/metrics"
	"github.com/pinbot/pinbot/internal/rebuild"
	"github.com/pinbot/pinbot/internal/reconcile"
)

// Errors of Build. Match them with errors.Is.
var (
	// ErrDataDirInUse means another process holds the engine store or the
	// token store.
	ErrDataDirInUse = enginestore.ErrDataDirInUse
	// ErrPinterestConfig wraps an invalid Config.Pinterest.
	ErrPinterestConfig = errors.New("invalid Pinterest settings")
	// ErrBotConfig wraps an invalid Config.Bot (such as a malformed token).
	ErrBotConfig = errors.New("invalid bot settings")
	// ErrDiscordConfig wraps an invalid Config.Discord.
	ErrDiscordConfig = errors.New("invalid Discord sign-in settings")
)

// configError is an invalid setting of one part of the program: it reads
// as the part's own error and matches kind too.
type configError struct{ kind, err error }

func (e *configError) Error() string   { return e.err.Error() }
func (e *configError) Unwrap() []error { return []error{e.kind, e.err} }

// Default timeouts of Close, one per step.
const (
	// EngineCloseTimeout bounds closing the engine: every account actor
	// writes its snapshot.
	EngineCloseTimeout = 15 * time.Second
	// DefaultPurgeEvery is how often the OAuth states nobody came back
	// with are deleted.
	DefaultPurgeEvery = 5 * time.Minute
)

// Config is everything Build needs.
type Config struct {
	// EngineDir is the directory of the engine's Badger store, created if
	// needed.
	EngineDir string
	// LinksDir is the directory of the token store, created if needed
	// and encrypted with EncryptionKey (16, 24 or 32 bytes).
	LinksDir      string
	EncryptionKey []byte
	// Engine configures the rate-limit engine; nil means
	// actors.DefaultConfig(). Build sets its Observer.
	Engine *actors.Config
	// Pinterest configures the Pinterest client; Build sets its Logger
	// and counts the requests of its HTTPClient (a copy of it).
	Pinterest pinterest.Config
	// Bot configures the Discord bot; Build sets its Engine, Links,
	// Pinterest, Log, Observer and DiscordTransport.
	Bot bot.Config
	// Discord configures how the confirmation page of a link reads the
	// Discord user who ran /link and, with a ClientSecret, signs the
	// browser in with Discord (see package bot/web). Build sets its Token
	// and APIURL from Bot and, when empty, its RedirectURL to the address
	// of web.DiscordCallbackPath next to Pinterest's redirect.
	Discord discorduser.Config
	// AvatarSources are where the confirmation page's pictures may come
	// from; see web.Config.AvatarSources.
	AvatarSources []string
	// Listener is where the OAuth callback, the health checks and the
	// metrics are served; Build takes it over and closes it with the App.
	Listener net.Listener
	// HTTPLimit limits each client's requests to the listener (package
	// internal/edge); its zero value is edge's defaults. Build sets its
	// Operator: the health checks, metrics and dashboard count against
	// HTTPLimit.OperatorRate, apart from the public pages. NoHTTPLimit
	// turns the whole limit off.
	HTTPLimit   edge.Config
	NoHTTPLimit bool
	// AdminToken, when not empty, serves the operator dashboard at /admin
	// on the listener to requests carrying it as a Bearer token (package
	// internal/dashboard); without it there is no dashboard. Gatherer is
	// where the dashboard reads the metrics; nil means the App's own
	// (Metrics).
	AdminToken []byte
	Gatherer   prometheus.Gatherer
	// PurgeEvery is how often expired OAuth states are deleted; 0 means
	// DefaultPurgeEvery.
	PurgeEvery time.Duration
	// ReconcileEvery is the interval between the rounds that compare
	// each active account's count with Pinterest's ledger (package
	// internal/reconcile, PINBOT_RECONCILE_EVERY); 0 means
	// reconcile.DefaultEvery. NoReconcile runs none. CountAllPins counts
	// the pins the accounts made outside pinbot against their limits
	// (PINBOT_COUNT_ALL_PINS).
	ReconcileEvery time.Duration
	NoReconcile    bool
	CountAllPins   bool
	// Cluster, when not nil, makes the program one member of a cluster
	// whose state lives in etcd (see ClusterConfig): EngineDir, LinksDir
	// and ControlSocket are then unused.
	Cluster *ClusterConfig
	// ControlSocket, when not empty, is the path of the Unix socket on
	// which the program serves its stores' owner: online backups
	// (package internal/backup) and the listings of the accounts and of
	// an account's queue (package internal/control). A socket that
	// cannot be made is logged, and the program runs without it.
	ControlSocket string
	// HoldJobs leaves the queued pins waiting, stored, when Build
	// returns: they run once ServeJobs is called. The sandbox links its
	// demo accounts again first, so that the pins overdue at its start
	// find tokens its fresh Pinterest stand-in accepts.
	HoldJobs bool
	// Log receives every component's log lines.
	Log zerolog.Logger
}

// App is the built program. Its fields are set by Build and must not be
// changed.
type App struct {
	Engine    *actors.Engine
	Links     links.Store
	Pinterest *pinterest.Client
	Bot       *bot.Bot
	// Reconciler compares the accounts' counts with Pinterest's ledger;
	// nil with Config.NoReconcile.
	Reconciler *reconcile.Reconciler
	// Rebuilder rebuilds the linked accounts' windows from Pinterest's
	// listing after a restore (package internal/rebuild); nil when no
	// restore's hold is in force.
	Rebuilder *rebuild.Rebuilder
	// Edge limits the HTTP listener's clients; nil when
	// Config.NoHTTPLimit is set.
	Edge *edge.Limiter
	// Metrics has every part's metrics, served at metrics.Path.
	Metrics *metrics.Metrics

	log      zerolog.Logger
	httpDone chan error  // the HTTP server's end, once
	store    EngineStore // the engine's; nil in a cluster
	linksDB  TokenStore  // Links, for backups; nil in a cluster
	rules    dashboard.RuleReader
	node     *clusterengine.Node // the cluster member; nil outside one
	peers    *peers              // the bot's Peers in a cluster
	shards   *shardHost          // the gateway shards this member holds; nil outside a cluster
	ready    *readiness          // answers ReadyPath

	closers   []closer
	closeOnce sync.Once
	closeErr  error
}

// closer is one step of Close.
type closer struct {
	what    string
	timeout time.Duration // 0: the context of Close alone
	close   func(context.Context) error
}

// Build opens the stores, starts the engine and the HTTP server, and
// builds the bot without connecting it (see Start). On failure it closes
// what it had opened.
func Build(cfg Config) (_ *App, err error) {
	if cfg.Listener == nil {
		return nil, errors.New("app: Config.Listener is nil")
	}
	a := &App{log: cfg.Log.With().Str("component", "pinbot").Logger(), Metrics: metrics.New()}
	defer func() {
		if err != nil {
			err = errors.Join(err, a.Close(context.Background()))
		}
	}()
	listener := cfg.Listener
	a.push("the HTTP listener", 0, func(context.Context) error {
		if listener == nil {
			return nil
		}
		if err := listener.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	})
	if !cfg.NoHTTPLimit {
		ecfg := cfg.HTTPLimit
		ecfg.Log = cfg.Log
		ecfg.Operator = operatorRoute
		ecfg.Refused = a.Metrics.HTTPRefused
		if a.Edge, err = edge.New(ecfg); err != nil {
			return nil, err
		}
	}

	ecfg := actors.DefaultConfig()
	if cfg.Engine != nil {
		ecfg = *cfg.Engine
	}
	ecfg.Observer = a.Metrics.Engine()
	var peers *peers
	if cfg.Cluster != nil {
		if peers, err = a.buildCluster(cfg, ecfg); err != nil {
			return nil, err
		}
	} else {
		store, err := OpenStore(cfg.EngineDir, cfg.Log)
		if err != nil {
			return nil, err
		}
		a.store, a.rules = store, store
		a.push("the engine store", 0, func(context.Context) error { return store.Close() })
		linksDB, err := openLinks(cfg.LinksDir, cfg.EncryptionKey, cfg.Log)
		if err != nil {
			return nil, err
		}
		a.Links, a.linksDB = linksDB, linksDB
		a.push("the token store", 0, func(context.Context) error { return linksDB.Close() })
		if a.Engine, err = actors.New(ecfg, store, cfg.Log); err != nil {
			return nil, fmt.Errorf("starting the engine: %w", err)
		}
		a.push("the engine", EngineCloseTimeout, a.Engine.Close)
	}
	a.Metrics.WatchEngine(a.Engine)

	pcfg := cfg.Pinterest
	pcfg.Logger = cfg.Log
	pcfg.HTTPClient = countedClient(pcfg.HTTPClient, a.Metrics)
	if a.Pinterest, err = pinterest.New(pcfg); err != nil {
		return nil, &configError{kind: ErrPinterestConfig, err: err}
	}
	a.Metrics.WatchBreaker(a.Pinterest.BreakerState)
	if !cfg.NoReconcile {
		if err := a.startReconciler(cfg); err != nil {
			return nil, err
		}
	}
	if err := a.startRebuilder(cfg); err != nil {
		return nil, err
	}

	purgeEvery := cfg.PurgeEvery
	if purgeEvery <= 0 {
		purgeEvery = DefaultPurgeEvery
	}
	pctx, stopPurge := context.WithCancel(context.Background())
	purged := make(chan struct{})
	go a.purgeStates(pctx, purgeEvery, purged)
	a.push("the OAuth state purge", 0, func(context.Context) error {
		stopPurge()
		<-purged
		return nil
	})

	// The listener's public address is that of Pinterest's redirect.
	publicURL := strings.TrimSuffix(cfg.Pinterest.RedirectURL, web.CallbackPath)
	dcfg := cfg.Discord
	dcfg.Token, dcfg.APIURL = cfg.Bot.Token, cfg.Bot.APIURL
	if dcfg.RedirectURL == "" && dcfg.ClientSecret != "" {
		dcfg.RedirectURL = publicURL + web.DiscordCallbackPath
	}
	discord, err := discorduser.New(dcfg)
	if err != nil {
		return nil, &configError{kind: ErrDiscordConfig, err: err}
	}
	// The user who ran /link is told what became of it by the bot,
	// built below; the listener serves before then.
	var notifier atomic.Pointer[bot.Bot]
	h, err := web.New(web.Config{
		Links:         a.Links,
		Pinterest:     a.Pinterest,
		Discord:       discord,
		PublicURL:     publicURL,
		AvatarSources: cfg.AvatarSources,
		Log:           cfg.Log,
		OnLinked: func(req links.Request, acct links.Account) {
			if b := notifier.Load(); b != nil {
				b.Linked(req, acct)
				return
			}
			a.log.Error().Str("user_id", req.User).Str("account", acct.ID).Msg("link notice not sent: the bot is not running yet")
		},
		OnRefused: func(req links.Request, missing []string) {
			if b := notifier.Load(); b != nil {
				b.LinkRefused(req, missing)
				return
			}
			a.log.Error().Str("user_id", req.User).Msg("link notice not sent: the bot is not running yet")
		},
	})
	if err != nil {
		return nil, err
	}
	a.ready = &readiness{engine: a.Engine, links: a.Links, log: a.log, probeEvery: probeEvery}
	if peers != nil {
		a.ready.cluster = peers.ready
	}
	ln := listener
	listener = nil // the server closes it from now on
	srv := h.Server(ln.Addr().String())
	srv.Handler = routes(h, a.Metrics, a.ready)
	if srv.Handler, err = a.withAdmin(cfg, srv.Handler); err != nil {
		_ = ln.Close()
		return nil, err
	}
	// The per-client limit covers every route, the dashboard's included.
	if a.Edge != nil {
		srv.Handler = a.Edge.Wrap(srv.Handler)
	}
	// Every request's log lines carry its ID, sent back to the client.
	srv.Handler = edge.RequestIDs(srv.Handler, cfg.HTTPLimit.TrustedProxies)
	a.httpDone = make(chan error, 1)
	served := make(chan struct{})
	a.ready.serving.Store(true)
	go func() {
		defer close(served)
		defer a.ready.serving.Store(false)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.httpDone <- err
		}
	}()
	a.push("the HTTP server", web.DefaultCallbackTimeout, func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		<-served
		return err
	})

	if cfg.ControlSocket != "" && a.store != nil {
		// In a cluster, the state is etcd's to back up (docs/deploy.md).
		a.serveControl(cfg.ControlSocket, backup.Stores{Engine: a.store, Links: a.linksDB, Key: cfg.EncryptionKey},
			control.Source{Engine: a.Engine, Store: a.store, Links: a.Links}, cfg.Log)
	}

	bcfg := cfg.Bot
	bcfg.Engine, bcfg.Links, bcfg.Pinterest, bcfg.Log = a.Engine, a.Links, a.Pinterest, cfg.Log
	if peers != nil {
		bcfg.Peers, a.peers = peers, peers
		// The members share Discord's global REST limit.
		bcfg.DiscordProcesses = peers.processes
		// The member's engine counts for the window plus maxSkew.
		bcfg.Window = ecfg.Window
	}
	if a.shards != nil {
		a.shards.botConfig(&bcfg)
	}
	// Digest lines wait for Discord in the token store, beside the links.
	bcfg.Outbox = a.Links.Outbox()
	if lst, ok := a.Links.(*etcdlinks.Store); ok && a.node != nil {
		// In a cluster, a member sends the lines it keeps and those of
		// members gone, never another live member's.
		bcfg.Outbox = lst.MemberOutbox(a.node.Member.ID())
	}
	bcfg.Observer = a.Metrics.Bot(bot.InteractionLabels())
	bcfg.DiscordTransport = func(rt http.RoundTripper) http.RoundTripper {
		return a.Metrics.Transport(metrics.Discord, rt, nil)
	}
	if a.Bot, err = bot.New(bcfg); err != nil {
		return nil, &configError{kind: ErrBotConfig, err: err}
	}
	notifier.Store(a.Bot)
	if a.shards != nil {
		if err := a.shards.setBot(a.Bot); err != nil {
			return nil, err
		}
	}
	if peers != nil {
		peers.bot.Store(a.Bot)
	}
	shards := a.Bot.Shards
	a.ready.shards.Store(&shards)
	a.Metrics.WatchGateway(a.Bot.ShardsConnected)
	closeBot := bcfg.CloseTimeout
	if closeBot == 0 {
		closeBot = bot.DefaultCloseTimeout
	}
	// The gateway, then the handlers still running, then the client.
	a.push("the bot", closeBot+10*time.Second, a.Bot.Close)
	if a.shards != nil && a.node != nil {
		// Closed before the bot (closers run last pushed first): the
		// shards move to the other members while this bot still answers
		// what they deliver (cluster.Member.LeaveShards).
		a.push("the gateway shards, handed over", shardLeaveTimeout, a.node.Member.LeaveShards)
	}
	if a.shards != nil {
		// Stopped first: a handover stores the sessions exactly.
		a.push("the gateway shards' checkpoints", 5*time.Second, a.shards.close)
	}
	// Queued pins run from now on, unless held; until the bot exists they
	// wait, stored.
	if !cfg.HoldJobs {
		if err := a.ServeJobs(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// ServeJobs starts running the queued pins through the bot. Build calls
// it unless Config.HoldJobs is set; it fails when jobs are served
// already.
func (a *App) ServeJobs() error { return a.Engine.ServeJobs(a.Bot.RunJob) }

// ControlCloseTimeout bounds how long Close lets a backup in progress on
// the control socket go on before cutting it short.
const ControlCloseTimeout = 10 * time.Second

// serveControl serves online backups of st and the listings of src on a
// Unix socket at path; the stores are open, so no other pinbot serves
// there. Without the socket the program runs on, and says so.
func (a *App) serveControl(path string, st backup.Stores, src control.Source, log zerolog.Logger) {
	ln, err := backup.Listen(path)
	if err != nil {
		a.log.Warn().Err(err).Str("socket", path).
			Msg("no control socket: stop pinbot to back up its data directory or list its accounts")
		return
	}
	mux := http.NewServeMux()
	mux.Handle(backup.BackupPath, backup.Handler(st, log))
	listings := control.Handler(src, log)
	mux.Handle(control.AccountsPath, listings)
	mux.Handle(control.JobsPath, listings)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error().Err(err).Str("socket", path).Msg("the control socket stopped")
		}
	}()
	a.push("the control socket", ControlCloseTimeout, func(ctx context.Context) error {
		if err := srv.Shutdown(ctx); err != nil {
			a.log.Warn().Err(err).Msg("a backup in progress was cut short by the stop")
			_ = srv.Close()
		}
		<-served
		return nil
	})
}

// push adds a step to Close.
func (a *App) push(what string, timeout time.Duration, f func(context.Context) error) {
	a.closers = append(a.closers, closer{what: what, timeout: timeout, close: f})
}

// Start connects the bot to Discord's gateway and returns once every
// shard is ready, or with ctx's error.
func (a *App) Start(ctx context.Context) error {
	if err := a.Bot.Start(ctx); err != nil {
		return fmt.Errorf("starting the bot: %w", err)
	}
	return nil
}

// HTTPFailed delivers the HTTP server's error if it stops on its own.
func (a *App) HTTPFailed() <-chan error { return a.httpDone }

// Close stops what Build started. First ReadyPath answers 503 ("shutting
// down"), so that a load balancer stops sending work while everything
// still runs; then, in reverse order: in a cluster, the gateway shards,
// handed to the other members while the bot still answers; the bot (its handlers finish first,
// and the token refreshes they started), the control socket, the HTTP
// server, the OAuth state purge, the rebuild after a restore and the
// reconciliation (a round in progress cut short), the engine (which
// writes every account's state), the token store, the engine store. Each step is bounded by its own timeout and by
// ctx. It returns every error met; Close may be called more than once.
func (a *App) Close(ctx context.Context) error {
	a.closeOnce.Do(func() {
		if a.ready != nil {
			a.ready.closing.Store(true)
		}
		var errs []error
		for i := len(a.closers) - 1; i >= 0; i-- {
			c := a.closers[i]
			sctx, cancel := ctx, context.CancelFunc(func() {})
			if c.timeout > 0 {
				sctx, cancel = context.WithTimeout(ctx, c.timeout)
			}
			if err := c.close(sctx); err != nil {
				errs = append(errs, fmt.Errorf("closing %s: %w", c.what, err))
			}
			cancel()
		}
		a.closeErr = errors.Join(errs...)
	})
	return a.closeErr
}

// countedClient returns a copy of hc (an empty client if nil) whose
// requests m counts as Pinterest's.
func countedClient(hc *http.Client, m *metrics.Metrics) *http.Client {
	out := &http.Client{}
	if hc != nil {
		*out = *hc
	}
	out.Transport = m.Transport(metrics.Pinterest, out.Transport, pinterest.RetryWait)
	return out
}

// startReconciler starts the rounds that compare the accounts' counts
// with Pinterest's ledger, one every cfg.ReconcileEvery, and the metrics
// of their drifts. Close stops them, a round in progress cut short,
// before the engine and the token store close.
func (a *App) startReconciler(cfg Config) error {
	r, err := reconcile.New(reconcile.Config{
		Engine: a.Engine, Links: a.Links, Pinterest: a.Pinterest,
		CountAll: cfg.CountAllPins, Every: cfg.ReconcileEvery,
		Observer: a.Metrics.Reconcile(), Log: cfg.Log,
	})
	if err != nil {
		return err
	}
	a.Reconciler = r
	a.Metrics.WatchDrift(func() metrics.DriftSummary {
		s := r.Summary()
		return metrics.DriftSummary{Positive: s.Positive, Negative: s.Negative, Largest: s.Largest, Smallest: s.Smallest}
	})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	a.push("the reconciliation", 0, func(context.Context) error {
		stop()
		<-done
		return nil
	})
	return nil
}

// purgeStates deletes expired OAuth states every interval until ctx ends.
func (a *App) purgeStates(ctx context.Context, every time.Duration, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := a.Links.PurgeStates(ctx, time.Now())
			switch {
			case err != nil && ctx.Err() == nil:
				a.log.Warn().Err(err).Msg("purging expired OAuth states failed")
			case n > 0:
				a.log.Debug().Int("states", n).Msg("expired OAuth states purged")
			}
		}
	}
}
