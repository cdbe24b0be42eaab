package discordio

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/disgo/sharding"
	"github.com/disgoorg/snowflake/v2"
	"github.com/gorilla/websocket"
)

// ShardOpt is an option of disgo's shard manager (tests).
type ShardOpt = sharding.ConfigOpt

// GatewayConfig configures Gateway.
type GatewayConfig struct {
	Token string
	// Info is GET /gateway/bot's answer; URL, when set, replaces its URL
	// and Shards, when not zero, its shard count.
	Info   GatewayInfo
	URL    string
	Shards int
	Log    *slog.Logger
	// OnInteraction receives every INTERACTION_CREATE, each on a
	// goroutine of its own: the gateway's reader is never held up.
	OnInteraction func(discord.Interaction)
	// OnReaction, when not nil, makes the shards identify with the
	// GUILD_MESSAGE_REACTIONS intent (not a privileged one) and receives
	// every MESSAGE_REACTION_ADD and MESSAGE_REACTION_REMOVE, in the
	// order the shard received them, on the shard's reading goroutine: it
	// must hand the event on and return at once. Nil: the shards ask for
	// no intent at all.
	OnReaction func(Reaction)
	// OnMessage, when not nil, adds the GUILD_MESSAGES intent (not a
	// privileged one) and receives every MESSAGE_CREATE, MESSAGE_UPDATE
	// and MESSAGE_DELETE of a guild message (a MESSAGE_DELETE_BULK as
	// one delete per message), as OnReaction does: on the shard's
	// reading goroutine, in order; it must hand the event on and return
	// at once.
	OnMessage func(Message)
	// Admit, with Manual, is asked for every INTERACTION_CREATE of an
	// opened shard before it goes to OnInteraction, and must not block:
	// false (the process is closing) drops the event and stops the
	// shard handing events on, so that none after it counts as handled
	// and the shard's next holder gets them replayed. Nil admits all.
	Admit func(discord.Interaction) bool
	// Serving, with Manual, is asked for every event of an opened shard
	// and must not block: false (a cluster member past its lease, which
	// another may have handed the shard to) drops the event. Nil serves
	// all.
	Serving func(shard int) bool
	// OnReady learns of each shard's READY (resumed false) and RESUMED
	// (true); again says the shard had been ready before in this run.
	OnReady func(shard int, resumed, again bool)
	// OnClosed learns of a shard closed that disgo does not reconnect
	// (Discord's close code forbids it, or reconnecting failed).
	OnClosed func(shard int, err error, resumable bool)
	// Manual leaves the opening and closing of each shard to the caller
	// (OpenShard, CloseShard): Open opens none, Shards reports the shards
	// opened, and events of a shard not opened are dropped. A cluster's
	// members open the shards they hold.
	Manual bool
	// IdentifyLimiter, when not nil, spaces the IDENTIFYs instead of
	// disgo's limiter of this process (a cluster's is shared by its
	// members).
	IdentifyLimiter gateway.IdentifyRateLimiter
	// Extra options of the shard manager (tests).
	Extra []ShardOpt
}

// ShardSession is what resumes a shard's session: Discord's session id,
// the last sequence received and the address to resume at.
type ShardSession struct {
	SessionID string
	Sequence  int
	ResumeURL string
}

// ShardState is one shard's connection: Connected once its session is
// ready (READY or RESUMED received) and while its connection holds.
type ShardState struct {
	ID        int
	Connected bool
}

