package cluster

import (
	"context"
	"fmt"
)

// LeaveShards hands every gateway shard this member holds over to the
// others and makes it acquire none from then on: its member key's value
// says it runs no shards (MemberInfo.Shards 0), so every member, this one
// included, picks the shards' owners among the others, and this member
// releases each of its shards as in a handover (ShardConfig.Release, the
// session stored for the next holder). With no other member running
// shards, the shards are released and stay unowned until one comes.
//
// A member about to close calls it first, while it still answers what
// its shards deliver: the shards move before anything else stops, the
// interactions that arrive meanwhile are answered here, and those a
// closing connection drops reach the next holder when it resumes the
// session, soon enough for Discord's 3-second deadline. Partitions are
// not affected. It returns once the member holds no shard, or ctx's
// error; it cannot be undone (the member closes next).
func (m *Member) LeaveShards(ctx context.Context) error {
	if m.cfg.Shards.Count == 0 {
		return nil
	}
	m.mu.Lock()
	was := m.shardsLeft
	m.shardsLeft = true
	m.mu.Unlock()
	if !was {
		m.log.Info().Msg("leaving the gateway shards to the other members")
	}
	m.wake()
	m.changed()
	// Until the others read the member key's new value they pick this
	// member still, and do not acquire what it releases: the write must
	// land. It is tried again after a failure until ctx ends.
	for {
		err := m.mark(ctx)
		if err == nil {
			break
		}
		m.log.Warn().Err(err).Msg("leaving the gateway shards: writing the member key")
		wake, stop := m.clock.Wake(m.clock.Now() + m.minPause())
		select {
		case <-wake:
			stop()
		case <-ctx.Done():
			stop()
			return fmt.Errorf("cluster: leave the gateway shards: %w", err)
		case <-m.ctx.Done():
			stop()
			return fmt.Errorf("cluster: leave the gateway shards: member stopped: %w", err)
		}
	}
	for {
		m.mu.Lock()
		held := 0
		for r := range m.held {
			if r.kind == shardRes {
				held++
			}
		}
		ch := m.changesLocked()
		m.mu.Unlock()
		if held == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("cluster: leave the gateway shards: %d still held: %w", held, ctx.Err())
		case <-m.ctx.Done():
			return fmt.Errorf("cluster: leave the gateway shards: member stopped with %d held", held)
		}
	}
}
