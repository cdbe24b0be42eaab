package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/disgoorg/disgo"
	disgobot "github.com/disgoorg/disgo/bot"
	"github.com/disgoorg/disgo/cache"
	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/disgo/handler"
	"github.com/disgoorg/disgo/rest"
	"github.com/disgoorg/disgo/sharding"
	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/internal/discordio"
)

// ErrClosed is returned by Start once Close has begun.
var ErrClosed = errors.New("bot: closed")

// Timeouts of the bot's own Discord requests.
const (
	// ackTimeout bounds the initial response; Discord refuses it after
	// three seconds anyway.
	ackTimeout = 3 * time.Second
	// replyTimeout bounds sending the final reply and its followups.
	replyTimeout = 30 * time.Second
	// autocompleteTimeout bounds the work behind autocomplete choices,
	// which cannot be deferred, from the moment the bot takes the
	// interaction up; autocompleteAnswerBy bounds sending the choices,
	// from the same moment, so that work using all its time still leaves
	// time to answer (empty choices) within Discord's three seconds.
	autocompleteTimeout  = 2 * time.Second
	autocompleteAnswerBy = 2800 * time.Millisecond
	// closeGrace is how long Close waits for handlers after cancelling
	// them, before giving up on closing the REST client.
	closeGrace = 5 * time.Second
	// maxAutocompletes bounds autocomplete requests worked on at once;
	// beyond it the choices are empty.
	maxAutocompletes = 64
)

// noMentions is the allowed_mentions of every message the bot sends: the
// bot never pings anyone, whatever the text holds.
var noMentions = discord.AllowedMentions{
	Parse: []discord.AllowedMentionType{},
	Roles: []snowflake.ID{},
	Users: []snowflake.ID{},
}

// Bot is the Discord side of pinbot: it registers the commands, receives
// interactions through disgo's sharded gateway, acknowledges each at once
// and works on it with a bounded number of workers.
//
// A Bot is safe for simultaneous use by multiple goroutines. Start it
// once; Close it once Start has returned.
type Bot struct {
	cfg    Config
	log    zerolog.Logger
	slog   *slog.Logger
	appID  snowflake.ID
	client *disgobot.Client
	mux    *handler.Mux

	workers       chan struct{} // one token per running handler
	autocompletes chan struct{}

	// workCtx ends when Close gives up waiting: every handler's context
	// derives from it.
	workCtx    context.Context
	cancelWork context.CancelFunc

	mu        sync.Mutex
	closing   bool
	closingCh chan struct{} // closed when Close begins
	inflight  int
	shards    sharding.ShardManager
	idle      chan struct{} // closed once closing and no handler runs
	idleOnce  sync.Once

	closeOnce sync.Once
	closeErr  error

	sessions sessionCache
	boards   boardCache

	// shardOpts are appended to the shard manager's options (tests).
	shardOpts []sharding.ConfigOpt
	// onPin, when set (benchmarks), receives for every pin attempt the
	// time the bot spent on it in total and inside the Pinterest call.
	onPin func(total, pinterest time.Duration)
	// onDone, when set (tests), is called with an interaction's ID once
	// the bot is done with it.
	onDone func(snowflake.ID)
}

