package app

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
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

// shardCheckpointEvery is how often a member stores the sessions of the
// shards it holds (ShardSessions.Checkpoint), and shardCheckpointLag how
// many of those periods behind the last event handed on the stored
// sequence is: the events handed on meanwhile may still be worked on
// when the member dies, and Discord replays them to the next holder,
// which skips what was queued already (events marked Replayed).
const (
	shardCheckpointEvery = time.Second
	shardCheckpointLag   = 2
)

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

	// tenure is the membership's ShardTenure, set once it exists.
	tenure atomic.Pointer[func(shard int) (int64, bool)]

	mu      sync.Mutex
	bot     *bot.Bot
	pending map[int]*bot.ShardSession // acquired before the bot was set

	// ckMu guards the checkpoints' state; release waits for a checkpoint
	// of its shard under way (ckBusy), so that none lands after the
	// session a handover stores.
	ckMu    sync.Mutex
	samples map[int][]bot.ShardSession // each shard's last sessions seen, oldest first
	stored  map[int]bot.ShardSession   // each shard's last checkpoint stored
	ckBusy  map[int]chan struct{}      // each shard's checkpoint under way
	stop    context.CancelFunc
	stopped chan struct{}
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
		samples: make(map[int][]bot.ShardSession), stored: make(map[int]bot.ShardSession), ckBusy: make(map[int]chan struct{}),
	}, nil
}

// setTenure gives h the membership's ShardTenure.
func (h *shardHost) setTenure(f func(shard int) (int64, bool)) { h.tenure.Store(&f) }

// serving says whether this member may still serve shard's events: it
// holds the shard and is within its lease.
func (h *shardHost) serving(shard int) bool {
	_, ok := h.tenureOf(shard)
	return ok
}

func (h *shardHost) tenureOf(shard int) (int64, bool) {
	f := h.tenure.Load()
	if f == nil {
		return 0, false
	}
	return (*f)(shard)
}

// checkpoints stores the sessions of the shards held every
// shardCheckpointEvery until close.
func (h *shardHost) checkpoints(ctx context.Context) {
	defer close(h.stopped)
	t := time.NewTicker(shardCheckpointEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.checkpoint(ctx)
		}
	}
}

// checkpoint stores, for each shard held whose session moved, the session
// with the sequence handed on shardCheckpointLag checkpoints ago (or when
// the session began, if later), fenced by the shard's tenure. No lock is
// held while etcd answers: acquisitions and handovers do not wait for it.
func (h *shardHost) checkpoint(ctx context.Context) {
	h.mu.Lock()
	b := h.bot
	h.mu.Unlock()
	if b == nil {
		return
	}
	for _, st := range b.Shards() {
		shard := st.ID
		cur, ok := b.ShardSession(shard)
		h.ckMu.Lock()
		if !ok {
			delete(h.samples, shard)
			h.ckMu.Unlock()
			continue
		}
		var pick bot.ShardSession
		h.samples[shard], pick = lagged(h.samples[shard], cur)
		if pick == h.stored[shard] || h.ckBusy[shard] != nil {
			h.ckMu.Unlock()
			continue
		}
		busy := make(chan struct{})
		h.ckBusy[shard] = busy
		h.ckMu.Unlock()

		rev, ok := h.tenureOf(shard)
		done := false
		if ok {
			cctx, cancel := context.WithTimeout(ctx, shardCheckpointEvery)
			var err error
			done, err = h.sessions.Checkpoint(cctx, shard, cluster.ShardSession{SessionID: pick.SessionID, Sequence: pick.Sequence, ResumeURL: pick.ResumeURL}, rev)
			cancel()
			if err != nil {
				h.log.Warn().Err(err).Int("shard", shard).Msg("storing the gateway shard's session failed; retried at the next checkpoint")
			}
		}
		h.ckMu.Lock()
		if h.ckBusy[shard] == busy {
			// Not since acquired again or released.
			delete(h.ckBusy, shard)
			if done {
				h.stored[shard] = pick
			}
		}
		close(busy)
		h.ckMu.Unlock()
	}
}

// forget drops what the checkpoints know of shard, acquired or released,
// and returns the channel closed once a checkpoint of it still under way
// ends (nil if none).
func (h *shardHost) forget(shard int) <-chan struct{} {
	h.ckMu.Lock()
	defer h.ckMu.Unlock()
	busy := h.ckBusy[shard]
	delete(h.ckBusy, shard)
	delete(h.samples, shard)
	delete(h.stored, shard)
	return busy
}

// lagged adds cur to a shard's samples, oldest first, keeping the last
// shardCheckpointLag+1, and returns them with the session to store: the
// oldest sample of cur's session.
func lagged(samples []bot.ShardSession, cur bot.ShardSession) ([]bot.ShardSession, bot.ShardSession) {
	samples = append(samples, cur)
	if n := len(samples) - shardCheckpointLag - 1; n > 0 {
		samples = append(samples[:0], samples[n:]...)
	}
	for _, s := range samples {
		if s.SessionID == cur.SessionID {
			return samples, s
		}
	}
	return samples, cur
}

// close stops the checkpoints.
func (h *shardHost) close(ctx context.Context) error {
	h.mu.Lock()
	stop, stopped := h.stop, h.stopped
	h.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// config returns the membership's shard callbacks.
func (h *shardHost) config() cluster.ShardConfig {
	return cluster.ShardConfig{Count: h.count, Acquired: h.acquired, Lost: h.lost, Release: h.release}
}

// botConfig makes the bot's gateway leave its shards to h, with the
// cluster's count and identify limiter.
func (h *shardHost) botConfig(bcfg *bot.Config) {
	bcfg.Shards, bcfg.ShardsByCaller = h.count, true
	bcfg.ShardServing = h.serving
	bcfg.IdentifyLimiter = func(maxConcurrency int) bot.IdentifyLimiter {
		return cluster.NewIdentifyLimiter(h.cli, h.keys, maxConcurrency, h.member, nil, h.log)
	}
}

// setBot hands the shards acquired so far to b, and every later one.
func (h *shardHost) setBot(b *bot.Bot) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bot = b
	ctx, cancel := context.WithCancel(context.Background())
	h.stop, h.stopped = cancel, make(chan struct{})
	go h.checkpoints(ctx)
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
	// Take deleted the stored session: the next checkpoint stores it.
	h.forget(shard)
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
	if busy := h.forget(shard); busy != nil {
		select {
		case <-busy:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if !ok {
		return nil // the next holder resumes the last checkpoint, if any, or identifies
	}
	h.log.Info().Int("shard", shard).Msg("gateway shard handed over with its session")
	return h.sessions.Put(ctx, shard, cluster.ShardSession{SessionID: sess.SessionID, Sequence: sess.Sequence, ResumeURL: sess.ResumeURL})
}
