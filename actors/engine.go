package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/pinbot/pinbot/persistence"
	"github.com/rs/zerolog"
)

// Status is an account's standing at one instant.
type Status struct {
	Account string
	// Used is the number of slots in use: pins that still count plus
	// reservations not yet resolved.
	Used int
	// Pending is how many of Used are unresolved reservations.
	Pending int
	// Limit is the number of pins allowed per window, under the current
	// rule (Config.Limit).
	Limit int
	// Blocked is how many of the slots free under Limit are refused all
	// the same, because the limit or the window changed since an earlier
	// run and that run's rule still counts pins the current one does not
	// (see docs/design.md, "Changing the limit or the window"); 0
	// otherwise. Used and Limit are the current rule's; NextFree and
	// Free account for every rule in force.
	Blocked int
	// NextFree is when the next slot frees: At when one is free now.
	// Pending reservations are assumed to become pins at the end of their
	// lease, so a slot may in fact free earlier, never later.
	NextFree time.Time
	// At is the engine time the status was taken.
	At time.Time
	// Queued is how many jobs wait for slots (see Engine.Enqueue). They go
	// first: NextFree is when the next slot frees, and Reserve grants only
	// the free slots they leave.
	Queued int
}

// Free returns how many slots are free.
func (s Status) Free() int { return max(s.Limit-s.Used-s.Blocked, 0) }

// Reservation names one granted slot.
type Reservation struct {
	Account string
	ID      uint64
	// Deadline is the end of the slot's lease (engine time): a slot
	// neither committed nor released by then counts as a pin made at
	// Deadline. No request for the slot may still be in flight then.
	Deadline time.Time
}

// Grant is the answer to Reserve.
type Grant struct {
	// Status is the account's standing right after the grant.
	Status
	// First is the ID of the first reservation granted; the grant covers
	// IDs First to First+Granted-1.
	First uint64
	// Granted is how many slots were granted, from 0 to the number asked.
	Granted int
	// Deadline is the end of the lease of every slot granted (engine
	// time); zero when none was.
	Deadline time.Time
}

// Reservations lists the granted slots.
func (g Grant) Reservations() []Reservation {
	rs := make([]Reservation, g.Granted)
	for i := range rs {
		rs[i] = Reservation{Account: g.Account, ID: g.First + uint64(i), Deadline: g.Deadline}
	}
	return rs
}

// Engine is the rate-limit engine: one actor per account serializes every
// check and change of that account's window, and a group-committing journal
// makes every grant durable before it is acknowledged.
//
// Engine is safe for simultaneous use by multiple goroutines.
type Engine struct {
	cfg   Config
	clock Clock
	wall  func() int64 // the wall clock the store's TTL follows, Unix ms
	store persistence.Store
	// ctx is the context of the store calls the engine makes on no
	// request's behalf: loads of account actors, the journal's writes.
	// They must go on while Close passivates the actors, so it never ends.
	ctx     context.Context
	journal *persistence.Journal
	system  *actor.ActorSystem
	props   *actor.Props // shared by every account actor
	reg     registry
	log     zerolog.Logger
	obs     Observer // Config.Observer; nil: none

	closed        atomic.Bool
	closeOnce     sync.Once
	closeErr      error
	closeDone     chan struct{} // closed when Close has done what it does
	cancelRecover context.CancelFunc
	recoverDone   chan struct{}
	// checkpointDone is closed when the checkpoint goroutine has stopped.
	checkpointDone chan struct{}
	// pause waits d or until ctx ends, between the rounds of a spread
	// checkpoint (see checkpoint); tests replace it.
	pause func(ctx context.Context, d time.Duration) error
	// sweepDone is closed when the idle-sweep goroutine has stopped.
	sweepDone chan struct{}
	// jobs is the timer of the accounts with queued jobs; jobTimerDone is
	// closed when its goroutine and the scan of stored jobs have stopped.
	jobs         *jobTimer
	jobTimerDone chan struct{}
	// onJob is the job handler, once ServeJobs has set it.
	onJob    atomic.Pointer[func(Job)]
	jobsCtx  context.Context
	jobsOnce sync.Once
	// inflight holds the jobKeys of the jobs this engine handed out and
	// that are not finished, each with whether it was handed out as
	// recovered (Job.Recovered).
	inflight sync.Map

	// rules are the rules in force at start (see rules.go).
	rules *ruleSet

	// onStopped, when set (tests), is called after an account actor
	// stopped, unless it parked; onParked after one parked.
	onStopped func(account string)
	onParked  func(account string)

	// spawnMailbox hands the mailbox held in the registry entry being
	// spawned to protoactor's mailbox producer (produceMailbox), so that
	// a resident account costs no object for its mailbox. spawnMu is held
	// from the hand-off until the producer took it: spawns go one at a
	// time only that far, not through the account's load.
	spawnMu      sync.Mutex
	spawnMailbox atomic.Pointer[accountMailbox]
}