// New builds a Bot from cfg after validating it. It makes no network
// request: Start syncs the commands and opens the gateway.
func New(cfg Config) (*Bot, error) {
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
		autocompletes: make(chan struct{}, maxAutocompletes),
		idle:          make(chan struct{}),
		closingCh:     make(chan struct{}),
	}
	b.workCtx, b.cancelWork = context.WithCancel(context.Background())
	b.sessions.m = make(map[string]cachedSession)
	b.boards.m = make(map[string]boardList)
	b.mux = b.routes()

	restOpts := discordio.RESTClientOpts(b.log.With().Str("component", "discord-rest").Logger())
	if cfg.APIURL != "" {
		restOpts = append(restOpts, rest.WithURL(cfg.APIURL))
	}
	discordio.InstallDecoder()
	client, err := disgo.New(cfg.Token,
		disgobot.WithLogger(b.slog),
		disgobot.WithRestClientConfigOpts(restOpts...),
		disgobot.WithRestConfigOpts(rest.WithDefaultAllowedMentions(noMentions)),
		disgobot.WithEventManagerConfigOpts(disgobot.WithAsyncEventsEnabled()),
		disgobot.WithEventListeners(b.mux),
		disgobot.WithCacheConfigOpts(cache.WithCaches(cache.FlagsNone)),
	)
	if err != nil {
		b.cancelWork()
		return nil, fmt.Errorf("bot: building the Discord client: %w", err)
	}
	b.client = client
	return b, nil
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
	gb, err := b.client.Rest.GetGatewayBot(rest.WithCtx(ctx))
	if err != nil {
		return fmt.Errorf("bot: GET /gateway/bot: %w", err)
	}
	shards := b.cfg.Shards
	if shards == 0 {
		shards = max(gb.Shards, 1)
	}
	url := gb.URL
	if b.cfg.GatewayURL != "" {
		url = b.cfg.GatewayURL
	}
	ids := make([]int, shards)
	for i := range ids {
		ids[i] = i
	}
	opts := []sharding.ConfigOpt{
		sharding.WithShardCount(shards),
		sharding.WithShardIDs(ids...),
		sharding.WithLogger(b.slog),
		sharding.WithGatewayConfigOpts(
			gateway.WithURL(url),
			gateway.WithLogger(b.slog),
			gateway.WithIntents(gateway.IntentsNone),
			gateway.WithOS(runtime.GOOS),
			gateway.WithBrowser("pinbot"),
			gateway.WithDevice("pinbot"),
		),
		sharding.WithDefaultIdentifyRateLimiterConfigOpt(
			gateway.WithIdentifyMaxConcurrency(max(gb.SessionStartLimit.MaxConcurrency, 1)),
			gateway.WithIdentifyRateLimiterLogger(b.slog),
		),
	}
	opts = append(opts, b.shardOpts...)
	sm := sharding.New(b.cfg.Token, b.client.EventManager.HandleGatewayEvent, opts...)

	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		return ErrClosed
	}
	b.shards = sm
	b.client.ShardManager = sm
	b.mu.Unlock()

	b.log.Info().Int("shards", shards).Msg("opening the gateway")
	sm.Open(ctx)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bot: opening the gateway: %w", err)
	}
	// Open only logs a shard it could not open (a refused IDENTIFY, such
	// as close code 4004 for a token the gateway does not accept): such a
	// shard stays down, and its guilds would never be served.
	var down []int
	for _, id := range ids {
		if sh := sm.Shard(id); sh == nil || sh.Status() != gateway.StatusReady {
			down = append(down, id)
		}
	}
	if len(down) > 0 {
		return fmt.Errorf("bot: opening the gateway: %d of %d shards did not connect (shards %v); the log has Discord's reason",
			len(down), shards, down)
	}
	return nil
}

