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
	// OnReady learns of each shard's READY (resumed false) and RESUMED
	// (true); again says the shard had been ready before in this run.
	OnReady func(shard int, resumed, again bool)
	// OnClosed learns of a shard closed that disgo does not reconnect
	// (Discord's close code forbids it, or reconnecting failed).
	OnClosed func(shard int, err error, resumable bool)
	// Extra options of the shard manager (tests).
	Extra []ShardOpt
}

// ShardState is one shard's connection: Connected once its session is
// ready (READY or RESUMED received) and while its connection holds.
type ShardState struct {
	ID        int
	Connected bool
}

// Gateway is the bot's sharded gateway connection, through disgo's shard
// manager. It hands on interactions only; the bot asks for no intents.
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
	g := &Gateway{cfg: cfg, ids: make([]int, shards), gws: make(map[int]gateway.Gateway, shards), ready: make(map[int]bool, shards)}
	for i := range g.ids {
		g.ids[i] = i
	}
	opts := []sharding.ConfigOpt{
		sharding.WithShardCount(shards),
		sharding.WithShardIDs(g.ids...),
		sharding.WithLogger(cfg.Log),
		sharding.WithGatewayConfigOpts(
			gateway.WithURL(url),
			gateway.WithLogger(cfg.Log),
			gateway.WithIntents(gateway.IntentsNone),
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
	opts = append(opts, cfg.Extra...)
	g.sm = sharding.New(cfg.Token, g.event, opts...)
	return g
}

// Count is the number of shards.
func (g *Gateway) Count() int { return len(g.ids) }

// Open connects every shard, as Discord's session start limit allows.
// disgo only logs a shard it could not open (a refused IDENTIFY, such as
// close code 4004 for a token the gateway does not accept): Open returns
// an error naming every shard not ready once it is done.
func (g *Gateway) Open(ctx context.Context) error {
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

// Shards reports every shard's state, in order of ID. It never waits for
// the gateway.
func (g *Gateway) Shards() []ShardState {
	g.mu.Lock()
	gws := make([]gateway.Gateway, len(g.ids))
	for i, id := range g.ids {
		gws[i] = g.gws[id]
	}
	g.mu.Unlock()
	out := make([]ShardState, len(g.ids))
	for i, id := range g.ids {
		out[i] = ShardState{ID: id, Connected: gws[i] != nil && gws[i].Status() == gateway.StatusReady}
	}
	return out
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

// markReady records that shard is ready and reports whether it had been
// before.
func (g *Gateway) markReady(shard int) (again bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	again = g.ready[shard]
	g.ready[shard] = true
	return again
}

// event is every shard's event handler: it reports READY and RESUMED and
// hands each interaction on at once.
func (g *Gateway) event(gw gateway.Gateway, t gateway.EventType, _ int, ev gateway.EventData) {
	switch t {
	case gateway.EventTypeReady, gateway.EventTypeResumed:
		shard := gw.ShardID()
		again := g.markReady(shard)
		if g.cfg.OnReady != nil {
			g.cfg.OnReady(shard, t == gateway.EventTypeResumed, again)
		}
	case gateway.EventTypeInteractionCreate:
		if i := Interaction(ev); i != nil && g.cfg.OnInteraction != nil {
			go g.cfg.OnInteraction(i)
		}
	}
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
