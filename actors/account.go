package actors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/pinbot/pinbot/persistence"
	"github.com/rs/zerolog"
)

type opKind uint8

const (
	opReserve opKind = iota + 1
	opCommit
	opRelease
	opStatus
	opHold
	opCompact // snapshot now; passivate if nothing else used the actor
	opPanic   // tests only: crash the actor
	opStop    // passivate now, as after the idle timeout
	opIdle    // from the idle sweep: passivate if unused for IdleTimeout; no reply
	opEnqueue
	opJobs
	opCancel
	opFinish
	opRunJobs // from the job timer: start the jobs due; no reply
	opSurvey  // Engine.Survey: the status and pins, not a use of the account
	opObserve // Engine.Observe: pins made elsewhere
	opDrop    // Engine.Drop: stop without writing
	opRebuild // Engine.Rebuild: the window from Pinterest's listing
)

// request is the one message type callers send to an account actor.
type request struct {
	op      opKind
	n       int
	id      uint64
	at      int64
	job     *jobArgs      // the job requests' arguments
	survey  *surveyArgs   // opSurvey's timeline
	observe *observeArgs  // opObserve's pins
	rebuild *rebuildArgs  // opRebuild's listing
	reply   chan response // capacity 1: the actor never blocks on it; nil for no reply
	// posted marks a request from Engine.post: nobody waits for it, and
	// the actor puts it back in requestPool once served.
	posted bool
}

type response struct {
	first    uint64
	granted  int
	deadline int64 // of the slots granted
	status   Status
	jobs     *jobReply // the job requests' answers
	err      error
}

// grantReply answers a Reserve once its journal write is done: the grant
// when it is durable, else an error after queueing the rollback. It is
// pooled (a Reserve is the hot path); done is its complete method, made
// once per object.
type grantReply struct {
	reply   chan response
	resp    response
	reg     *registry
	account string
	inc     *incarnation
	done    func(error)
}

// incarnation identifies one life of an account actor, from its load to
// its stop or restart, and collects the grants of that life whose journal
// write failed. Reservation IDs restart from the stored state at each
// load, so a rollback is only meaningful to the incarnation that granted:
// a later one may have handed the same IDs to someone else.
type incarnation struct {
	mu     sync.Mutex
	failed []rollback // grants to roll back, not yet applied
	// durableHold is the latest hold known to be stored (loaded with the
	// state, or written by a successful Hold); set by the journal's
	// callback, hence atomic.
	durableHold atomic.Int64
	// durableSeq is the journal sequence up to which the state is known
	// stored in a snapshot (loaded as one, or written to park); set by
	// the journal's callback, hence atomic.
	durableSeq atomic.Uint64
	// parkFailed is set when the snapshot written to park failed: the
	// next idle sweep writes it again.
	parkFailed atomic.Bool
}

// markDurable records that a snapshot up to seq is stored.
func (inc *incarnation) markDurable(seq uint64) {
	for {
		old := inc.durableSeq.Load()
		if seq <= old || inc.durableSeq.CompareAndSwap(old, seq) {
			return
		}
	}
}

// settled reports whether no grant of this incarnation waits to be
// rolled back.
func (inc *incarnation) settled() bool {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	return len(inc.failed) == 0
}

// add records a grant to roll back.
func (inc *incarnation) add(rb rollback) {
	inc.mu.Lock()
	inc.failed = append(inc.failed, rb)
	inc.mu.Unlock()
}

// take returns the grants to roll back and forgets them.
func (inc *incarnation) take() []rollback {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	f := inc.failed
	inc.failed = nil
	return f
}

var grantReplies sync.Pool

func init() {
	grantReplies.New = func() any {
		g := &grantReply{}
		g.done = g.complete
		return g
	}
}

// complete runs on the journal's goroutine once the write is done.
func (g *grantReply) complete(err error) {
	reply, resp := g.reply, g.resp
	if err != nil {
		// Record the rollback and queue a message to apply it before
		// answering, so that whatever the caller asks next already sees
		// the slots free again. The send may run the actor's turn on the
		// sending goroutine, which must not be the journal's: the turn may
		// wait for it. If the actor stops first, stop applies the
		// rollback before its snapshot; a later incarnation ignores it.
		reg, account, inc := g.reg, g.account, g.inc
		inc.add(rollback{first: resp.first, count: resp.granted})
		go func() {
			reg.sendResident(account, &rollbackDue{inc: inc})
			reply <- response{err: fmt.Errorf("actors: account %q: %w: %w", account, ErrUnavailable, err)}
		}()
	} else {
		if obs := g.reg.eng.obs; obs != nil {
			obs.Granted(resp.granted)
		}
		reply <- resp
	}
	*g = grantReply{done: g.done}
	grantReplies.Put(g)
}

