package bot

import (
	"sync"

	"github.com/disgoorg/disgo/gateway"
)

// ShardState is one gateway shard's connection.
type ShardState struct {
	ID int
	// Connected says the shard's session is ready (READY or RESUMED
	// received) and its connection has not dropped since.
	Connected bool
}

// shardSet keeps the gateway of each shard Start opened, apart from
// disgo's shard manager, whose lock its Close holds while it closes every
// shard: reading the shards' state never waits for the gateway.
type shardSet struct {
	mu    sync.Mutex
	ids   []int // the shards Start opens; nil before Start
	gws   map[int]gateway.Gateway
	ready map[int]bool // shards that have been ready in this run
}

// open records the shards Start is about to open.
func (s *shardSet) open(ids []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = ids
	s.gws = make(map[int]gateway.Gateway, len(ids))
	s.ready = make(map[int]bool, len(ids))
}

// put keeps g as its shard's gateway (disgo makes a new one when it
// opens a shard again).
func (s *shardSet) put(g gateway.Gateway) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gws != nil {
		s.gws[g.ShardID()] = g
	}
}

// markReady records that shard is ready and reports whether it had been
// before.
func (s *shardSet) markReady(shard int) (again bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	again = s.ready[shard]
	if s.ready != nil {
		s.ready[shard] = true
	}
	return again
}

// Shards reports the state of every gateway shard the bot opened, in
// order of ID; nil before Start. It never waits for the gateway.
func (b *Bot) Shards() []ShardState {
	b.gw.mu.Lock()
	ids := b.gw.ids
	gws := make([]gateway.Gateway, len(ids))
	for i, id := range ids {
		gws[i] = b.gw.gws[id]
	}
	b.gw.mu.Unlock()
	if ids == nil {
		return nil
	}
	out := make([]ShardState, len(ids))
	for i, id := range ids {
		out[i] = ShardState{ID: id, Connected: gws[i] != nil && gws[i].Status() == gateway.StatusReady}
	}
	return out
}

// ShardsConnected returns how many gateway shards are connected.
func (b *Bot) ShardsConnected() int {
	n := 0
	for _, s := range b.Shards() {
		if s.Connected {
			n++
		}
	}
	return n
}

// newGateway makes a shard's gateway as disgo's shard manager does, and
// keeps it (sharding.WithGatewayCreateFunc).
func (b *Bot) newGateway(token string, h gateway.EventHandlerFunc, opts ...gateway.ConfigOpt) gateway.Gateway {
	g := gateway.New(token, h, opts...)
	b.gw.put(g)
	return g
}

// gatewayEvent hands every gateway event to disgo's event manager, after
// reporting each shard's READY and RESUMED: the shards' reconnects and
// resumes.
func (b *Bot) gatewayEvent(g gateway.Gateway, t gateway.EventType, seq int, ev gateway.EventData) {
	if t == gateway.EventTypeReady || t == gateway.EventTypeResumed {
		shard, resumed := g.ShardID(), t == gateway.EventTypeResumed
		again := b.gw.markReady(shard)
		b.cfg.Observer.ShardReady(shard, resumed, again)
		if again || resumed {
			b.log.Info().Int("shard", shard).Bool("resumed", resumed).Msg("gateway shard connected again")
		}
	}
	b.client.EventManager.HandleGatewayEvent(g, t, seq, ev)
}

// shardClosed is disgo's close handler: it is called when a shard's
// connection closed and disgo does not reconnect it (Discord's close code
// forbids it, or reconnecting failed). The shard stays down, and
// Shards says so, until the bot starts again.
func (b *Bot) shardClosed(g gateway.Gateway, err error, reconnect bool) {
	if b.isClosing() {
		b.log.Debug().Int("shard", g.ShardID()).Err(err).Msg("gateway shard closed")
		return
	}
	b.log.Error().Int("shard", g.ShardID()).Err(err).Bool("resumable", reconnect).
		Msg("gateway shard closed and will not reconnect; its guilds are not served until the bot restarts")
}