// New starts an engine over store, which the caller opened and closes after
// Close. The engine clock starts where the last run's left off when that
// run was on the same boot of the machine (see startClock), else from the
// wall clock; never behind the newest instant the store refers to, so no
// slot frees early.
func New(cfg Config, store persistence.Store, log zerolog.Logger) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log = log.With().Str("component", "engine").Logger()
	wall := cfg.Wall
	if wall == nil {
		wall = func() int64 { return time.Now().UnixMilli() }
	}
	base := context.Background()
	clock, err := startClock(base, cfg, store, wall, log)
	if err != nil {
		return nil, err
	}
	rules, err := startRules(base, cfg, store, clock.Now(), log)
	if err != nil {
		return nil, err
	}
	var jopts []persistence.JournalOption
	if cfg.Observer != nil {
		jopts = append(jopts, persistence.WithBatchHook(cfg.Observer.JournalBatch))
	}
	if len(cfg.Fence) > 0 {
		jopts = append(jopts, persistence.WithFence(cfg.Fence))
	}
	if cfg.JournalPipeline > 1 {
		jopts = append(jopts, persistence.WithPipeline(cfg.JournalPipeline))
	}
	e := &Engine{
		cfg:         cfg,
		clock:       clock,
		rules:       rules,
		wall:        wall,
		store:       store,
		ctx:         base,
		journal:     persistence.NewJournal(base, store, cfg.MaxJournalBatch, log, jopts...),
		log:         log,
		obs:         cfg.Observer,
		recoverDone: make(chan struct{}),
		closeDone:   make(chan struct{}),
		jobs:        newJobTimer(),
	}
	actorLog := log.With().Str("component", "protoactor").Logger()
	e.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(zerolog.NewSlogHandler(actorLog))
	}))
	// The mailbox (accountMailbox) runs an idle actor's turn on the
	// goroutine that sends to it, as protoactor's synchronized dispatcher
	// does, instead of starting a goroutine per turn: a round trip then
	// costs a function call and a channel send. See registry for what that
	// requires of senders.
	// A failed actor is always restarted from its stored state: protoactor's
	// default gives up after ten failures in ten seconds and stops the
	// actor, leaving the requests in its mailbox unanswered.
	e.props = actor.PropsFromProducer(func() actor.Actor { return &accountActor{eng: e} }, accountPropsOptions(e.produceMailbox)...)
	e.reg.init(e)
	ctx, cancel := context.WithCancel(context.Background())
	e.cancelRecover = cancel
	if cfg.Recover {
		go func() {
			defer close(e.recoverDone)
			if err := e.Recover(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, ErrClosed) {
				e.log.Error().Err(err).Msg("background recovery stopped")
			}
		}()
	} else {
		close(e.recoverDone)
	}
	e.sweepDone = make(chan struct{})
	go e.sweeps(ctx)
	e.jobTimerDone = make(chan struct{})
	e.jobsCtx = ctx
	if cfg.OnJob != nil {
		_ = e.ServeJobs(cfg.OnJob)
	}
	e.checkpointDone = make(chan struct{})
	e.pause = pause
	if cp, ok := store.(Checkpointer); ok && cfg.CheckpointEvery > 0 {
		go e.checkpoints(ctx, cp)
	} else {
		close(e.checkpointDone)
	}
	return e, nil
}

