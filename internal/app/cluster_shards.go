package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/internal/cluster"
	"github.com/pinbot/pinbot/internal/partition"
)

// shardSessionTimeout bounds the read of a shard's stored session when
// the member acquires the shard.
const shardSessionTimeout = 5 * time.Second

// shardLeaveTimeout bounds the handover of a closing member's shards
// before the bot closes; past it, the membership's close hands over what
// is left.
const shardLeaveTimeout = 15 * time.Second

// shardHost opens and closes the gateway shards this member holds in the
// cluster (see docs/design.md, "Several processes"): the membership's
// shard callbacks, through the bot's OpenShard, CloseShard and
// DropShard. A shard acquired before the bot exists opens when it is
// set. It is safe for simultaneous use.
type shardHost struct {
	count    int
	sessions *cluster.ShardSessions
	cli      *clientv3.Client
	keys     partition.Keys
	member   string
	log      zerolog.Logger

	mu      sync.Mutex
	bot     *bot.Bot
	pending map[int]*bot.ShardSession // acquired before the bot was set
}

// newShardHost returns the host of the cluster's count shards: the
// configured count, or the one the cluster stored, or Discord's
// recommendation, stored for the others when this member is the first.
func newShardHost(ctx context.Context, cli *clientv3.Client, keys partition.Keys, member string, configured int, bcfg bot.Config, log zerolog.Logger) (*shardHost, error) {
	bcfg.Log = log
	count, err := cluster.ShardCount(ctx, cli, keys, configured, func(ctx context.Context) (int, error) {
		return bot.RecommendedShards(ctx, bcfg)
	})
	if err != nil {
		return nil, err
	}
	return &shardHost{
		count: count, sessions: cluster.NewShardSessions(cli, keys), cli: cli, keys: keys, member: member,
		log:     log.With().Str("component", "shards").Logger(),
		pending: make(map[int]*bot.ShardSession),
	}, nil
}

// config returns the membership's shard callbacks.
func (h *shardHost) config() cluster.ShardConfig {
	return cluster.ShardConfig{Count: h.count, Acquired: h.acquired, Lost: h.lost, Release: h.release}
}

// botConfig makes the bot's gateway leave its shards to h, with the
// cluster's count and identify limiter.
func (h *shardHost) botConfig(bcfg *bot.Config) {
	bcfg.Shards, bcfg.ShardsByCaller = h.count, true
	bcfg.IdentifyLimiter = func(maxConcurrency int) bot.IdentifyLimiter {
		return cluster.NewIdentifyLimiter(h.cli, h.keys, maxConcurrency, h.member, nil, h.log)
	}
}

// setBot hands the shards acquired so far to b, and every later one.
func (h *shardHost) setBot(b *bot.Bot) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bot = b
	for s, sess := range h.pending {
		if err := b.OpenShard(s, sess); err != nil {
			return fmt.Errorf("app: gateway shard %d: %w", s, err)
		}
	}
	clear(h.pending)
	return nil
}

// acquired opens shard, resuming the session its last holder stored.
func (h *shardHost) acquired(shard int) error {
	ctx, cancel := context.WithTimeout(context.Background(), shardSessionTimeout)
	defer cancel()
	stored, ok, err := h.sessions.Take(ctx, shard)
	if err != nil {
		return err
	}
	var sess *bot.ShardSession
	if ok {
		sess = &bot.ShardSession{SessionID: stored.SessionID, Sequence: stored.Sequence, ResumeURL: stored.ResumeURL}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bot == nil {
		h.pending[shard] = sess
		return nil
	}
	h.log.Info().Int("shard", shard).Bool("resume", ok).Msg("gateway shard acquired")
	return h.bot.OpenShard(shard, sess)
}

// lost drops shard at once: its connection closes, its events are
// dropped.
func (h *shardHost) lost(shard int) {
	h.mu.Lock()
	b := h.bot
	delete(h.pending, shard)
	h.mu.Unlock()
	if b != nil {
		b.DropShard(shard)
	}
}

// release closes shard resumably and stores its session for the next
// holder.
func (h *shardHost) release(ctx context.Context, shard int) error {
	h.mu.Lock()
	b := h.bot
	pending, wasPending := h.pending[shard]
	delete(h.pending, shard)
	h.mu.Unlock()
	var (
		sess bot.ShardSession
		ok   bool
	)
	switch {
	case b != nil:
		sess, ok = b.CloseShard(ctx, shard)
	case wasPending && pending != nil:
		sess, ok = *pending, true
	}
	if !ok {
		return nil // the next holder identifies
	}
	h.log.Info().Int("shard", shard).Msg("gateway shard handed over with its session")
	return h.sessions.Put(ctx, shard, cluster.ShardSession{SessionID: sess.SessionID, Sequence: sess.Sequence, ResumeURL: sess.ResumeURL})
}