// syncCommands bulk-overwrites the global commands.
func (b *Bot) syncCommands(ctx context.Context) error {
	cmds, err := b.client.Rest.SetGlobalCommands(b.appID, commands(), rest.WithCtx(ctx))
	if err != nil {
		return fmt.Errorf("bot: syncing commands: %w", err)
	}
	b.log.Info().Int("commands", len(cmds)).Msg("commands synced")
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
	sm := b.shards
	b.mu.Unlock()

	if sm != nil {
		sm.Close(ctx)
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
	b.client.Close(ctx)
	b.log.Info().Msg("closed")
	if forced {
		return errors.New("bot: close: handlers had to be cancelled")
	}
	return nil
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

// routes builds the command and component router.
func (b *Bot) routes() *handler.Mux {
	m := handler.New()
	m.Use(b.admit)
	m.SlashCommand("/"+cmdPin, b.handlePin)
	m.Autocomplete("/"+cmdPin, b.autocompletePin)
	m.MessageCommand("/"+cmdPinMessage, b.handlePinMessage)
	m.SlashCommand("/"+cmdSettings, b.handleSettings)
	m.SlashCommand("/"+cmdLink, b.handleLink)
	m.SlashCommand("/"+cmdUnlink, b.handleUnlink)
	m.Autocomplete("/"+cmdUnlink, b.autocompleteUnlink)
	m.Component(idSwitch, b.handleSwitch)
	m.Component(idBoard+"/{account}", b.handleDefaultBoard)
	m.NotFound(b.notFound)
	m.Error(func(e *handler.InteractionEvent, err error) {
		b.log.Error().Str("error", errText(err)).Str("interaction_id", e.ID().String()).Msg("handler failed")
	})
	return m
}

// admit is the first step of every interaction. Autocomplete is answered
// directly, bounded by autocompleteTimeout. Everything else is deferred
// at once with an ephemeral "thinking" response, on the event's own
// goroutine (disgo runs each event on one when async events are on), then
// waits for one of Config.Workers workers: a burst of commands queues,
// acknowledged, instead of running all at once. An interaction whose
// deferral fails (too late, or already acknowledged, as when an event is
// delivered twice) is not worked on, so no interaction is answered twice.
func (b *Bot) admit(next handler.Handler) handler.Handler {
	return func(e *handler.InteractionEvent) error {
		if !b.enter() {
			b.log.Debug().Str("interaction_id", e.ID().String()).Msg("interaction ignored: closing")
			if b.onDone != nil {
				b.onDone(e.ID())
			}
			return nil
		}
		defer b.leave()
		if b.onDone != nil {
			defer b.onDone(e.ID())
		}

		if e.Type() == discord.InteractionTypeAutocomplete {
			select {
			case b.autocompletes <- struct{}{}:
				defer func() { <-b.autocompletes }()
			default:
				return e.AutocompleteResult([]discord.AutocompleteChoice{}, rest.WithCtx(b.workCtx))
			}
			start := time.Now()
			ctx, cancel := context.WithDeadline(b.workCtx, start.Add(autocompleteTimeout))
			defer cancel()
			e.Ctx = context.WithValue(ctx, answerByKey{}, start.Add(autocompleteAnswerBy))
			return next(e)
		}

		actx, cancel := context.WithTimeout(b.workCtx, ackTimeout)
		err := e.DeferCreateMessage(true, rest.WithCtx(actx))
		cancel()
		if err != nil && !b.deferredAnyway(e.Token(), err) {
			b.log.Warn().Str("interaction_id", e.ID().String()).Str("error", errText(err)).
				Msg("interaction not acknowledged; not working on it")
			return nil
		}

		select {
		case b.workers <- struct{}{}:
			defer func() { <-b.workers }()
		case <-b.closingCh:
		}
		if b.isClosing() {
			// Acknowledged but not started: say so rather than start a
			// batch while shutting down.
			b.reply(e.Token(), reply{content: msgRestarting})
			return nil
		}
		ctx, cancel := context.WithTimeout(b.workCtx, b.cfg.HandlerTimeout)
		defer cancel()
		e.Ctx = ctx
		return next(e)
	}
}

// deferredAnyway reports whether a deferral that failed with err took
// effect at Discord all the same: its answer was lost or late (a timeout,
// a broken connection, a 5xx), but Discord has the "thinking" response,
// and the user waits for it to be edited. A refusal (a 4xx such as 10062
// Unknown interaction or 40060 already acknowledged) did not take effect.
// Otherwise the original response is fetched: it exists only if the
// deferral took effect.
func (b *Bot) deferredAnyway(token string, err error) bool {
	var re *rest.Error
	if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < http.StatusInternalServerError {
		return false
	}
	ctx, cancel := context.WithTimeout(b.workCtx, ackTimeout)
	defer cancel()
	if _, gerr := b.client.Rest.GetInteractionResponse(b.appID, token, rest.WithCtx(ctx)); gerr != nil {
		return false
	}
	b.log.Info().Str("error", errText(err)).Msg("the deferral's answer was lost, but Discord has it; working on the interaction")
	return true
}

// answerByKey keys the instant by which an autocomplete interaction must
// be answered in its handler's context (see admit).
type answerByKey struct{}

// answerContext returns the context to send an autocomplete answer with,
// given the handler's context ctx. Its deadline is the one admit set for
// answering, not ctx's: the lookup behind the choices may have used up ctx,
// and an answer, even an empty one, is still due.
func (b *Bot) answerContext(ctx context.Context) (context.Context, context.CancelFunc) {
	by, ok := ctx.Value(answerByKey{}).(time.Time)
	if !ok {
		by = time.Now().Add(autocompleteAnswerBy)
	}
	return context.WithDeadline(b.workCtx, by)
}

// notFound answers an interaction no route serves (a command removed from
// this version, a stale component).
func (b *Bot) notFound(e *handler.InteractionEvent) error {
	if e.Type() == discord.InteractionTypeAutocomplete {
		actx, cancel := b.answerContext(e.Ctx)
		defer cancel()
		return e.AutocompleteResult([]discord.AutocompleteChoice{}, rest.WithCtx(actx))
	}
	b.reply(e.Token(), reply{content: msgUnknownCommand})
	return nil
}

// reply is what an interaction's deferred response becomes.
type reply struct {
	content    string
	components []discord.LayoutComponent
}

// maxMessageRunes is Discord's limit on a message's content.
const maxMessageRunes = 2000

// reply edits the deferred response into r; content beyond Discord's 2000
// characters goes into ephemeral followups, with the components on the
// last message. Failures are logged: there is no one left to tell.
func (b *Bot) reply(token string, r reply) {
	ctx, cancel := context.WithTimeout(b.workCtx, replyTimeout)
	defer cancel()
	chunks := splitMessage(r.content, maxMessageRunes)
	for i, c := range chunks {
		var comps *[]discord.LayoutComponent
		if i == len(chunks)-1 {
			cs := r.components
			if cs == nil {
				cs = []discord.LayoutComponent{}
			}
			comps = &cs
		}
		var err error
		if i == 0 {
			_, err = b.client.Rest.UpdateInteractionResponse(b.appID, token, discord.MessageUpdate{
				Content:         &c,
				Components:      comps,
				AllowedMentions: &noMentions,
			}, rest.WithCtx(ctx))
		} else {
			mc := discord.MessageCreate{Content: c, Flags: discord.MessageFlagEphemeral, AllowedMentions: &noMentions}
			if comps != nil {
				mc.Components = *comps
			}
			_, err = b.client.Rest.CreateFollowupMessage(b.appID, token, mc, rest.WithCtx(ctx))
		}
		if err != nil {
			b.log.Warn().Str("error", errText(err)).Int("part", i+1).Msg("reply not delivered")
			return
		}
	}
}

// invocation is what every handler needs to know of its interaction.
type invocation struct {
	ctx       context.Context
	id        snowflake.ID
	token     string
	userID    snowflake.ID
	guildID   snowflake.ID // 0 outside a guild
	channelID snowflake.ID
	// perms are the user's permissions in the channel, as Discord sent
	// them.
	perms discord.Permissions
	log   zerolog.Logger
}

func (b *Bot) invocation(ctx context.Context, i discord.Interaction) invocation {
	inv := invocation{ctx: ctx, id: i.ID(), token: i.Token(), userID: i.User().ID}
	if g := i.GuildID(); g != nil {
		inv.guildID = *g
	}
	if ch := i.Channel(); ch.MessageChannel != nil {
		inv.channelID = ch.ID()
		inv.perms = ch.Permissions
	}
	if m := i.Member(); m != nil && m.Permissions != 0 {
		inv.perms = m.Permissions
	}
	inv.log = b.log.With().Str("interaction_id", inv.id.String()).Str("user_id", inv.userID.String()).Logger()
	return inv
}