// sweeps passivates idle actors, sweeping every quarter of IdleTimeout, so
// an actor stops between IdleTimeout and 1.25 IdleTimeout after its last
// request (by the engine clock, read by the actor), and parks them
// after ParkAfter, sweeping every half of it then. One engine-wide sweep
// replaces a timer per actor, which protoactor resets on every message.
// The ticker paces housekeeping only; the decision reads the engine clock.
func (e *Engine) sweeps(ctx context.Context) {
	defer close(e.sweepDone)
	every := e.cfg.IdleTimeout / 4
	if e.cfg.ParkAfter > 0 {
		every = min(every, e.cfg.ParkAfter/2)
	}
	t := time.NewTicker(max(every, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.reg.sweepIdle()
		}
	}
}

// checkpoints runs a checkpoint every Config.CheckpointEvery until ctx
// ends, its snapshots spread over half that interval (see checkpoint).
// The ticker paces housekeeping only; no decision depends on it.
func (e *Engine) checkpoints(ctx context.Context, cp Checkpointer) {
	defer close(e.checkpointDone)
	t := time.NewTicker(e.cfg.CheckpointEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := e.checkpoint(ctx, cp, e.cfg.CheckpointEvery/2); err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
				e.log.Error().Err(err).Msg("checkpoint failed")
			}
		}
	}
}

// Checkpointer is implemented by stores whose journal is shared between
// accounts, such as the Badger store's write-ahead log, where one
// account's events that no snapshot covers keep a whole record alive. The
// engine finds it by a type assertion on its store and checkpoints every
// Config.CheckpointEvery.
type Checkpointer interface {
	// Stale calls fn for each account holding events in the oldest records
	// beyond the newest keep live ones, from a list taken when it starts.
	// Snapshotting those accounts lets the store delete those records.
	Stale(keep int, fn func(account string) error) error
}

// Checkpoint snapshots every account whose journal events keep records
// older than the newest Config.CheckpointKeep alive, so that the store can
// delete them, and returns how many accounts it snapshotted. Accounts
// that are in use stay resident; idle ones passivate.
func (e *Engine) Checkpoint(ctx context.Context, cp Checkpointer) (int, error) {
	return e.checkpoint(ctx, cp, 0)
}

// checkpointRound is the interval between the rounds of a spread
// checkpoint.
const checkpointRound = 10 * time.Millisecond

// checkpoint is Checkpoint with its snapshots spread over spread (at once
// when spread is under two rounds): the stale accounts are snapshotted in
// rounds checkpointRound apart, as many in each as it takes to be done
// within spread. With every account active, nearly all are stale at each
// checkpoint; snapshotted at once, their snapshots made group commits of
// thousands of Badger keys that held up every grant queued behind them
// for most of a second (measured: the history of docs/benchmarks.md).
func (e *Engine) checkpoint(ctx context.Context, cp Checkpointer, spread time.Duration) (int, error) {
	var stale []string
	if err := cp.Stale(e.cfg.CheckpointKeep, func(account string) error {
		stale = append(stale, account)
		return nil
	}); err != nil {
		return 0, err
	}
	per := len(stale)
	if rounds := int(spread / checkpointRound); rounds > 1 {
		per = max(1, (len(stale)+rounds-1)/rounds)
	}
	n := 0
	for i, account := range stale {
		if i > 0 && i%per == 0 {
			if err := e.pause(ctx, checkpointRound); err != nil {
				return n, err
			}
		}
		if e.reg.isParked(account) {
			// Its snapshot holds everything already (the store's list
			// was taken before it landed): waking it would only keep
			// it from staying parked.
			continue
		}
		if _, err := e.call(ctx, account, request{op: opCompact}); err != nil {
			if errors.Is(err, ErrClosed) || ctx.Err() != nil {
				return n, err
			}
			e.log.Error().Err(err).Str("account", account).Msg("checkpoint of account failed")
			continue
		}
		n++
	}
	return n, nil
}

