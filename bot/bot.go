package bot

import (
	"github.com/pinbot/pinbot/internal/logctx"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/pinbot/pinbot/internal/limit/schedule"
)

// ErrClosed is returned by Start once Close has begun.
var ErrClosed = errors.New("bot: closed")

// closeGrace is how long Close waits for handlers after cancelling them,
// before giving up on closing the REST client.
const closeGrace = 5 * time.Second

// Bot is the Discord side of pinbot: it registers the commands, receives
// interactions through the sharded gateway (discordio.Gateway),
// acknowledges each at once and works on it with a bounded number of
// workers. Every request to Discord goes through discordio.API.
//
// A Bot is safe for simultaneous use by multiple goroutines. Start it
// once; Close it once Start has returned.
type Bot struct {
	cfg   Config
	log   zerolog.Logger
	slog  *slog.Logger
	appID snowflake.ID
	// api is every request to Discord; rest is the same when it is
	// disgo's REST client (nil with an in-memory double), closed last.
	api  discordio.API
	rest *discordio.REST

	workers       chan struct{} // one token per running handler
	jobWorkers    chan struct{} // one token per queued pin being run
	autocompletes chan struct{}

	// workCtx ends when Close gives up waiting: every handler's context
	// derives from it.
	workCtx    context.Context
	cancelWork context.CancelFunc

	mu        sync.Mutex
	closing   bool
	closingCh chan struct{} // closed when Close begins
	inflight  int
	gw        *discordio.Gateway // nil before Start
	idle      chan struct{}      // closed once closing and no handler runs
	// shards are the shards the program opened, with
	// Config.ShardsByCaller (see shards.go).
	shards map[int]*shardRun
	// shardGone holds, per shard, a channel closed once its last
	// connection is closed: a new open waits for it.
	shardGone map[int]chan struct{}
	idleOnce  sync.Once

	closeOnce sync.Once
	closeErr  error

	// resolving counts the searches for pins of unknown outcome (see
	// resolve.go); Close waits for them once it has canceled the work.
	resolving sync.WaitGroup

	sessions sessionCache
	boards   boardCache
	// digest tells users what became of their queued pins.
	digest *digest.Sender

	// reactions is what pin reactions keep (reactions.go).
	reactions reactionState
	// autopin is what auto-pin channels keep (autopin.go).
	autopin autopinState

	// rule names the engine's limit and window in what users read.
	rule pinRule
	// throttle is each user's allowance; nil with Config.NoUserRate.
	throttle *throttle

	// shardOpts are appended to the shard manager's options (tests).
	shardOpts []discordio.ShardOpt
	// onPin, when set (benchmarks), receives for every pin attempt the
	// time the bot spent on it in total and inside the Pinterest call.
	onPin func(total, pinterest time.Duration)
	// forwardPatience, when set (tests), replaces forwardPatience.
	forwardPatience time.Duration
	// sleepUntil, when set (tests), replaces Engine.SleepUntil in the
	// searches for pins of unknown outcome.
	sleepUntil func(context.Context, time.Time) error
	// finishSleep, when set (tests), replaces Engine.SleepUntil between
	// attempts to record a job's outcome (finishJob).
	finishSleep func(context.Context, time.Time) error
	// onDone, when set (tests), is called with an interaction's ID once
	// the bot is done with it.
	onDone func(snowflake.ID)
}

// New builds a Bot from cfg after validating it. It makes no network
// request: Start syncs the commands and opens the gateway.
func New(cfg Config) (*Bot, error) {
	return newBot(cfg, nil)
}