// Gateway is the bot's sharded gateway connection, through disgo's shard
// manager. It hands on interactions and, with GatewayConfig.OnReaction,
// reactions; it asks for no intent but the reactions'.
type Gateway struct {
	cfg GatewayConfig
	ids []int
	sm  sharding.ShardManager

	// The shards' gateways, kept apart from the shard manager, whose lock
	// its Close holds while it closes every shard: reading the shards'
	// state never waits for the gateway.
	mu    sync.Mutex
	gws   map[int]gateway.Gateway
	ready map[int]bool // shards that have been ready in this run
	// opened holds, with Manual, the shards opened and not closed since:
	// the others' events are dropped.
	opened map[int]bool
	// handled is, with Manual, each opened shard's sequence number of the
	// last event handed on: a graceful close stores it, not the last one
	// received, so that Discord replays to the next holder what arrived
	// after the shard stopped handing events on.
	handled map[int]int
	// replaying holds, with Manual, the shards resuming a session given
	// to OpenShard, until their RESUMED or READY: the events received
	// meanwhile are Discord's replay, which another process may have
	// worked on.
	replaying map[int]bool
	// sessions holds, with Manual, each opened shard's session id and
	// resume address: the session given to OpenShard, then READY's.
	sessions map[int]ShardSession
	// shardMu serializes OpenShard and CloseShard of each shard.
	shardMu map[int]*sync.Mutex
}

// NewGateway prepares the shards; Open connects them.
func NewGateway(cfg GatewayConfig) *Gateway {
	shards := cfg.Shards
	if shards == 0 {
		shards = max(cfg.Info.Shards, 1)
	}
	url := cfg.Info.URL
	if cfg.URL != "" {
		url = cfg.URL
	}
	g := &Gateway{cfg: cfg, ids: make([]int, shards), gws: make(map[int]gateway.Gateway, shards), ready: make(map[int]bool, shards),
		opened: make(map[int]bool), handled: make(map[int]int), replaying: make(map[int]bool), sessions: make(map[int]ShardSession), shardMu: make(map[int]*sync.Mutex, shards)}
	for i := range g.ids {
		g.ids[i] = i
		g.shardMu[i] = &sync.Mutex{}
	}
	opts := []sharding.ConfigOpt{
		sharding.WithShardCount(shards),
		sharding.WithShardIDs(g.ids...),
		sharding.WithLogger(cfg.Log),
		sharding.WithGatewayConfigOpts(
			gateway.WithURL(url),
			gateway.WithLogger(cfg.Log),
			gateway.WithIntents(cfg.Intents()),
			gateway.WithOS(runtime.GOOS),
			gateway.WithBrowser("pinbot"),
			gateway.WithDevice("pinbot"),
		),
		sharding.WithDefaultIdentifyRateLimiterConfigOpt(
			gateway.WithIdentifyMaxConcurrency(max(cfg.Info.MaxConcurrency, 1)),
			gateway.WithIdentifyRateLimiterLogger(cfg.Log),
		),
		sharding.WithGatewayCreateFunc(g.newGateway),
		sharding.WithCloseHandler(func(gw gateway.Gateway, err error, reconnect bool) {
			if cfg.OnClosed != nil {
				cfg.OnClosed(gw.ShardID(), err, reconnect)
			}
		}),
	}
	if cfg.IdentifyLimiter != nil {
		opts = append(opts, sharding.WithIdentifyRateLimiter(cfg.IdentifyLimiter))
	}
	opts = append(opts, cfg.Extra...)
	g.sm = sharding.New(cfg.Token, g.event, opts...)
	return g
}

// Intents are the gateway intents the shards identify with:
// GUILD_MESSAGE_REACTIONS with OnReaction, GUILD_MESSAGES with OnMessage,
// else none. Interactions need
// none, and a message fetched over REST carries its attachments and
// embeds when the application has the message content intent enabled,
// whatever the gateway asked for: no privileged intent is asked, so a
// shard is never refused for one (close code 4014).
func (c GatewayConfig) Intents() gateway.Intents {
	in := gateway.IntentsNone
	if c.OnReaction != nil {
		in |= gateway.IntentGuildMessageReactions
	}
	if c.OnMessage != nil {
		in |= gateway.IntentGuildMessages
	}
	return in
}

// Count is the number of shards.
func (g *Gateway) Count() int { return len(g.ids) }