// pause waits d, or until ctx ends and returns its error.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dispatcherThroughput is how many messages an actor's turn serves before
// it yields the goroutine.
const dispatcherThroughput = 300

// wallDisagreement is how far the wall clock may be from the engine time
// at start before a warning says so.
const wallDisagreement = time.Minute

// startClock returns the engine clock for a run over store.
//
// On the same boot as the run that stored the clock anchor, engine time
// resumes from the anchor plus the boot-time clock's elapsed time, whatever
// the wall clock says: stored pins keep their true age even if the wall
// clock was wrong then or was corrected since. Otherwise (a reboot, no
// boot ID, no anchor) it starts from the wall clock. Either way it never
// starts behind the stored high-water mark, and the new anchor is stored
// before anything is granted.
func startClock(ctx context.Context, cfg Config, store persistence.Store, wall func() int64, log zerolog.Logger) (Clock, error) {
	hw, err := store.HighWater(ctx)
	if err != nil {
		return nil, fmt.Errorf("actors: reading the stored high-water mark: %w", err)
	}
	if cfg.Clock != nil {
		if now := cfg.Clock.Now(); hw > now {
			log.Warn().Time("clock", time.UnixMilli(now)).Time("stored", time.UnixMilli(hw)).
				Msg("clock is behind the newest stored instant; starting the engine clock from the stored instant")
			return &offsetClock{base: cfg.Clock, offset: hw - now}, nil
		}
		return cfg.Clock, nil
	}
	up := cfg.Uptime
	if up == nil {
		up = SystemUptime()
	}
	anchor, err := store.Anchor(ctx)
	if err != nil {
		// Without the anchor the start falls back to the wall clock, as
		// after a reboot; a new anchor replaces the unreadable one.
		log.Warn().Err(err).Msg("the stored clock anchor cannot be read; starting from the wall clock")
		anchor = persistence.ClockAnchor{}
	}
	boot, upNow, w := up.BootID(), up.Now(), wall()
	start := w
	if boot != "" && anchor.BootID == boot && upNow >= anchor.Uptime {
		start = anchor.Engine + (upNow - anchor.Uptime)
		if d := time.Duration(w-start) * time.Millisecond; d > wallDisagreement || d < -wallDisagreement {
			log.Warn().Time("wall", time.UnixMilli(w)).Time("engine", time.UnixMilli(start)).Dur("wall_minus_engine", d).
				Msg("the wall clock disagrees with the engine time carried over from the last run on this boot; keeping the engine time")
		}
	} else if hw != 0 {
		// A reboot, or no boot ID: the wall clock is all there is. A
		// forward step of it since the stored pins were made would make
		// them look older than they are; nothing can tell.
		if d := time.Duration(w-hw) * time.Millisecond; d > cfg.Window {
			log.Warn().Time("wall", time.UnixMilli(w)).Time("stored", time.UnixMilli(hw)).Dur("gap", d).
				Msg("new boot: the wall clock is far past the newest stored instant; if pinbot was not stopped that long, the wall clock is wrong now or was while pins were made")
		}
	}
	if hw > start {
		log.Warn().Time("clock", time.UnixMilli(start)).Time("stored", time.UnixMilli(hw)).
			Msg("clock is behind the newest stored instant; starting the engine clock from the stored instant")
		start = hw
	}
	if err := store.SetAnchor(ctx, persistence.ClockAnchor{BootID: boot, Uptime: upNow, Engine: start}); err != nil {
		// An anchor of this boot stored earlier gives the same time; with
		// none, the next start falls back to the wall clock.
		log.Error().Err(err).Msg("storing the clock anchor failed")
	}
	return newRunningClock(start, up, upNow), nil
}