// rollback undoes a grant whose journal write failed: the caller was told
// nothing was granted.
type rollback struct {
	first uint64
	count int
}

// rollbackDue tells the actor that inc, one of its incarnations, has
// grants to roll back. An incarnation other than the current one settled
// its rollbacks before it went (see settle), and the current one loaded
// the result from the store.
type rollbackDue struct {
	inc *incarnation
}

// accountActor serializes everything that touches one account's ledger.
type accountActor struct {
	eng     *Engine
	account string

	// led is &ledv and inc &incv once a load succeeded, nil before: both
	// live inside the actor, so a resident account costs no heap object
	// for them. A restart produces a new accountActor, hence a new
	// incarnation.
	led       *ledger
	inc       *incarnation // this life's, set by the successful load
	ledv      ledger
	incv      incarnation
	loadErr   error
	fence     []byte // Config.Owner's token for this incarnation; nil without Owner
	seq       uint64 // last journal event appended
	snapSeq   uint64 // journal events up to here are folded into a snapshot
	sinceSnap int    // events appended since the last snapshot
	served    int    // requests served by this incarnation
	lastUsed  int64  // engine time of the last request served

	// The account's queued jobs (see jobs.go).
	jobs    []persistence.Job // waiting and running, ascending by ID
	done    []persistence.Job // done, kept for their owner to see, ascending by ID
	waiting int               // how many of jobs are waiting
	// doneStored: the account's done jobs stored before it parked are
	// in the store only, not in done, until loadDone reads them.
	doneStored bool
	// jobsUnstored: a write of jobs failed, so the store may hold them
	// otherwise than in memory: this incarnation does not park (a load
	// sets things right).
	jobsUnstored bool
	nextJob      uint64 // next job ID
	retryAt      int64  // no job starts before this instant (a failed start)

	// parkWrite is the journal sequence of the snapshot this incarnation
	// wrote to park (see tryPark), 0 if none; parked is the state handed
	// to the registry at the stop of an actor that parks.
	parkWrite uint64
	parked    *parked

	// The flags, together: apart, each would take a word of padding in
	// an object every resident account has.
	timed    bool // the account has an entry in the engine's job timer
	dropped  bool // Engine.Drop: stop without writing
	replied  bool // the request being handled has been (or will be) answered
	appended bool // this incarnation wrote to the journal
	stopping bool
	parking  bool // stopping to park (see tryPark)
}

// logger returns the engine's logger tagged with the account. It is built
// on demand, only to log errors, so a resident actor does not carry one.
func (a *accountActor) logger() *zerolog.Logger {
	l := a.eng.log.With().Str("account", a.account).Logger()
	return &l
}

func (a *accountActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *request:
		// Read before handling: a request with a reply channel may be
		// reused by its caller as soon as it is answered, which can be
		// before this turn ends.
		posted := m.posted
		a.replied = false
		defer a.failed(m)
		a.handle(c, m)
		if posted {
			// Nothing refers to m once handled: no caller waits for it,
			// and handlers keep its fields, never m itself.
			*m = request{}
			requestPool.Put(m)
		}
	case *rollbackDue:
		if m.inc == a.inc {
			a.rollback(a.inc.take())
		}
	case *actor.Started:
		a.start(c)
	case *actor.Restarting:
		// The next incarnation reloads from the store: let it see every
		// event this one appended, and the rollbacks of its failed grants
		// (a snapshot of this one may have stored them as reservations).
		// There is no deadline: loading before those writes have landed
		// could grant slots they hold, so a stuck disk keeps the account
		// waiting, never over-granting. The wait blocks the goroutine
		// running this turn (turns run on a sender's goroutine: here the
		// sender of the message that failed); callers of the account
		// wait in its mailbox until their contexts end.
		a.settle("restart")
	case *actor.Stopping:
		a.stop(c)
	case *actor.Stopped:
		if a.eng.reg.remove(a.account, c.Self(), a.parked) {
			if a.eng.onParked != nil {
				a.eng.onParked(a.account)
			}
		} else if a.eng.onStopped != nil {
			a.eng.onStopped(a.account)
		}
		a.parked = nil
	}
}