// Open connects every shard, as Discord's session start limit allows.
// disgo only logs a shard it could not open (a refused IDENTIFY, such as
// close code 4004 for a token the gateway does not accept): Open returns
// an error naming every shard not ready once it is done.
func (g *Gateway) Open(ctx context.Context) error {
	if g.cfg.Manual {
		return nil
	}
	g.sm.Open(ctx)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("opening the gateway: %w", err)
	}
	var down []int
	for _, id := range g.ids {
		if sh := g.sm.Shard(id); sh == nil || sh.Status() != gateway.StatusReady {
			down = append(down, id)
		}
	}
	if len(down) > 0 {
		return fmt.Errorf("opening the gateway: %d of %d shards did not connect (shards %v); the log has Discord's reason",
			len(down), len(g.ids), down)
	}
	return nil
}

// Close closes every shard.
func (g *Gateway) Close(ctx context.Context) { g.sm.Close(ctx) }

// Shards reports every shard's state, in order of ID; with Manual, every
// opened shard's. It never waits for the gateway.
func (g *Gateway) Shards() []ShardState {
	g.mu.Lock()
	var ids []int
	for _, id := range g.ids {
		if !g.cfg.Manual || g.opened[id] {
			ids = append(ids, id)
		}
	}
	gws := make([]gateway.Gateway, len(ids))
	for i, id := range ids {
		gws[i] = g.gws[id]
	}
	g.mu.Unlock()
	out := make([]ShardState, len(ids))
	for i, id := range ids {
		out[i] = ShardState{ID: id, Connected: gws[i] != nil && gws[i].Status() == gateway.StatusReady}
	}
	return out
}

// OpenShard connects shard (with Manual): it resumes sess when not nil,
// and identifies if Discord refuses the resume or there is no session.
// Its events are handed on from the call on, until CloseShard. An error
// leaves the shard opened but not connected: CloseShard still follows.
func (g *Gateway) OpenShard(ctx context.Context, shard int, sess *ShardSession) error {
	mu, err := g.shardLock(shard)
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	g.mu.Lock()
	g.opened[shard] = true
	g.handled[shard] = 0
	delete(g.replaying, shard)
	delete(g.sessions, shard)
	if sess != nil {
		g.handled[shard] = sess.Sequence
		g.replaying[shard] = sess.SessionID != ""
		if sess.SessionID != "" {
			g.sessions[shard] = ShardSession{SessionID: sess.SessionID, ResumeURL: sess.ResumeURL}
		}
	}
	g.mu.Unlock()
	if sess != nil && sess.SessionID != "" {
		err := g.sm.ResumeShard(ctx, shard, sharding.ShardState{SessionID: sess.SessionID, Sequence: sess.Sequence, ResumeURL: sess.ResumeURL})
		if err == nil || ctx.Err() != nil {
			return err
		}
		g.cfg.Log.Warn("resuming a gateway shard failed: identifying", "shard_id", shard, "err", err)
		g.sm.CloseShard(ctx, shard)
	}
	return g.sm.OpenShard(ctx, shard)
}

// CloseShard closes shard's connection; its events are dropped from the
// call on. With resumable, the connection closes without ending Discord's
// session, which it returns (false when the shard had none): another
// process may resume it, and Discord replays the events sent meanwhile.
// Otherwise the session ends.
func (g *Gateway) CloseShard(ctx context.Context, shard int, resumable bool) (ShardSession, bool) {
	mu, err := g.shardLock(shard)
	if err != nil {
		return ShardSession{}, false
	}
	g.mu.Lock()
	delete(g.opened, shard)
	handled := g.handled[shard]
	g.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	gw := g.sm.Shard(shard)
	if gw == nil {
		return ShardSession{}, false
	}
	var sess ShardSession
	ok := false
	if resumable {
		// Any code but 1000 and 1001 keeps the session: disgo's own
		// reconnects close with 1012.
		gw.CloseWithCode(ctx, websocket.CloseServiceRestart, "moving to another process")
		if id, seq := gw.SessionID(), gw.LastSequenceReceived(); id != nil && seq != nil {
			// Events received after the shard stopped handing them on
			// (Drop, or this call) were dropped: Discord replays them.
			sess, ok = ShardSession{SessionID: *id, Sequence: min(*seq, handled)}, true
			if u := gw.ResumeURL(); u != nil {
				sess.ResumeURL = *u
			}
		}
	}
	g.sm.CloseShard(ctx, shard)
	return sess, ok
}