// offsetClock runs a fixed offset ahead of its base.
type offsetClock struct {
	base   Clock
	offset int64
}

func (c *offsetClock) Now() int64 { return c.base.Now() + c.offset }

// wakeAt waits on the base clock, when it can wake waiters itself.
func (c *offsetClock) wakeAt(at int64) (<-chan struct{}, func()) {
	return wakeAt(c.base, at-c.offset)
}

// Now returns the engine time.
func (e *Engine) Now() time.Time { return time.UnixMilli(e.clock.Now()) }

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// actorNamePrefix starts every account actor's name; the rest is the
// account ID, which is how an actor learns its account.
const actorNamePrefix = "account/"

// spawn starts the actor named name (actorNamePrefix and the account ID)
// with mb, which nothing else uses, as its mailbox.
func (e *Engine) spawn(name string, mb *accountMailbox) (*actor.PID, error) {
	pid, err := e.spawnNamed(name, mb)
	if err != nil {
		return nil, fmt.Errorf("actors: account %q: spawn: %w", name[len(actorNamePrefix):], err)
	}
	return pid, nil
}

// spawnNamed spawns the actor named name, handing mb to produceMailbox,
// which protoactor calls once, before the actor starts.
func (e *Engine) spawnNamed(name string, mb *accountMailbox) (*actor.PID, error) {
	e.spawnMu.Lock()
	e.spawnMailbox.Store(mb)
	defer func() {
		// The producer was not called (the spawn failed before): the
		// hand-off is still this spawn's to take back.
		if e.spawnMailbox.CompareAndSwap(mb, nil) {
			e.spawnMu.Unlock()
		}
	}()
	return e.system.Root.SpawnNamed(e.props, name)
}

// produceMailbox is the actor.MailboxProducer of account actors: the
// mailbox that spawnNamed hands over, else a new one. protoactor calls it
// only to spawn, never to restart an actor.
func (e *Engine) produceMailbox() actor.Mailbox {
	if mb := e.spawnMailbox.Swap(nil); mb != nil {
		e.spawnMu.Unlock()
		return mb
	}
	return newAccountMailbox()
}

// replyPool holds reply channels (capacity 1) for reuse: a request is
// answered exactly once, so once the answer is read its channel is empty.
var replyPool = sync.Pool{New: func() any { return make(chan response, 1) }}

// requestPool holds requests for reuse, on the same terms.
var requestPool = sync.Pool{New: func() any { return new(request) }}

// call sends req to account's actor and waits for its answer or ctx.
func (e *Engine) call(ctx context.Context, account string, r request) (response, error) {
	if e.closed.Load() {
		return response{}, ErrClosed
	}
	if !persistence.ValidAccount(account) {
		return response{}, fmt.Errorf("%w: %q", ErrInvalidAccount, account)
	}
	req := requestPool.Get().(*request)
	reply := replyPool.Get().(chan response)
	*req = r
	req.reply = reply
	if err := e.reg.send(ctx, account, req); err != nil {
		// Never sent: no answer can come.
		*req = request{}
		requestPool.Put(req)
		replyPool.Put(reply)
		return response{}, err
	}
	select {
	case resp := <-reply:
		// Each request is answered exactly once, and an actor does not
		// touch a request after answering it: both can be reused.
		*req = request{}
		requestPool.Put(req)
		replyPool.Put(reply)
		return resp, resp.err
	case <-ctx.Done():
		// The answer may still come: neither is reused.
		return response{}, ctx.Err()
	}
}