// failed answers a request whose handling panicked, then lets the panic go
// on to the supervisor, which restarts the actor from its stored state.
func (a *accountActor) failed(m *request) {
	if r := recover(); r != nil {
		a.logger().Error().Interface("panic", r).Msg("account actor failed; restarting")
		if !a.replied && m.reply != nil {
			a.answer(m, response{err: fmt.Errorf("actors: account %q: %w", a.account, ErrActorFailed)})
		}
		panic(r)
	}
}

// answer replies to m. Every request with a reply channel gets exactly one
// answer, from answer or from a journal callback (which sets replied when
// it takes the duty over): callers reuse reply channels.
func (a *accountActor) answer(m *request, r response) {
	a.replied = true
	if m.reply != nil {
		m.reply <- r
	} else if m.posted && r.err != nil {
		// Its sender did not wait (Engine.CommitAsync, ReleaseAsync).
		a.logger().Warn().Err(r.err).Msg("request sent without waiting for its answer failed")
	}
}

// answerStatus answers m with the account's status at now, computed only
// when someone waits for it.
func (a *accountActor) answerStatus(m *request, now int64) {
	a.replied = true
	if m.reply != nil {
		m.reply <- response{status: a.status(now)}
	}
}

func (a *accountActor) start(c actor.Context) {
	a.account = strings.TrimPrefix(c.Self().Id, actorNamePrefix)
	if p := a.eng.reg.takeResume(a.account); p != nil {
		a.resume(p)
		return
	}
	if !a.load() {
		a.passivate(c) // the next incarnation tries loading again
	}
}

// load reads the account's state from the store into a fresh ledger and
// reports whether it could; if not, loadErr says why and requests get it.
func (a *accountActor) load() bool {
	var start time.Time
	if a.eng.obs != nil {
		start = time.Now()
	}
	if owner := a.eng.cfg.Owner; owner != nil {
		// Asked before reading anything: state read under a token is
		// written back only under that token.
		fence, err := owner(a.account)
		if err != nil {
			a.loadErr = fmt.Errorf("actors: account %q: %w: %w", a.account, ErrNotOwner, err)
			return false
		}
		a.fence = fence
	}
	st, err := a.eng.store.Load(a.eng.ctx, a.account)
	if err != nil {
		a.loadErr = fmt.Errorf("actors: account %q: %w: %w", a.account, ErrAccountState, err)
		a.logger().Error().Err(err).Msg("cannot load account state")
		return false
	}
	if err := a.loadJobs(); err != nil {
		a.loadErr = fmt.Errorf("actors: account %q: %w: %w", a.account, ErrAccountState, err)
		a.logger().Error().Err(err).Msg("cannot load account jobs")
		return false
	}
	a.loadErr = nil
	led := &a.ledv
	a.eng.initLedger(led)
	led.restore(st.Snapshot)
	a.seq, a.snapSeq = st.Snapshot.Seq, st.Snapshot.Seq
	for _, e := range st.Events {
		led.apply(e)
		a.seq = max(a.seq, e.Seq)
	}
	a.sinceSnap = len(st.Events)
	now := a.eng.clock.Now()
	if a.seq == 0 {
		// Nothing stored, or everything expired. Journal sequence numbers
		// start from the engine time, so they never repeat either: were an
		// expired snapshot to reappear (a wall clock set back before its
		// expiry, and the key not yet compacted away), the events written
		// from now on would still follow it, not hide behind its Seq.
		a.seq, a.snapSeq = uint64(now), uint64(now)
	}
	// Reservation IDs carry the engine time, so they never repeat even when
	// the account's stored state expired away in between.
	led.nextID = max(led.nextID, uint64(now)<<10)
	a.led = led
	a.inc = &a.incv
	a.inc.durableHold.Store(led.hold)
	if a.sinceSnap == 0 {
		a.inc.durableSeq.Store(a.seq) // the stored snapshot is all of it
	}
	if a.eng.obs != nil {
		a.eng.obs.Loaded(time.Since(start))
	}
	return true
}