// Drop drops shard's events from the call on, at once: a shard lost is
// closed after.
func (g *Gateway) Drop(shard int) {
	g.mu.Lock()
	delete(g.opened, shard)
	g.mu.Unlock()
}

func (g *Gateway) shardLock(shard int) (*sync.Mutex, error) {
	if mu := g.shardMu[shard]; mu != nil {
		return mu, nil
	}
	return nil, fmt.Errorf("gateway shard %d out of range [0, %d)", shard, len(g.ids))
}

// newGateway makes a shard's gateway as disgo's shard manager does, and
// keeps it (disgo makes a new one when it opens a shard again).
func (g *Gateway) newGateway(token string, h gateway.EventHandlerFunc, opts ...gateway.ConfigOpt) gateway.Gateway {
	gw := gateway.New(token, h, opts...)
	g.mu.Lock()
	g.gws[gw.ShardID()] = gw
	g.mu.Unlock()
	return gw
}

// handOn says whether the event ev of type t and sequence number seq
// that gw received is handed on: whether gw is the connection of a shard
// opened, and Config.Admit takes it if it is an interaction. If so, the
// event counts as handled (READY's session is kept), and replayed says
// it is part of the replay of a session resumed from OpenShard's (until
// RESUMED or READY). An interaction Admit refuses stops the shard
// handing events on, as Drop does.
func (g *Gateway) handOn(gw gateway.Gateway, t gateway.EventType, seq int, ev gateway.EventData) (ok, replayed bool) {
	i := Interaction(ev)
	g.mu.Lock()
	defer g.mu.Unlock()
	id := gw.ShardID()
	if !g.opened[id] || g.gws[id] != gw || (g.cfg.Serving != nil && !g.cfg.Serving(id)) {
		return false, false
	}
	if i != nil && g.cfg.Admit != nil && !g.cfg.Admit(i) {
		delete(g.opened, id)
		return false, false
	}
	if seq > 0 {
		g.handled[id] = seq
	}
	switch t {
	case gateway.EventTypeReady:
		delete(g.replaying, id)
		if r, ok := readyOf(ev); ok {
			g.sessions[id] = ShardSession{SessionID: r.SessionID, ResumeURL: r.ResumeGatewayURL}
		}
	case gateway.EventTypeResumed:
		delete(g.replaying, id)
	}
	return true, g.replaying[id]
}

func readyOf(ev gateway.EventData) (gateway.EventReady, bool) {
	switch e := ev.(type) {
	case gateway.EventReady:
		return e, true
	case *gateway.EventReady:
		if e != nil {
			return *e, true
		}
	}
	return gateway.EventReady{}, false
}

// Session returns the session of shard (with Manual) as a checkpoint
// for another process to resume it if this one dies: its id, resume
// address, and the sequence number of the last event handed on. False
// while the shard is not opened or has no session yet. It never waits
// for the gateway.
func (g *Gateway) Session(shard int) (ShardSession, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	sess, ok := g.sessions[shard]
	if !ok || !g.opened[shard] {
		return ShardSession{}, false
	}
	sess.Sequence = g.handled[shard]
	return sess, true
}

// markReady records that shard is ready and reports whether it had been
// before.
func (g *Gateway) markReady(shard int) (again bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	again = g.ready[shard]
	g.ready[shard] = true
	return again
}

