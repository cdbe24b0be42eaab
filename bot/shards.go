package bot

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/disgoorg/disgo/sharding"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/internal/discordio"
)

// ShardState is one gateway shard's connection.
type ShardState struct {
	ID int
	// Connected says the shard's session is ready (READY or RESUMED
	// received) and its connection has not dropped since.
	Connected bool
}

// ShardSession is what resumes a gateway shard's session in another
// process: Discord's session id, the last sequence received and the
// address to resume at.
type ShardSession struct {
	SessionID string `json:"session_id"`
	Sequence  int    `json:"sequence"`
	ResumeURL string `json:"resume_url,omitempty"`
}

// IdentifyLimiter spaces the gateway's IDENTIFYs as Discord's session
// start limit wants (the methods of disgo's gateway.IdentifyRateLimiter):
// Wait returns once shardID may identify, Unlock follows the IDENTIFY.
type IdentifyLimiter interface {
	Wait(ctx context.Context, shardID int) error
	Unlock(shardID int)
	Close(ctx context.Context)
}

// RecommendedShards asks Discord (GET /gateway/bot, with cfg's Token and
// APIURL) for the shard count it recommends: a cluster's first member
// stores it for all.
func RecommendedShards(ctx context.Context, cfg Config) (int, error) {
	appID, err := applicationID(cfg.Token)
	if err != nil {
		return 0, err
	}
	rest := discordio.NewREST(discordio.RESTConfig{
		Token: cfg.Token, AppID: appID, URL: cfg.APIURL,
		Log: cfg.Log.With().Str("component", "discord-rest").Logger(),
	})
	defer rest.Close(context.WithoutCancel(ctx))
	info, err := rest.GatewayBot(ctx)
	if err != nil {
		return 0, fmt.Errorf("bot: GET /gateway/bot: %w", err)
	}
	return max(info.Shards, 1), nil
}

// dropCloseTimeout bounds the close of a shard dropped.
const dropCloseTimeout = 5 * time.Second

// shardRun is a shard the program opened (Config.ShardsByCaller).
type shardRun struct {
	sess   *ShardSession      // to resume, until the open begins
	cancel context.CancelFunc // ends the open; nil until it begins
	done   chan struct{}      // closed once the open returned; nil until it begins
	// parked is the session kept when Close closed the shard resumably.
	parked *ShardSession
}