func (a *accountActor) handle(c actor.Context, m *request) {
	if m.op == opDrop {
		// Engine.Drop: another member owns the account now.
		a.dropped = true
		a.answer(m, response{})
		a.passivate(c)
		return
	}
	if m.op == opIdle {
		// Not a use of the account: no reply, lastUsed unchanged.
		now := a.eng.clock.Now()
		switch idle := now - a.lastUsed; {
		case a.loadErr != nil || idle >= a.eng.cfg.IdleTimeout.Milliseconds():
			a.passivate(c)
		case a.eng.cfg.ParkAfter > 0 && idle >= a.eng.cfg.ParkAfter.Milliseconds():
			a.tryPark(c, now)
		}
		return
	}
	// An incarnation that could not load is stopping; until it is gone,
	// each request tries the store again rather than repeat a stale error.
	if a.loadErr != nil && !a.load() {
		if m.op == opRunJobs && !errors.Is(a.loadErr, ErrNotOwner) {
			// Try again later: the jobs are in the store. (An account
			// served elsewhere is its owner's to run.)
			a.eng.jobs.set(a.account, a.eng.clock.Now()+jobRetry.Milliseconds())
		}
		a.answer(m, response{err: a.loadErr})
		return
	}
	now := a.eng.clock.Now()
	a.expire(now)
	if a.waiting > 0 {
		// Jobs due go first: a request never overtakes the queue.
		a.led.expire(now)
		a.runDue(now)
	}
	if m.op == opRunJobs {
		// Not a use of the account: lastUsed unchanged.
		a.handOutRecovered()
		a.schedule(now)
		return
	}
	if m.op == opSurvey {
		a.survey(m, now) // not a use either
		return
	}
	a.served++
	a.lastUsed = now
	if m.op == opObserve {
		a.observe(m, now)
		return
	}
	if m.op == opRebuild {
		a.rebuild(m, now)
		return
	}
	if m.op >= opEnqueue {
		a.led.expire(now)
		a.handleJobs(m, now)
		return
	}
	switch m.op {
	case opReserve:
		n := m.n
		if a.waiting > 0 {
			// Only the slots the waiting jobs leave free.
			free := a.led.free(now)
			n = min(n, free-a.waiting)
			if n <= 0 {
				switch {
				case now < a.led.hold:
					a.refused(RefusedHeld)
				case free <= 0:
					a.refused(RefusedLimit)
				default:
					a.refused(RefusedQueue)
				}
				a.answer(m, response{status: a.status(now)})
				return
			}
		}
		first, granted := a.led.reserve(now, n)
		st := a.status(now)
		if granted == 0 {
			if now < a.led.hold {
				a.refused(RefusedHeld)
			} else {
				a.refused(RefusedLimit)
			}
			a.answer(m, response{status: st})
			return
		}
		ev := persistence.Event{Kind: persistence.EventReserve, ID: first, Count: uint32(granted), At: now, Deadline: now + a.led.lease}
		g := grantReplies.Get().(*grantReply)
		g.reply, g.reg, g.account, g.inc = m.reply, &a.eng.reg, a.account, a.inc
		g.resp = response{first: first, granted: granted, deadline: ev.Deadline, status: st}
		a.replied = true // by g, once the grant is durable
		a.append(now, ev, g.done)
	case opCommit:
		t, late, ok := a.led.commit(now, m.id, m.at)
		if !ok {
			a.answer(m, response{status: a.status(now), err: fmt.Errorf("actors: account %q: reservation %d: %w", a.account, m.id, ErrUnknownReservation)})
			return
		}
		if a.eng.obs != nil {
			a.eng.obs.Committed()
		}
		ev := persistence.Event{Kind: persistence.EventCommit, ID: m.id, At: t}
		if !late {
			// Losing this event to a crash only counts the pin at its
			// deadline, later than t: no need to wait for the disk.
			a.append(now, ev, nil)
			a.answerStatus(m, now)
			return
		}
		// A late Commit moved the pin past its deadline; lost, the pin
		// would count from the deadline again. Answer once it is durable.
		a.logger().Warn().Uint64("reservation", m.id).Time("pin", time.UnixMilli(t)).
			Msg("commit after the reservation's lease; the pin counts from the commit")
		if m.reply == nil {
			// Nobody waits (CommitAsync): the pin moved forward in memory
			// all the same; a failed write is logged.
			log, account := a.eng.log, a.account
			a.replied = true
			a.append(now, ev, func(err error) {
				if err != nil {
					log.Error().Err(err).Str("account", account).Msg("storing a late commit failed; after a restart the pin counts from its deadline")
				}
			})
			return
		}
		reply, st, account := m.reply, a.status(now), a.account
		a.replied = true // by the journal callback below
		a.append(now, ev, func(err error) {
			if err != nil {
				err = fmt.Errorf("actors: account %q: late commit: %w: %w", account, ErrUnavailable, err)
			}
			reply <- response{status: st, err: err}
		})
	case opRelease:
		if !a.led.release(now, m.id) {
			a.answer(m, response{status: a.status(now), err: fmt.Errorf("actors: account %q: reservation %d: %w", a.account, m.id, ErrUnknownReservation)})
			return
		}
		if a.eng.obs != nil {
			a.eng.obs.Released()
		}
		a.append(now, persistence.Event{Kind: persistence.EventRelease, ID: m.id}, nil)
		a.runDue(now)
		a.answerStatus(m, now)
	case opStatus:
		a.led.expire(now)
		a.answer(m, response{status: a.status(now)})
	case opHold:
		a.led.expire(now)
		// A hold no later than one already stored changes nothing; one in
		// force in memory only (its write failed) is written again, or a
		// retried Hold would report durable a hold that is not.
		if m.at <= a.inc.durableHold.Load() || m.at <= now {
			a.answer(m, response{status: a.status(now)})
			return
		}
		a.led.holdUntil(m.at)
		st := a.status(now)
		reply, at, inc := m.reply, m.at, a.inc
		a.replied = true // by the journal callback below
		a.append(now, persistence.Event{Kind: persistence.EventHold, At: m.at}, func(err error) {
			// The hold is in force in memory either way: failing to store
			// it can only make the engine stricter until a restart.
			if err == nil {
				for {
					old := inc.durableHold.Load()
					if at <= old || inc.durableHold.CompareAndSwap(old, at) {
						break
					}
				}
			}
			reply <- response{status: st, err: err}
		})
	case opCompact:
		a.served--
		a.led.expire(now)
		if a.seq > a.snapSeq {
			w := persistence.AccountWrite{Account: a.account, ExpiresAt: a.expiry(now)}
			a.attachSnapshot(&w, now)
			a.appended = true
			a.journalWrite(w, now, nil)
		}
		a.answer(m, response{status: a.status(now)})
		if a.served == 0 {
			a.passivate(c)
		}
	case opPanic:
		panic("actors: test-induced failure")
	case opStop:
		a.answer(m, response{status: a.status(now)})
		a.passivate(c)
	}
}