// newBot is New with api for every request to Discord; nil builds disgo's
// REST client from cfg (tests pass an in-memory double).
func newBot(cfg Config, api discordio.API) (*Bot, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if lease := cfg.Engine.Config().Lease; lease > 0 && cfg.SlotMargin >= lease {
		return nil, fmt.Errorf("bot: Config.SlotMargin %v leaves no time in the engine's %v lease", cfg.SlotMargin, lease)
	}
	appID, err := applicationID(cfg.Token)
	if err != nil {
		return nil, err
	}
	b := &Bot{
		cfg:           cfg,
		log:           cfg.Log.With().Str("component", "bot").Logger(),
		slog:          discordio.NewSlogLogger(cfg.Log),
		appID:         appID,
		workers:       make(chan struct{}, cfg.Workers),
		jobWorkers:    make(chan struct{}, cfg.Workers),
		autocompletes: make(chan struct{}, maxAutocompletes),
		idle:          make(chan struct{}),
		closingCh:     make(chan struct{}),
		rule:          ruleOf(cfg.Engine.Config(), cfg.Window),
	}
	if !cfg.NoUserRate {
		b.throttle = newThrottle(cfg.UserRate, cfg.Engine.Now)
	}
	b.workCtx, b.cancelWork = context.WithCancel(context.Background())
	b.sessions.m = make(map[string]cachedSession)
	b.shards = make(map[int]*shardRun)
	b.boards.m = make(map[string]boardList)

	if api == nil {
		var wrap []func(http.RoundTripper) http.RoundTripper
		if cfg.DiscordTransport != nil {
			wrap = append(wrap, cfg.DiscordTransport)
		}
		b.rest = discordio.NewREST(discordio.RESTConfig{
			Token: cfg.Token, AppID: appID, URL: cfg.APIURL,
			Log:  b.log.With().Str("component", "discord-rest").Logger(),
			Wrap: wrap, DefaultMentions: noMentions,
			Processes: cfg.DiscordProcesses,
		})
		api = b.rest
	}
	b.api = api
	clock := cfg.DigestClock
	if clock == nil {
		clock = schedule.SystemClock()
	}
	dopts := []digest.Option{digest.WithAccess(digestAccess{api: api})}
	if cfg.Outbox != nil {
		dopts = append(dopts, digest.WithOutbox(cfg.Outbox))
	}
	if b.digest, err = digest.New(api, clock, cfg.Log, cfg.Digest, dopts...); err != nil {
		b.cancelWork()
		return nil, fmt.Errorf("bot: %w", err)
	}
	b.resumeDigests()
	return b, nil
}

// resumeDigests gathers the digest lines an earlier run kept and did not
// send, before any queued pin runs (a pin recovered after a crash is then
// reported with the line kept first). A store that cannot be read is
// logged: the results remain in /queue.
func (b *Bot) resumeDigests() {
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	n, err := b.digest.Resume(ctx)
	if err != nil {
		b.log.Error().Err(err).Int("lines", n).Msg("reading the digests left unsent by the last run failed; their results remain in /queue")
		return
	}
	if n > 0 {
		b.log.Info().Int("lines", n).Msg("sending the digests left unsent by the last run")
	}
}

// digestAccess tells the digests whether a user may still read the
// channel where they ran a command, with the check queued pins use.
type digestAccess struct{ api discordio.API }

func (a digestAccess) CanRead(ctx context.Context, guildID, channelID, userID snowflake.ID) (bool, error) {
	ac := &accessChecker{api: a.api, ctx: ctx, guildID: guildID, userID: userID}
	res, err := ac.canRead(channelID)
	return res.ok, err
}

// Start replaces the application's global commands with the bot's (a bulk
// overwrite, so removed commands disappear) and opens the gateway: the
// shard count is Config.Shards or Discord's recommendation, shards open
// as Discord's session start limit allows. Interactions are handled from
// then on.
func (b *Bot) Start(ctx context.Context) error {
	b.mu.Lock()
	closing := b.closing
	b.mu.Unlock()
	if closing {
		return ErrClosed
	}
	if err := b.syncCommands(ctx); err != nil {
		return err
	}
	info, err := b.api.GatewayBot(ctx)
	if err != nil {
		return fmt.Errorf("bot: GET /gateway/bot: %w", err)
	}
	gcfg := discordio.GatewayConfig{
		Token: b.cfg.Token, Info: info, URL: b.cfg.GatewayURL, Shards: b.cfg.Shards, Log: b.slog,
		OnInteraction: b.HandleInteraction,
		OnReady:       b.shardReady,
		OnClosed:      b.shardClosed,
		Manual:        b.cfg.ShardsByCaller,
		Extra:         b.shardOpts,
	}
	b.reactionGateway(&gcfg)
	b.autopinGateway(&gcfg)
	if b.cfg.IdentifyLimiter != nil {
		gcfg.IdentifyLimiter = b.cfg.IdentifyLimiter(max(info.MaxConcurrency, 1))
	}
	if b.cfg.ShardsByCaller {
		// An interaction reaching a closing member is left to the
		// shard's next holder, to whom Discord replays it.
		gcfg.Admit, gcfg.OnInteraction = b.enterFromGateway, b.handleEntered
		gcfg.Serving = b.cfg.ShardServing
	}
	gw := discordio.NewGateway(gcfg)

	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		return ErrClosed
	}
	b.gw = gw
	b.openWantedLocked()
	b.mu.Unlock()

	if b.cfg.ShardsByCaller {
		b.log.Info().Int("shards", gw.Count()).Msg("gateway ready; its shards open as the cluster hands them to this member")
		return nil
	}
	b.log.Info().Int("shards", gw.Count()).Msg("opening the gateway")
	if err := gw.Open(ctx); err != nil {
		return fmt.Errorf("bot: %w", err)
	}
	return nil
}

