package bot

// ShardState is one gateway shard's connection.
type ShardState struct {
	ID int
	// Connected says the shard's session is ready (READY or RESUMED
	// received) and its connection has not dropped since.
	Connected bool
}

// Shards reports the state of every gateway shard the bot opened, in
// order of ID; nil before Start. It never waits for the gateway.
func (b *Bot) Shards() []ShardState {
	b.mu.Lock()
	gw := b.gw
	b.mu.Unlock()
	if gw == nil {
		return nil
	}
	ss := gw.Shards()
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