// rollback releases the slots of grants that were never acknowledged.
func (a *accountActor) rollback(rbs []rollback) {
	if a.led == nil || len(rbs) == 0 {
		return
	}
	now := a.eng.clock.Now()
	a.expire(now)
	for _, rb := range rbs {
		for id := rb.first; id < rb.first+uint64(rb.count); id++ {
			if a.led.release(now, id) {
				a.append(now, persistence.Event{Kind: persistence.EventRelease, ID: id}, nil)
			}
		}
	}
}

func (a *accountActor) status(now int64) Status {
	return Status{
		Account:  a.account,
		Used:     a.led.used(now),
		Pending:  len(a.led.pending),
		Limit:    a.led.rules.cur.limit,
		Blocked:  a.led.blocked(now),
		NextFree: time.UnixMilli(a.led.freeAt(now, 1)),
		At:       time.UnixMilli(now),
		Queued:   a.waiting,
	}
}

// expiry is the instant from which the account's stored state may be
// deleted: its window holds nothing from then on, plus the TTL margin. The
// store expires state by the wall clock, so when the engine clock runs
// behind the wall clock (it started from the stored high-water mark and
// the wall clock was corrected forward since), the difference is added:
// otherwise state could vanish while the engine still counts it.
func (a *accountActor) expiry(now int64) int64 {
	exp := max(a.led.expiresAt(), now) + a.eng.cfg.TTLMargin.Milliseconds()
	if behind := a.eng.wall() - now; behind > 0 {
		exp += behind
	}
	return exp
}

// expire turns the reservations whose lease ran out by now into pins (see
// ledger.expire) and reports them. Every request runs it first, so the
// ledger's own calls at the same instant find nothing more to expire.
func (a *accountActor) expire(now int64) {
	if n := a.led.expire(now); n > 0 && a.eng.obs != nil {
		a.eng.obs.LeaseExpired(n)
	}
}

