package actors

import (
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/asynkron/protoactor-go/actor"
)

const registryShards = 64

// registry maps account IDs to their actors. It spawns an account's actor
// on first use and hands messages over so that a message is either
// enqueued before the actor's poison pill (and is served) or waits for the
// passivation to finish and goes to the next incarnation. The per-account
// state itself is never locked: its actor owns it.
//
// Actors run their turns on the sending goroutine (accountMailbox, like
// protoactor's synchronized dispatcher): a send to an idle actor runs the
// actor's turn at once. So no registry
// lock is held while sending, and passivation runs on a goroutine of its
// own. A sender counts itself in its entry (inflight) under the read lock
// before sending; passivation marks the entry under the write lock, waits
// for inflight to drain, and only then sends the poison pill, which thus
// queues behind every message a sender saw the entry open for.
//
// A resident account is either in its shard's map, with an actor, or
// parked in its shard's slab, without one (see slab): an actor parks
// through the same passivation, and its removal from the map puts the
// account in the slab under the same lock; a send that finds neither an
// entry nor an actor takes the parked state out of the slab under the
// lock it creates the entry with, and the spawned actor starts from it.
// So no sender sees the account twice or nowhere, and a message waiting
// for a parking actor to go reaches the next one.
type registry struct {
	eng    *Engine
	seed   maphash.Seed
	shards [registryShards]regShard
	// epoch counts idle sweeps; an entry records the epoch of its last
	// message, so a sweep finds the actors unused since the one before.
	epoch atomic.Uint64
	// nextEvict is the engine time from which a sweep looks for parked
	// accounts to evict: every quarter of IdleTimeout, as before parking,
	// not at every sweep (those come every half of ParkAfter).
	nextEvict atomic.Int64
}

type regShard struct {
	mu sync.RWMutex
	m  map[string]*regEntry
	// peak is the most entries m held since it was made: a map keeps
	// the room of its peak, which every collection walks (see shrink).
	peak int
	// parked holds the shard's parked accounts (see slab): an account is
	// in m or in parked, never both.
	parked slab
}

// closedChan is closed from the start: the started channel of every
// entry whose spawn is over.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

type regEntry struct {
	// pid is nil while the actor is being spawned (its state loading),
	// which happens without the shard lock; started is closed once pid is
	// set, or the spawn failed and the entry is gone, and is then replaced
	// by the shared closedChan, so that a resident entry does not keep a
	// channel of its own. Both are guarded by the shard lock.
	pid *actor.PID
	// proc is pid's process, looked up once when the spawn returned:
	// sending through it skips protoactor's per-send resolution of the
	// PID (two dependent loads, usually cache misses, on every message).
	// The registry's own protocol (inflight, passivating) already keeps
	// messages from reaching an actor that is stopping. Set with pid;
	// nil when the process is not a local actor, and then sends go
	// through the PID.
	proc     *actor.ActorProcess
	started  chan struct{}
	used     atomic.Uint64 // registry epoch of the last message sent
	inflight atomic.Int64  // senders that saw the entry open and have not finished sending
	// passivating (guarded by the shard lock) stops new messages to pid;
	// closing mirrors it for senders that finish without the lock.
	passivating bool
	// noPark (guarded by the shard lock) keeps the actor from parking
	// when it stops: it is being stopped for good (Close, Passivate,
	// Drop).
	noPark  bool
	closing atomic.Bool
	drained chan struct{} // capacity 1: inflight reached zero while closing
	done    chan struct{} // made when passivating; closed once the actor has stopped and flushed
	// mailbox is the actor's (see Engine.spawnNamed): held inside the
	// entry, not as an object of its own.
	mailbox accountMailbox
	// resume is the parked state the actor being spawned takes back
	// (guarded by the shard lock; nil once taken, or when there is none).
	resume *parked
	// name holds the actor's name (actorNamePrefix and the account ID)
	// when it fits, which an account ID of Pinterest does: the map's key,
	// the actor's name and its PID's ID are then one string held inside
	// the entry, not an object of their own. Written once, before the
	// entry is shared, never after (the string refers to it).
	name [48]byte
}

// setName returns actorNamePrefix followed by account, held in e.name
// when it fits, else in a string of its own. e must not be shared yet.
func (e *regEntry) setName(account string) string {
	n := copy(e.name[:], actorNamePrefix)
	if n+len(account) > len(e.name) {
		return actorNamePrefix + account
	}
	n += copy(e.name[n:], account)
	return unsafe.String(&e.name[0], n)
}