// Shards reports the state of every gateway shard the bot opened, in
// order of ID; nil before Start. With Config.ShardsByCaller, the shards
// opened by OpenShard and not closed since. It never waits for the
// gateway.
func (b *Bot) Shards() []ShardState {
	b.mu.Lock()
	gw := b.gw
	var held []int
	if b.cfg.ShardsByCaller {
		held = make([]int, 0, len(b.shards))
		for id := range b.shards {
			held = append(held, id)
		}
	}
	b.mu.Unlock()
	if gw == nil {
		return nil
	}
	ss := gw.Shards()
	if b.cfg.ShardsByCaller {
		slices.Sort(held)
		out := make([]ShardState, len(held))
		for i, id := range held {
			out[i] = ShardState{ID: id}
			for _, s := range ss {
				if s.ID == id {
					out[i].Connected = s.Connected
				}
			}
		}
		return out
	}
	out := make([]ShardState, len(ss))
	for i, s := range ss {
		out[i] = ShardState{ID: s.ID, Connected: s.Connected}
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

// OpenShard opens gateway shard (Config.ShardsByCaller), resuming sess
// when not nil (identifying if Discord refuses it). It does not wait for
// the connection: Shards says when it is ready. Before Start, the shard
// opens at Start. A shard is opened once until CloseShard or DropShard.
func (b *Bot) OpenShard(shard int, sess *ShardSession) error {
	if !b.cfg.ShardsByCaller {
		return fmt.Errorf("bot: OpenShard(%d) without Config.ShardsByCaller", shard)
	}
	if shard < 0 || (b.cfg.Shards > 0 && shard >= b.cfg.Shards) {
		return fmt.Errorf("bot: gateway shard %d out of range [0, %d)", shard, b.cfg.Shards)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closing:
		return ErrClosed
	case b.shards[shard] != nil:
		return fmt.Errorf("bot: gateway shard %d already open", shard)
	}
	b.shards[shard] = &shardRun{sess: sess}
	if b.gw != nil {
		b.startShardLocked(shard)
	}
	return nil
}

// openWantedLocked begins opening the shards OpenShard asked for before
// the gateway existed. b.mu is held.
func (b *Bot) openWantedLocked() {
	for id, r := range b.shards {
		if r.done == nil {
			b.startShardLocked(id)
		}
	}
}

// startShardLocked opens shard on a goroutine of its own, once the
// shard's previous connection is closed. b.mu is held and b.gw set.
func (b *Bot) startShardLocked(shard int) {
	r, gw := b.shards[shard], b.gw
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	prev := b.shardGone[shard]
	var sess *discordio.ShardSession
	if r.sess != nil {
		sess = &discordio.ShardSession{SessionID: r.sess.SessionID, Sequence: r.sess.Sequence, ResumeURL: r.sess.ResumeURL}
	}
	b.log.Info().Int("shard", shard).Bool("resume", sess != nil).Msg("opening a gateway shard")
	go func() {
		defer close(r.done)
		if prev != nil {
			select {
			case <-prev:
			case <-ctx.Done():
				return
			}
		}
		if err := gw.OpenShard(ctx, shard, sess); err != nil && ctx.Err() == nil {
			b.log.Error().Err(err).Int("shard", shard).Msg("gateway shard did not connect; readiness says so")
		}
	}()
}

// CloseShard closes gateway shard for a graceful move to another process
// (Config.ShardsByCaller): the connection closes without ending Discord's
// session, which it returns for the next holder to resume (false when
// there is none, such as a shard that never connected). Its events are
// dropped from the call on. An open still under way is cut short.
func (b *Bot) CloseShard(ctx context.Context, shard int) (ShardSession, bool) {
	b.mu.Lock()
	r, gw := b.shards[shard], b.gw
	delete(b.shards, shard)
	gone := b.goneLocked(shard)
	b.mu.Unlock()
	defer close(gone)
	switch {
	case r == nil:
		return ShardSession{}, false
	case r.parked != nil:
		return *r.parked, true
	case r.done == nil:
		// Never opened: the session it was to resume is still good.
		if r.sess != nil {
			return *r.sess, true
		}
		return ShardSession{}, false
	}
	gw.Drop(shard)
	select {
	case <-r.done:
	default:
		r.cancel()
		<-r.done
	}
	s, ok := gw.CloseShard(ctx, shard, true)
	return ShardSession{SessionID: s.SessionID, Sequence: s.Sequence, ResumeURL: s.ResumeURL}, ok
}

// DropShard drops gateway shard at once (Config.ShardsByCaller): its
// events are dropped from the call on, and its connection is closed on a
// goroutine, leaving its session to be resumed elsewhere. It does not
// block: the shard was lost.
func (b *Bot) DropShard(shard int) {
	b.mu.Lock()
	r, gw := b.shards[shard], b.gw
	delete(b.shards, shard)
	if r == nil || r.done == nil || r.parked != nil {
		b.mu.Unlock()
		return
	}
	gone := b.goneLocked(shard)
	b.mu.Unlock()
	gw.Drop(shard)
	r.cancel()
	go func() {
		defer close(gone)
		<-r.done
		ctx, cancel := context.WithTimeout(context.Background(), dropCloseTimeout)
		defer cancel()
		// Closed resumably: the shard's next holder resumes the session
		// from its last checkpoint (ShardSession), if no one has yet.
		gw.CloseShard(ctx, shard, true)
	}()
	b.log.Warn().Int("shard", shard).Msg("gateway shard dropped: no longer this member's")
}

// ShardSession returns the session of an opened gateway shard
// (Config.ShardsByCaller) as a checkpoint: what another process resumes
// if this one dies, Discord replaying the events after the last one
// handed on here (they reach the bot marked Replayed). False while the
// shard is not opened or has no session yet. It never waits for the
// gateway.
func (b *Bot) ShardSession(shard int) (ShardSession, bool) {
	b.mu.Lock()
	gw, open := b.gw, b.shards[shard] != nil
	b.mu.Unlock()
	if gw == nil || !open {
		return ShardSession{}, false
	}
	s, ok := gw.Session(shard)
	return ShardSession{SessionID: s.SessionID, Sequence: s.Sequence, ResumeURL: s.ResumeURL}, ok
}

// servesGuild says whether the process may still serve the events of
// guild's shard (Config.ShardServing): work on an event of a shard
// another process may now hold stops before it queues anything, since
// that holder gets the event replayed.
func (b *Bot) servesGuild(guild snowflake.ID) bool {
	if b.cfg.ShardServing == nil || b.cfg.Shards <= 0 {
		return true
	}
	return b.cfg.ShardServing(sharding.ShardIDByGuild(guild, b.cfg.Shards))
}

// goneLocked returns a channel the caller closes once shard's connection
// is closed; the next open of the shard waits for it. b.mu is held.
func (b *Bot) goneLocked(shard int) chan struct{} {
	if b.shardGone == nil {
		b.shardGone = make(map[int]chan struct{})
	}
	ch := make(chan struct{})
	b.shardGone[shard] = ch
	return ch
}

// parkShards closes every opened shard resumably as the bot closes
// (Config.ShardsByCaller), keeping their sessions for CloseShard: the
// shards' next holders resume them.
func (b *Bot) parkShards(ctx context.Context, gw *discordio.Gateway) {
	if !b.cfg.ShardsByCaller {
		return
	}
	b.mu.Lock()
	runs := make(map[int]*shardRun, len(b.shards))
	for id, r := range b.shards {
		if r.done != nil {
			runs[id] = r
		}
	}
	b.mu.Unlock()
	for id, r := range runs {
		gw.Drop(id)
		select {
		case <-r.done:
		default:
			r.cancel()
			<-r.done
		}
		s, ok := gw.CloseShard(ctx, id, true)
		if ok {
			b.mu.Lock()
			r.parked = &ShardSession{SessionID: s.SessionID, Sequence: s.Sequence, ResumeURL: s.ResumeURL}
			b.mu.Unlock()
		}
	}
}

// shardReady reports each shard's READY and RESUMED: the shards'
// reconnects and resumes.
func (b *Bot) shardReady(shard int, resumed, again bool) {
	b.cfg.Observer.ShardReady(shard, resumed, again)
	if again || resumed {
		b.log.Info().Int("shard", shard).Bool("resumed", resumed).Msg("gateway shard connected again")
	}
}

// shardClosed learns of a shard whose connection closed and that is not
// reconnected (Discord's close code forbids it, or reconnecting failed).
// The shard stays down, and Shards says so, until the bot starts again.
func (b *Bot) shardClosed(shard int, err error, reconnect bool) {
	if b.isClosing() {
		b.log.Debug().Int("shard", shard).Err(err).Msg("gateway shard closed")
		return
	}
	b.log.Error().Int("shard", shard).Err(err).Bool("resumable", reconnect).
		Msg("gateway shard closed and will not reconnect; its guilds are not served until the bot restarts")
}