// syncCommands bulk-overwrites the global commands.
func (b *Bot) syncCommands(ctx context.Context) error {
	n, err := b.api.SetCommands(ctx, commands(b.rule))
	if err != nil {
		return fmt.Errorf("bot: syncing commands: %w", err)
	}
	b.log.Info().Int("commands", n).Msg("commands synced")
	return nil
}

// Close stops the bot: it closes the gateway so that no new interaction
// arrives, tells the users whose commands were acknowledged but not yet
// started to run them again, waits up to Config.CloseTimeout (or until
// ctx ends) for the running handlers, cancels those still running and
// then closes the Discord client. disgo's REST client cannot be closed
// while requests are in flight, so if handlers still run after
// cancellation and a short grace, Close leaves it open and says so in its
// error. Close must not run concurrently with Start; calls after the
// first return the first's result.
func (b *Bot) Close(ctx context.Context) error {
	b.closeOnce.Do(func() { b.closeErr = b.close(ctx) })
	return b.closeErr
}

func (b *Bot) close(ctx context.Context) error {
	b.mu.Lock()
	b.closing = true
	close(b.closingCh)
	if b.inflight == 0 {
		b.idleOnce.Do(func() { close(b.idle) })
	}
	gw := b.gw
	b.mu.Unlock()

	if gw != nil {
		b.parkShards(ctx, gw)
		gw.Close(ctx)
	}
	timer := time.NewTimer(b.cfg.CloseTimeout)
	defer timer.Stop()
	forced := false
	select {
	case <-b.idle:
	case <-timer.C:
		forced = true
	case <-ctx.Done():
		forced = true
	}
	b.cancelWork()
	// Searches for pins of unknown outcome end with the work; a slot
	// whose search did not end counts as a pin made at its deadline.
	b.resolving.Wait()
	if forced {
		b.log.Warn().Msg("handlers still running at close; cancelling them")
		grace := time.NewTimer(closeGrace)
		defer grace.Stop()
		select {
		case <-b.idle:
		case <-grace.C:
			b.waitRefreshes(ctx)
			return errors.New("bot: close: handlers still running after cancellation; the Discord REST client was left open")
		}
	}
	b.waitRefreshes(ctx)
	b.closeDigests(ctx)
	if b.rest != nil {
		b.rest.Close(ctx)
	}
	b.log.Info().Msg("closed")
	if forced {
		return errors.New("bot: close: handlers had to be cancelled")
	}
	return nil
}

// closeDigests sends the digests gathered so far, waiting up to
// Config.CloseTimeout even when ctx has ended: they are the only news of
// queued pins that ran.
func (b *Bot) closeDigests(ctx context.Context) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.CloseTimeout)
	defer cancel()
	if err := b.digest.Close(dctx); err != nil {
		b.log.Error().Err(err).Msg("digests of queued pins were left unsent at close; they remain in /queue, and those kept are sent at the next start")
	}
}

// waitRefreshes waits, up to Config.CloseTimeout even when ctx has ended,
// for the Pinterest token refreshes in flight. A refresh outlives the
// handler that started it (its answer must be saved: the old refresh token
// is dead), and the caller closes the token store after Close.
func (b *Bot) waitRefreshes(ctx context.Context) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.CloseTimeout)
	defer cancel()
	if err := b.cfg.Pinterest.Wait(wctx); err != nil {
		b.log.Error().Err(err).Msg("a Pinterest token refresh was still running at close; the account may need linking again")
	}
}

// isClosing reports whether Close has begun.
func (b *Bot) isClosing() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closing
}

// enter registers a handler; it reports false once Close has begun.
func (b *Bot) enter() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return false
	}
	b.inflight++
	return true
}

// leave unregisters a handler.
func (b *Bot) leave() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inflight--
	if b.inflight == 0 && b.closing {
		b.idleOnce.Do(func() { close(b.idle) })
	}
}

// logger is the bot's logger tagged with the IDs ctx carries: the
// interaction, or the queued pin and the /pin that queued it.
func (b *Bot) logger(ctx context.Context) *zerolog.Logger {
	return logctx.Logger(ctx, b.log)
}