// startPassivating marks e as passivating and reports whether it was not
// already; the caller holds the shard's write lock.
func (e *regEntry) startPassivating() bool {
	if e.passivating {
		return false
	}
	e.passivating = true
	e.done = make(chan struct{})
	e.drained = make(chan struct{}, 1)
	e.closing.Store(true)
	return true
}

// sent ends a send counted in inflight, waking a passivation waiting for
// the last one.
func (e *regEntry) sent() {
	if e.inflight.Add(-1) == 0 && e.closing.Load() {
		select {
		case e.drained <- struct{}{}:
		default:
		}
	}
}

// poisonWhenDrained waits until no sender is between its check and the
// end of its Send, then sends pid the poison pill; e is passivating. An
// entry still starting is waited for; one whose spawn failed has no actor
// to stop (send then closes its done).
func (r *registry) poisonWhenDrained(sh *regShard, e *regEntry) {
	sh.mu.RLock()
	started := e.started
	sh.mu.RUnlock()
	<-started
	sh.mu.RLock()
	pid := e.pid
	sh.mu.RUnlock()
	if pid == nil {
		return
	}
	for e.inflight.Load() > 0 {
		<-e.drained
	}
	r.eng.system.Root.Poison(pid)
}

func (r *registry) init(e *Engine) {
	r.eng = e
	r.seed = maphash.MakeSeed()
	for i := range r.shards {
		r.shards[i].m = make(map[string]*regEntry)
		r.shards[i].parked.init()
	}
}

func (r *registry) shard(account string) *regShard {
	sh, _ := r.locate(account)
	return sh
}

// locate returns account's shard and hash.
func (r *registry) locate(account string) (*regShard, uint64) {
	h := maphash.String(r.seed, account)
	return &r.shards[h%registryShards], h
}

// sendResident delivers msg to account's actor if it is running and not
// passivating, and reports whether it did; it never spawns or waits.
//
// Messages for an actor that may have stopped go through here, never to
// a PID kept from earlier: protoactor resolves a stopped actor's PID by
// name, and while an actor of the same name is being spawned it finds the
// new process before its mailbox has a dispatcher, and a send then
// dereferences nil (a panic that takes the process down). The registry
// hands out a PID only once its spawn returned.
func (r *registry) sendResident(account string, msg any) bool {
	sh := r.shard(account)
	sh.mu.RLock()
	e := sh.m[account]
	if e == nil || e.pid == nil || e.passivating {
		sh.mu.RUnlock()
		return false
	}
	e.inflight.Add(1)
	pid, proc := e.pid, e.proc
	sh.mu.RUnlock()
	r.deliver(pid, proc, msg)
	e.sent()
	return true
}

// deliver sends msg to the actor pid, through proc, its process, when
// known.
func (r *registry) deliver(pid *actor.PID, proc *actor.ActorProcess, msg any) {
	if proc != nil {
		proc.SendUserMessage(pid, msg)
		return
	}
	r.eng.system.Root.Send(pid, msg)
}