// Reserve grants up to n (1 to MaxBatch) slots of account at once and
// returns them with the account's status. Fewer are granted when fewer are
// free, none when the account is at its limit: that is not an error.
// A grant is returned only once its journal entry is durable; if the journal
// cannot write, Reserve returns an error wrapping ErrUnavailable and grants
// nothing. Every granted slot must be resolved with Commit (the pin was
// made) or Release (it definitely was not) within the lease; an unresolved
// slot counts as a pin made at the end of its lease. If ctx ends before the
// answer, the slots possibly granted stay counted until their lease ends.
func (e *Engine) Reserve(ctx context.Context, account string, n int) (Grant, error) {
	if n < 1 || n > MaxBatch {
		return Grant{}, fmt.Errorf("%w: %d not in [1, %d]", ErrInvalidCount, n, MaxBatch)
	}
	r, err := e.call(ctx, account, request{op: opReserve, n: n})
	if err != nil {
		return Grant{Status: r.status}, err
	}
	g := Grant{Status: r.status, First: r.first, Granted: r.granted}
	if r.granted > 0 {
		g.Deadline = time.UnixMilli(r.deadline)
	}
	return g, nil
}

// Commit records that reservation r became a pin at time at (engine time,
// no earlier than the moment Pinterest answered), and returns the account's
// status. The recorded time is kept between the reservation and now. A
// Commit after r's deadline is still taken: r already counts as a pin at
// its deadline, and that pin moves forward to at (never backward), so a
// late answer only makes the count stricter. It fails with
// ErrUnknownReservation when r is unknown, resolved already, or lapsed so
// long ago that its pin no longer counts.
func (e *Engine) Commit(ctx context.Context, r Reservation, at time.Time) (Status, error) {
	resp, err := e.call(ctx, r.Account, request{op: opCommit, id: r.ID, at: at.UnixMilli()})
	return resp.status, err
}

// CommitAsync is Commit without waiting for the actor's answer: it returns
// once the account's actor has the request (an idle actor has usually
// served it already, on the caller's goroutine), and does not report the
// account's status. It changes nothing in what is stored or when: Commit
// does not wait for the disk either, except after the lease (see
// docs/design.md, "Commit and Release without an answer"). Reservations
// the account does not know are logged, not returned. It returns an error
// only when the request could not be sent: the engine is closed, the
// account name is invalid, or ctx ended while the account's actor was
// starting or passivating. Requests sent later by the same goroutine for
// the same account are served after it.
func (e *Engine) CommitAsync(ctx context.Context, r Reservation, at time.Time) error {
	return e.post(ctx, r.Account, request{op: opCommit, id: r.ID, at: at.UnixMilli()})
}

// ReleaseAsync is Release without waiting for the actor's answer, on the
// terms of CommitAsync.
func (e *Engine) ReleaseAsync(ctx context.Context, r Reservation) error {
	return e.post(ctx, r.Account, request{op: opRelease, id: r.ID})
}

// post sends req to account's actor without a reply channel; the actor
// puts the request back in requestPool once served (see
// accountActor.Receive).
func (e *Engine) post(ctx context.Context, account string, r request) error {
	if e.closed.Load() {
		return ErrClosed
	}
	if !persistence.ValidAccount(account) {
		return fmt.Errorf("%w: %q", ErrInvalidAccount, account)
	}
	req := requestPool.Get().(*request)
	*req = r
	req.posted = true
	if err := e.reg.send(ctx, account, req); err != nil {
		*req = request{}
		requestPool.Put(req)
		return err
	}
	return nil
}

// Release frees reservation r, whose pin definitely did not happen. After
// r's deadline, when r already counts as a pin made then, that pin is
// given back too. When in doubt (a timeout, a 5xx), leave r unresolved
// instead: undercounting is the one thing the engine must never do.
func (e *Engine) Release(ctx context.Context, r Reservation) (Status, error) {
	resp, err := e.call(ctx, r.Account, request{op: opRelease, id: r.ID})
	return resp.status, err
}