// event is every shard's event handler: it reports READY and RESUMED,
// hands each interaction on at once, and each reaction to OnReaction.
func (g *Gateway) event(gw gateway.Gateway, t gateway.EventType, seq int, ev gateway.EventData) {
	replayed := false
	if g.cfg.Manual {
		var ok bool
		if ok, replayed = g.handOn(gw, t, seq, ev); !ok {
			return
		}
	}
	switch t {
	case gateway.EventTypeReady, gateway.EventTypeResumed:
		shard := gw.ShardID()
		again := g.markReady(shard)
		if g.cfg.OnReady != nil {
			g.cfg.OnReady(shard, t == gateway.EventTypeResumed, again)
		}
	case gateway.EventTypeInteractionCreate:
		// A replayed interaction needs no mark: Discord refuses to have
		// it acknowledged twice.
		if i := Interaction(ev); i != nil && g.cfg.OnInteraction != nil {
			go g.cfg.OnInteraction(i)
		}
	case gateway.EventTypeMessageReactionAdd, gateway.EventTypeMessageReactionRemove:
		if r, ok := ReactionOf(ev); ok && g.cfg.OnReaction != nil {
			r.Replayed = replayed
			g.cfg.OnReaction(r)
		}
	case gateway.EventTypeMessageCreate, gateway.EventTypeMessageUpdate, gateway.EventTypeMessageDelete:
		if g.cfg.OnMessage != nil {
			if m, ok := MessageOf(ev); ok && m.GuildID != 0 {
				m.Replayed = replayed
				g.cfg.OnMessage(m)
			}
		}
	case gateway.EventTypeMessageDeleteBulk:
		if g.cfg.OnMessage != nil {
			for _, m := range DeletedOf(ev) {
				if m.GuildID != 0 {
					m.Replayed = replayed
					g.cfg.OnMessage(m)
				}
			}
		}
	}
}

// Reaction is a MESSAGE_REACTION_ADD (Added) or MESSAGE_REACTION_REMOVE.
type Reaction struct {
	Added                        bool
	UserID, ChannelID, MessageID snowflake.ID
	GuildID                      snowflake.ID // 0 outside a guild
	// Bot says the reacting user is a bot, as an add's member tells;
	// a removal does not say.
	Bot bool
	// Emoji is a unicode emoji as Discord names it ("📌"), or a custom
	// emoji as "name:id".
	Emoji string
	// EmojiID is a custom emoji's ID; 0 for a unicode emoji.
	EmojiID snowflake.ID
	// Replayed: as Message.Replayed.
	Replayed bool
}

// ReactionOf returns the reaction a MESSAGE_REACTION_ADD or _REMOVE
// event's data holds; false for any other event.
func ReactionOf(ev gateway.EventData) (Reaction, bool) {
	switch e := ev.(type) {
	case *gateway.EventMessageReactionAdd:
		if e == nil {
			return Reaction{}, false
		}
		return ReactionOf(*e)
	case *gateway.EventMessageReactionRemove:
		if e == nil {
			return Reaction{}, false
		}
		return ReactionOf(*e)
	case gateway.EventMessageReactionAdd:
		r := reaction(e.UserID, e.ChannelID, e.MessageID, e.GuildID, e.Emoji)
		r.Added = true
		r.Bot = e.Member != nil && e.Member.User.Bot
		return r, true
	case gateway.EventMessageReactionRemove:
		return reaction(e.UserID, e.ChannelID, e.MessageID, e.GuildID, e.Emoji), true
	}
	return Reaction{}, false
}

func reaction(user, channel, message snowflake.ID, guild *snowflake.ID, emoji discord.PartialEmoji) Reaction {
	r := Reaction{UserID: user, ChannelID: channel, MessageID: message}
	if guild != nil {
		r.GuildID = *guild
	}
	if emoji.Name != nil {
		r.Emoji = *emoji.Name
	}
	if emoji.ID != nil {
		r.EmojiID = *emoji.ID
		r.Emoji += ":" + emoji.ID.String()
	}
	return r
}

// Interaction returns the interaction an INTERACTION_CREATE event's data
// holds, or nil.
func Interaction(ev gateway.EventData) discord.Interaction {
	switch e := ev.(type) {
	case gateway.EventInteractionCreate:
		return e.Interaction
	case *gateway.EventInteractionCreate:
		return e.Interaction
	}
	return nil
}