// send delivers msg to account's actor, spawning it when needed.
//
// Spawning loads the account's state (the mailbox runs the actor's start
// on the spawning goroutine), so it happens without the shard
// lock: a slow load holds up only the requests for that account, which wait
// for the entry to start, not the other accounts of its shard.
func (r *registry) send(ctx context.Context, account string, msg any) error {
	sh, h := r.locate(account)
	for {
		sh.mu.RLock()
		e := sh.m[account]
		if e != nil && e.pid != nil && !e.passivating {
			e.inflight.Add(1)
			pid, proc := e.pid, e.proc
			sh.mu.RUnlock()
			if ep := r.epoch.Load(); e.used.Load() != ep {
				e.used.Store(ep)
			}
			r.deliver(pid, proc, msg)
			e.sent()
			return nil
		}
		var wait <-chan struct{}
		if e != nil {
			wait = e.started
			if e.pid != nil {
				wait = e.done // passivating
			}
		}
		sh.mu.RUnlock()
		if wait != nil {
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if owner := r.eng.cfg.Owner; owner != nil {
			if _, err := owner(account); err != nil {
				return fmt.Errorf("actors: account %q: %w: %w", account, ErrNotOwner, err)
			}
		}
		sh.mu.Lock()
		if r.eng.closed.Load() {
			sh.mu.Unlock()
			return ErrClosed
		}
		if sh.m[account] != nil {
			sh.mu.Unlock()
			continue
		}
		// The actor's name and the map's key share one string, inside
		// the entry when it fits: a resident account keeps its ID once,
		// not once per holder.
		ne := &regEntry{started: make(chan struct{})}
		name := ne.setName(account)
		account = name[len(actorNamePrefix):]
		// A parked account's actor takes its state back (see takeResume).
		ne.resume = sh.parked.take(account, h)
		sh.m[account] = ne
		sh.peak = max(sh.peak, len(sh.m))
		sh.mu.Unlock()

		pid, err := r.eng.spawn(name, &ne.mailbox)
		var proc *actor.ActorProcess
		if err == nil {
			if p, ok := r.eng.system.ProcessRegistry.Get(pid); ok {
				proc, _ = p.(*actor.ActorProcess)
			}
		}

		sh.mu.Lock()
		if err != nil {
			delete(sh.m, account)
			if ne.resume != nil {
				// Not taken: the account stays parked.
				sh.parked.put(account, h, ne.resume)
				ne.resume = nil
			}
			if ne.passivating {
				close(ne.done) // Close is waiting for it
			}
		} else {
			ne.pid, ne.proc = pid, proc
		}
		close(ne.started)
		ne.started = closedChan
		sh.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// beginPassivate stops new messages from reaching pid, the actor of
// account, and returns false when pid no longer is that actor.
func (r *registry) beginPassivate(account string, pid *actor.PID) bool {
	sh := r.shard(account)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[account]
	if e == nil || e.pid == nil || !e.pid.Equal(pid) {
		return false
	}
	e.startPassivating()
	return true
}

// passivate stops pid, the actor of account, once the messages already
// sent to it are served, unless it is stopping already. It must not run on
// a goroutine that is sending to pid (such as inside the actor's own turn,
// which may run on a sender's goroutine): actors call it with go.
func (r *registry) passivate(account string, pid *actor.PID) {
	sh := r.shard(account)
	sh.mu.Lock()
	e := sh.m[account]
	if e != nil && e.pid == nil {
		// Still starting: this is the actor being spawned (actors are
		// named by account), asking to stop from its start.
		started := e.started
		sh.mu.Unlock()
		<-started
		sh.mu.Lock()
		e = sh.m[account]
	}
	if e == nil || e.pid == nil || !e.pid.Equal(pid) || !e.startPassivating() {
		sh.mu.Unlock()
		return
	}
	sh.mu.Unlock()
	r.poisonWhenDrained(sh, e)
}

// remove forgets pid, the actor of account, once it has stopped, and wakes
// the requests waiting to reach the account's next incarnation. When p is
// not nil, the account parks with the state p, unless it is being stopped
// for good; remove reports whether it parked. Either way the account is
// in the map or parked at every instant another holder of the lock sees.
func (r *registry) remove(account string, pid *actor.PID, p *parked) bool {
	sh, h := r.locate(account)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[account]
	if e == nil || e.pid == nil || !e.pid.Equal(pid) {
		return false
	}
	delete(sh.m, account)
	park := p != nil && !e.noPark
	if park {
		sh.parked.put(account, h, p)
	}
	e.startPassivating()
	close(e.done)
	return park
}

// takeResume returns the parked state that the actor of account, being
// spawned, takes back, or nil (see send).
func (r *registry) takeResume(account string) *parked {
	sh := r.shard(account)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[account]
	if e == nil || e.pid != nil {
		return nil
	}
	p := e.resume
	e.resume = nil
	return p
}

// isParked reports whether account is parked.
func (r *registry) isParked(account string) bool {
	sh, h := r.locate(account)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.parked.find(account, h) >= 0
}

// peekParked returns a copy of account's parked state, or nil when it is
// not parked.
func (r *registry) peekParked(account string) *parked {
	sh, h := r.locate(account)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	if i := sh.parked.find(account, h); i >= 0 {
		return sh.parked.get(i)
	}
	return nil
}

// forget drops the parked accounts for which match returns true (their
// state is stored) and keeps the resident actors of those accounts from
// parking; it returns how many parked accounts it dropped.
func (r *registry) forget(match func(account string) bool) int {
	n := 0
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		n += r.forgetLocked(sh, match)
		sh.mu.Unlock()
	}
	return n
}

// forgetLocked is forget for one shard, whose lock the caller holds.
func (r *registry) forgetLocked(sh *regShard, match func(account string) bool) int {
	for account, e := range sh.m {
		if match == nil || match(account) {
			e.noPark = true
		}
	}
	n := 0
	for i := 0; i < len(sh.parked.slots) && sh.parked.n > 0; i++ {
		if !sh.parked.slots[i].live {
			continue
		}
		if match == nil || match(sh.parked.name(i)) {
			sh.parked.remove(i)
			n++
		}
	}
	return n
}

// sweepIdle asks every actor that received nothing since the previous
// sweep whether it has been idle for Config.IdleTimeout (by the engine
// clock); those that have passivate, and those idle for Config.ParkAfter
// park. Every quarter of IdleTimeout it also evicts the parked accounts
// unused for IdleTimeout, and it remakes the shard maps that parking
// left under a quarter of their peak (shrink). It returns how many
// actors it asked.
func (r *registry) sweepIdle() int {
	cur := r.epoch.Add(1) - 1
	asked := 0
	var idle []*regEntry
	now, timeout := r.eng.clock.Now(), r.eng.cfg.IdleTimeout.Milliseconds()
	evict := now >= r.nextEvict.Load()
	if evict {
		r.nextEvict.Store(now + max(timeout/4, 1))
	}
	for i := range r.shards {
		sh := &r.shards[i]
		idle = idle[:0]
		if evict {
			r.evictParked(sh, now, timeout)
		}
		r.shrink(sh)
		sh.mu.RLock()
		for _, e := range sh.m {
			if e.pid != nil && !e.passivating && e.used.Load() < cur {
				e.inflight.Add(1)
				idle = append(idle, e)
			}
		}
		sh.mu.RUnlock()
		for _, e := range idle {
			r.deliver(e.pid, e.proc, &request{op: opIdle})
			e.sent()
		}
		asked += len(idle)
	}
	return asked
}

// evictParked forgets the parked accounts of sh unused for timeout at
// now: their state is stored, as a passivated account's.
func (r *registry) evictParked(sh *regShard, now, timeout int64) {
	sh.mu.RLock()
	has := sh.parked.n > 0
	sh.mu.RUnlock()
	if !has {
		return
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for i := 0; i < len(sh.parked.slots) && sh.parked.n > 0; i++ {
		if sl := &sh.parked.slots[i]; sl.live && now-sl.lastUsed >= timeout {
			sh.parked.remove(i)
		}
	}
}

// shrinkFrom is the smallest peak a shard's map is shrunk from.
const shrinkFrom = 1024

// shrink remakes sh's map when it holds under a quarter of its peak, as
// once the accounts in use at the peak have parked: the room left would
// cost every collection a walk of it.
func (r *registry) shrink(sh *regShard) {
	sh.mu.RLock()
	need := sh.peak >= shrinkFrom && len(sh.m) < sh.peak/4
	sh.mu.RUnlock()
	if !need {
		return
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.peak >= shrinkFrom && len(sh.m) < sh.peak/4 {
		m := make(map[string]*regEntry, len(sh.m)) // not maps.Clone: it keeps the room
		maps.Copy(m, sh.m)
		sh.m, sh.peak = m, len(m)
	}
}

// stopAll passivates every resident actor and returns what to wait for.
func (r *registry) stopAll() []chan struct{} { return r.stopWhere(nil) }

// stopWhere passivates the resident actors of the accounts for which
// match (nil: every account) returns true and returns what to wait for.
// Those accounts' parked states, which are stored, are dropped, and their
// actors do not park.
func (r *registry) stopWhere(match func(account string) bool) []chan struct{} {
	var waits []chan struct{}
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		r.forgetLocked(sh, match)
		for account, e := range sh.m {
			if match != nil && !match(account) {
				continue
			}
			if e.startPassivating() {
				go r.poisonWhenDrained(sh, e)
			}
			waits = append(waits, e.done)
		}
		sh.mu.Unlock()
	}
	return waits
}

// resident returns how many accounts are in memory: with an actor or
// parked.
func (r *registry) resident() int {
	n := 0
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.RLock()
		n += len(sh.m) + sh.parked.n
		sh.mu.RUnlock()
	}
	return n
}

// parkedCount returns how many resident accounts are parked.
func (r *registry) parkedCount() int {
	n := 0
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.RLock()
		n += sh.parked.n
		sh.mu.RUnlock()
	}
	return n
}

// residentWhere returns the resident accounts (with an actor or parked)
// for which match returns true.
func (r *registry) residentWhere(match func(account string) bool) []string {
	var out []string
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.RLock()
		for account := range sh.m {
			if match(account) {
				out = append(out, account)
			}
		}
		for j := range sh.parked.slots {
			if sh.parked.slots[j].live {
				if account := sh.parked.name(j); match(account) {
					out = append(out, account)
				}
			}
		}
		sh.mu.RUnlock()
	}
	return out
}