// Hold keeps account from being granted anything before until (engine
// time), as when Pinterest answers that the account is rate limited until
// then; Status.NextFree is no earlier than until. A hold never shortens an
// earlier, longer one. The hold is in force when Hold returns; it is
// durable unless Hold returns an error wrapping ErrUnavailable, in which case
// it lasts until the account's actor next reloads.
func (e *Engine) Hold(ctx context.Context, account string, until time.Time) (Status, error) {
	// Engine time is in whole milliseconds: round up, or a hold ending
	// within the current millisecond would end before until.
	at := until.UnixMilli()
	if until.After(time.UnixMilli(at)) {
		at++
	}
	resp, err := e.call(ctx, account, request{op: opHold, at: at})
	if err != nil && resp.status.Account != "" {
		return resp.status, fmt.Errorf("actors: account %q: hold: %w: %w", account, ErrUnavailable, err)
	}
	return resp.status, err
}

// Status returns account's standing without reserving anything.
func (e *Engine) Status(ctx context.Context, account string) (Status, error) {
	resp, err := e.call(ctx, account, request{op: opStatus})
	return resp.status, err
}

// StatusMany returns the standing of each account, in order, asking all
// their actors at once. An account that fails has only its Account set in
// the result, and its error joins the returned error.
func (e *Engine) StatusMany(ctx context.Context, accounts []string) ([]Status, error) {
	out := make([]Status, len(accounts))
	errs := make([]error, len(accounts))
	var wg sync.WaitGroup
	for i, acc := range accounts {
		out[i].Account = acc
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := e.call(ctx, acc, request{op: opStatus})
			if err != nil {
				errs[i] = err
				return
			}
			out[i] = resp.status
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// Probe checks that the store takes writes: it writes the high-water mark
// (the engine's current time) through the journal, as every batch of
// grants does, and waits until the write is durable. It fails with
// ErrClosed once the engine is closing, with the store's error when the
// write failed (a closed store, a full disk), or with ctx's error. A
// readiness check calls it: it costs at most one sync of the disk, none
// when it joins a batch of other writes or when the engine time has not
// moved since the last write.
func (e *Engine) Probe(ctx context.Context) error {
	if e.closed.Load() {
		return ErrClosed
	}
	done := make(chan error, 1)
	e.journal.Append(persistence.AccountWrite{}, e.clock.Now(), func(err error) { done <- err })
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("actors: probe: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("actors: probe: %w", ctx.Err())
	}
}

// Resident returns how many accounts are in memory, with an actor or
// parked.
func (e *Engine) Resident() int { return e.reg.resident() }

// Parked returns how many of the resident accounts are parked: their
// state held without an actor (see Config.ParkAfter).
func (e *Engine) Parked() int { return e.reg.parkedCount() }

// Recover replays, one at a time, every stored account whose journal holds
// events not yet folded into a snapshot (left by a crash), writing a fresh
// snapshot, and logs each account whose state is unreadable. Requests are
// served meanwhile. New runs it in the background when Config.Recover is set.
func (e *Engine) Recover(ctx context.Context) error {
	var replayed, broken int
	start := time.Now()
	err := e.store.Journaled(ctx, func(account string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := e.call(ctx, account, request{op: opCompact}); err != nil {
			if errors.Is(err, ErrClosed) || ctx.Err() != nil {
				return err
			}
			broken++
			e.log.Error().Err(err).Str("account", account).Msg("replay failed")
			return nil
		}
		replayed++
		return nil
	})
	e.log.Info().Int("replayed", replayed).Int("failed", broken).Dur("took", time.Since(start)).Msg("recovery pass done")
	return err
}

// Close stops accepting requests, passivates every account actor (each
// writes its snapshot durably), flushes the journal and stops the actor
// system. It does not close the store. If ctx ends first, Close returns its
// error after stopping what it can; the journal still holds every event.
//
// Every wait of Close ends when ctx does (a load or a write stuck on the
// disk cannot hold it up); a second, concurrent Close waits for the first,
// or for its own ctx.
func (e *Engine) Close(ctx context.Context) error {
	e.closeOnce.Do(func() {
		go func() {
			e.closeErr = e.close(ctx)
			close(e.closeDone)
		}()
	})
	select {
	case <-e.closeDone:
		return e.closeErr
	case <-ctx.Done():
		return fmt.Errorf("actors: close: %w", ctx.Err())
	}
}

func (e *Engine) close(ctx context.Context) error {
	e.closed.Store(true)
	e.cancelRecover()
	var err error
	wait := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		case <-ctx.Done():
			err = fmt.Errorf("actors: close: %w", ctx.Err())
			return false
		}
	}
	e.jobsOnce.Do(func() { close(e.jobTimerDone) }) // never served
	if wait(e.recoverDone) && wait(e.checkpointDone) && wait(e.sweepDone) && wait(e.jobTimerDone) {
		for _, done := range e.reg.stopAll() {
			if !wait(done) {
				break
			}
		}
	} else {
		e.reg.stopAll() // passivate what can be, without waiting
	}
	jdone := make(chan error, 1)
	go func() { jdone <- e.journal.Close() }()
	select {
	case jerr := <-jdone:
		if jerr != nil && err == nil {
			err = jerr
		}
	case <-ctx.Done():
		if err == nil {
			err = fmt.Errorf("actors: close: journal: %w", ctx.Err())
		}
	}
	e.system.Shutdown()
	return err
}

