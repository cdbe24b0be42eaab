package actors

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

const registryShards = 64

// registry maps account IDs to their actors. It spawns an account's actor
// on first use and hands messages over under a read lock, so a message is
// either enqueued before the actor starts passivating (and is served) or
// waits for the passivation to finish and goes to the next incarnation.
// The per-account state itself is never locked: its actor owns it.
type registry struct {
	eng    *Engine
	seed   maphash.Seed
	shards [registryShards]regShard
	// epoch counts idle sweeps; an entry records the epoch of its last
	// message, so a sweep finds the actors unused since the one before.
	epoch atomic.Uint64
}

type regShard struct {
	mu sync.RWMutex
	m  map[string]*regEntry
}

type regEntry struct {
	pid         *actor.PID
	used        atomic.Uint64 // registry epoch of the last message sent
	passivating bool          // no more messages may be sent to pid
	done        chan struct{} // made when passivating; closed once the actor has stopped and flushed
}

// startPassivating marks e as passivating; the caller holds the shard's
// write lock.
func (e *regEntry) startPassivating() {
	if !e.passivating {
		e.passivating = true
		e.done = make(chan struct{})
	}
}

func (r *registry) init(e *Engine) {
	r.eng = e
	r.seed = maphash.MakeSeed()
	for i := range r.shards {
		r.shards[i].m = make(map[string]*regEntry)
	}
}

func (r *registry) shard(account string) *regShard {
	return &r.shards[maphash.String(r.seed, account)%registryShards]
}

// send delivers msg to account's actor, spawning it when needed.
func (r *registry) send(ctx context.Context, account string, msg any) error {
	sh := r.shard(account)
	for {
		sh.mu.RLock()
		e := sh.m[account]
		if e != nil && !e.passivating {
			if ep := r.epoch.Load(); e.used.Load() != ep {
				e.used.Store(ep)
			}
			r.eng.system.Root.Send(e.pid, msg)
			sh.mu.RUnlock()
			return nil
		}
		sh.mu.RUnlock()
		if e != nil {
			select {
			case <-e.done:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		sh.mu.Lock()
		if r.eng.closed.Load() {
			sh.mu.Unlock()
			return ErrClosed
		}
		if sh.m[account] == nil {
			pid, err := r.eng.spawn(account)
			if err != nil {
				sh.mu.Unlock()
				return err
			}
			sh.m[account] = &regEntry{pid: pid}
		}
		sh.mu.Unlock()
	}
}

// beginPassivate stops new messages from reaching pid, the actor of
// account, and returns false when pid no longer is that actor.
func (r *registry) beginPassivate(account string, pid *actor.PID) bool {
	sh := r.shard(account)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[account]
	if e == nil || !e.pid.Equal(pid) {
		return false
	}
	e.startPassivating()
	return true
}

// remove forgets pid, the actor of account, once it has stopped, and wakes
// the requests waiting to reach the account's next incarnation.
func (r *registry) remove(account string, pid *actor.PID) {
	sh := r.shard(account)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.m[account]; e != nil && e.pid.Equal(pid) {
		delete(sh.m, account)
		e.startPassivating()
		close(e.done)
	}
}

// sweepIdle asks every actor that received nothing since the previous
// sweep whether it has been idle for Config.IdleTimeout (by the engine
// clock); those that have passivate. It returns how many it asked.
func (r *registry) sweepIdle() int {
	cur := r.epoch.Add(1) - 1
	asked := 0
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.RLock()
		for _, e := range sh.m {
			if !e.passivating && e.used.Load() < cur {
				r.eng.system.Root.Send(e.pid, &request{op: opIdle})
				asked++
			}
		}
		sh.mu.RUnlock()
	}
	return asked
}

// stopAll passivates every resident actor and returns what to wait for.
func (r *registry) stopAll() []chan struct{} {
	var waits []chan struct{}
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		for _, e := range sh.m {
			if !e.passivating {
				e.startPassivating()
				r.eng.system.Root.Poison(e.pid)
			}
			waits = append(waits, e.done)
		}
		sh.mu.Unlock()
	}
	return waits
}

// resident returns how many account actors are in memory.
func (r *registry) resident() int {
	n := 0
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}