// refused reports a Reserve that granted nothing.
func (a *accountActor) refused(why Refusal) {
	if a.eng.obs != nil {
		a.eng.obs.Refused(why)
	}
}

// append journals ev; done (may be nil) learns when it is durable.
func (a *accountActor) append(now int64, ev persistence.Event, done func(error)) {
	a.seq++
	ev.Seq = a.seq
	a.sinceSnap++
	a.appended = true
	if a.sinceSnap >= a.eng.cfg.SnapshotEvery {
		w := persistence.AccountWrite{Account: a.account, Events: []persistence.Event{ev}, ExpiresAt: a.expiry(now)}
		a.attachSnapshot(&w, now)
		a.journalWrite(w, now, done)
		return
	}
	if a.fence != nil {
		a.eng.journal.AppendFencedEvent(a.account, a.fence, ev, a.expiry(now), now, done)
		return
	}
	a.eng.journal.AppendEvent(a.account, ev, a.expiry(now), now, done)
}

// journalWrite appends w, carrying this incarnation's fence, to the
// engine's journal; done (may be nil) learns when it is durable.
func (a *accountActor) journalWrite(w persistence.AccountWrite, now int64, done func(error)) {
	w.Fence = a.fence
	a.eng.journal.Append(w, now, done)
}

func (a *accountActor) attachSnapshot(w *persistence.AccountWrite, now int64) {
	s := a.led.snapshot(now, a.seq)
	w.Snapshot = &s
	a.snapSeq = a.seq
	a.sinceSnap = 0
}

// passivate stops the actor once the messages already queued are served.
//
// This turn may be running on a sender's goroutine (the synchronized
// dispatcher), so the registry's passivation, which waits for senders,
// runs on a goroutine of its own.
func (a *accountActor) passivate(c actor.Context) {
	if a.stopping {
		return
	}
	a.stopping = true
	go a.eng.reg.passivate(a.account, c.Self())
}

// stop snapshots the state durably before the actor goes, so the next
// incarnation (which may be spawned the moment this one is gone) starts
// from everything this one did.
func (a *accountActor) stop(c actor.Context) {
	a.stopping = true
	a.eng.reg.beginPassivate(a.account, c.Self())
	if a.led == nil || a.loadErr != nil || a.dropped {
		return
	}
	if a.parking && a.canPark() && a.durable() {
		// Nothing was served since the decision that changed the state:
		// the registry keeps it (see registry.remove).
		a.parked = a.parkState()
		return
	}
	if a.appended {
		// Writes of this incarnation may still be queued: they must land
		// before the next incarnation loads. And a grant whose write
		// failed is rolled back by a message that may be queued behind
		// this stop, never to be served: once every write has its outcome,
		// apply such rollbacks here. A snapshot queued after the failed
		// grant may have landed holding it as a reservation; the release
		// events of the rollback, and the snapshot below, supersede it.
		a.settle("passivation")
	}
	now := a.eng.clock.Now()
	a.expire(now)
	if a.seq > a.snapSeq {
		start := time.Now()
		w := persistence.AccountWrite{Account: a.account, ExpiresAt: a.expiry(now)}
		a.attachSnapshot(&w, now)
		done := make(chan error, 1)
		a.journalWrite(w, now, func(err error) { done <- err })
		if err := <-done; err != nil {
			a.logger().Error().Err(err).Msg("snapshot at passivation failed; the journal still holds the events")
		} else if a.eng.obs != nil {
			a.eng.obs.Snapshotted(time.Since(start))
		}
	}
}

// settle waits until every write of this incarnation has its outcome, then
// journals the rollbacks of its grants whose writes failed and waits for
// those too. when names the occasion in logs.
func (a *accountActor) settle(when string) {
	if err := a.eng.journal.Flush(context.Background()); err != nil {
		a.logger().Error().Err(err).Str("at", when).Msg("journal flush failed")
	}
	if a.led == nil || a.inc == nil {
		return
	}
	if rbs := a.inc.take(); len(rbs) > 0 {
		a.rollback(rbs)
		if err := a.eng.journal.Flush(context.Background()); err != nil {
			a.logger().Error().Err(err).Str("at", when).Msg("journal flush of rollbacks failed")
		}
	}
}