// accountPropsOptions are the protoactor options of every account actor:
// the engine's own mailbox, made by mailbox, with the synchronized
// dispatcher's turn length, and a supervisor that always restarts (see
// New).
func accountPropsOptions(mailbox actor.MailboxProducer) []actor.PropsOption {
	return []actor.PropsOption{
		actor.WithDispatcher(actor.NewSynchronizedDispatcher(dispatcherThroughput)),
		actor.WithMailbox(mailbox),
		actor.WithGuardian(actor.NewRestartingStrategy()),
	}
}

// Drop stops serving the accounts for which match returns true, for a
// cluster member that lost them to another: their resident actors stop
// once the messages already queued to them are served, without writing
// anything more (a write of theirs now would be fenced off anyway: the
// new owner holds a newer token), and their due instants leave the job
// timer. Jobs already handed out go on; their Finish fails unless this
// engine serves the account again by then. Requests arriving afterwards
// go through Config.Owner, which must refuse the accounts before Drop is
// called. Drop does not wait for the actors to stop; it returns how many
// it asked to.
func (e *Engine) Drop(match func(account string) bool) int {
	e.jobs.drop(match)
	// Parked accounts go at once: their state is stored.
	parked := e.reg.forget(match)
	accounts := e.reg.residentWhere(match)
	for _, account := range accounts {
		req := requestPool.Get().(*request)
		*req = request{op: opDrop, posted: true}
		if !e.reg.sendResident(account, req) {
			*req = request{}
			requestPool.Put(req)
		}
	}
	return parked + len(accounts)
}

// Passivate stops serving the accounts for which match returns true, for
// a cluster member handing them over to another: their due instants leave
// the job timer, their resident actors stop as after their idle timeout
// (each writing its snapshot), and Passivate returns once every write of
// theirs is durable, or with ctx's error. Requests arriving meanwhile go
// through Config.Owner, which must refuse the accounts before Passivate
// is called; otherwise an actor could start again behind it.
func (e *Engine) Passivate(ctx context.Context, match func(account string) bool) error {
	e.jobs.drop(match)
	for _, done := range e.reg.stopWhere(match) {
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("actors: passivate: %w", ctx.Err())
		}
	}
	if err := e.journal.Flush(ctx); err != nil {
		return fmt.Errorf("actors: passivate: %w", err)
	}
	return nil
}
