package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pinbot/pinbot/persistence"
)

// The states of a queued job.
const (
	JobWaiting = persistence.JobWaiting
	JobRunning = persistence.JobRunning
	JobDone    = persistence.JobDone
)

// Job is one unit of delayed work of an account: something its limit
// refused, queued until a slot frees (see Engine.Enqueue). The engine
// treats Payload and Result as opaque bytes.
type Job struct {
	Account  string
	ID       uint64
	State    persistence.JobState
	Enqueued time.Time
	// Due is when a waiting job will start, as computed when the answer
	// was made: the instant enough slots free for it and every job ahead
	// of it, counting each unresolved reservation as a pin made at the end
	// of its lease. Exact for the jobs the current window decides (the
	// first Limit waiting); later ones assume each job ahead pins at its
	// start. It moves earlier when a reservation is released or a job
	// ahead is canceled, later when a hold comes or a job ahead pins late.
	Due time.Time
	// Slot is the reservation a running or done job took.
	Slot Reservation
	// Recovered is set on a running job handed out again by a new engine:
	// the engine that started it stopped before it finished, so whether
	// its work was done is unknown. It must not be done again: finish it
	// with Outcome.Unknown, Done when the work is known to be done, or
	// Absent when it is proven not done. Finish treats any other outcome
	// of a recovered job as Unknown: its slot is never released and it
	// never goes back to the queue.
	Recovered bool
	Finished  time.Time // done jobs
	Payload   []byte
	Result    []byte // done jobs
}

// Queued is the answer to Enqueue.
type Queued struct {
	// Jobs are the jobs queued, in order; a job whose slot was free at
	// once is already running.
	Jobs []Job
	// Refused is how many of the payloads were not queued because the
	// account's queue was full (Config.MaxQueue).
	Refused int
	Status  Status
}

// Outcome is what became of a running job's work, given to Finish.
type Outcome struct {
	// Done says the work happened at At (engine time, no earlier than
	// the moment its success was known): the slot is committed at At.
	Done bool
	At   time.Time
	// Unknown says the work may have happened: the slot is left to count
	// as a pin made at the end of its lease. When neither Done nor
	// Unknown is set, the work surely did not happen and the slot is
	// released.
	Unknown bool
	// Result is kept with the done job for its owner to see.
	Result []byte
	// Absent says the work is proven not done, by looking where it
	// would show once nothing of it can still happen (for a pin, its
	// mark missing from Pinterest's listing after its slot's deadline).
	// Like an outcome with neither Done nor Unknown it releases the slot,
	// and it is the only such outcome a recovered job may have.
	Absent bool
	// Retry, when the work surely did not happen (neither Done nor
	// Unknown), puts the job back at the head of the queue instead of
	// ending it: its slot is released and it starts again no earlier than
	// RetryAfter (at least one second) from now. For work that could not
	// start for a passing reason: the process is shutting down, Pinterest
	// is unreachable or asked to wait.
	Retry      bool
	RetryAfter time.Duration
}

// jobRetry is how long the engine waits before it tries again to start a
// job whose journal write failed.
const jobRetry = time.Second

// jobArgs carries the arguments of the job requests.
type jobArgs struct {
	payloads [][]byte
	ids      []uint64 // opCancel: the jobs to cancel; nil for every waiting one
	slot     uint64   // opFinish
	outcome  Outcome
}

// jobReply carries the answers of the job requests.
type jobReply struct {
	jobs    []Job
	refused int
}

// Enqueue queues one job per payload on account, behind the jobs already
// waiting, and returns them with their start times. Each job runs at most
// once, in queue order, at the instant a slot is free for it: the engine
// reserves the slot and the job's start durably in one write, then hands
// the job to Config.OnJob, which must end it with Finish. While jobs wait,
// Reserve grants only the slots they leave free: a later request never
// overtakes the queue, so the start times given stay true.
//
// Payloads beyond the room left in the account's queue (Config.MaxQueue
// jobs waiting or running) are refused, and counted in Queued.Refused. The
// jobs are durable when Enqueue returns; if the journal cannot write,
// nothing is queued and the error wraps ErrUnavailable. Enqueue fails with
// ErrNoJobHandler when the engine has no Config.OnJob.
func (e *Engine) Enqueue(ctx context.Context, account string, payloads [][]byte) (Queued, error) {
	if e.onJob.Load() == nil {
		return Queued{}, ErrNoJobHandler
	}
	resp, err := e.call(ctx, account, request{op: opEnqueue, job: &jobArgs{payloads: payloads}})
	q := Queued{Status: resp.status}
	if resp.jobs != nil {
		q.Jobs, q.Refused = resp.jobs.jobs, resp.jobs.refused
	}
	return q, err
}

// Jobs returns account's jobs: running ones, waiting ones with their start
// times, then the done ones kept (Config.KeepDone), each group in queue
// order, and the account's status.
func (e *Engine) Jobs(ctx context.Context, account string) ([]Job, Status, error) {
	resp, err := e.call(ctx, account, request{op: opJobs})
	if resp.jobs == nil {
		return nil, resp.status, err
	}
	return resp.jobs.jobs, resp.status, err
}

// Cancel removes waiting jobs of account: those of ids, or every waiting
// job when ids is nil. Running and done jobs and unknown IDs are left
// alone. It returns the jobs removed, once their removal is durable.
func (e *Engine) Cancel(ctx context.Context, account string, ids []uint64) ([]Job, Status, error) {
	if ids != nil && len(ids) == 0 {
		return nil, Status{}, nil
	}
	resp, err := e.call(ctx, account, request{op: opCancel, job: &jobArgs{ids: ids}})
	if resp.jobs == nil {
		return nil, resp.status, err
	}
	return resp.jobs.jobs, resp.status, err
}

// Finish ends running job j with outcome o: its slot is committed,
// released or left to lapse (see Outcome), and the job is kept as done
// with o.Result. It returns once that is durable. It fails with
// ErrUnknownJob when j is not running.
//
// When it fails with ErrNotOwner (the account is not served here now),
// j is no longer the caller's: whichever engine serves the account next,
// this one included, hands it out again as recovered. Any other error
// leaves j the caller's, to finish again.
func (e *Engine) Finish(ctx context.Context, j Job, o Outcome) (Status, error) {
	resp, err := e.call(ctx, j.Account, request{op: opFinish, id: j.ID, job: &jobArgs{slot: j.Slot.ID, outcome: o}})
	notOwner := errors.Is(err, ErrNotOwner)
	if err == nil || notOwner || errors.Is(err, ErrUnknownJob) {
		e.inflight.Delete(jobKey{j.Account, j.ID, j.Slot.ID})
	}
	if notOwner {
		// Served here again since the refusal, its actor may have loaded
		// the job while it was still held: wake it to hand it out. Not
		// served, the wake is refused and the next Adopt hands it out.
		e.jobs.set(j.Account, e.clock.Now())
	}
	return resp.status, err
}

// ServeJobs starts running queued jobs: from now on h is called on a
// goroutine of its own with each job as it starts, and first with each job
// a previous run left running (Job.Recovered). Config.OnJob, when set, is
// served from New; otherwise jobs wait, stored, until ServeJobs is called,
// so that a process can start the engine before what runs its jobs. It
// returns ErrJobsServed if jobs are served already.
func (e *Engine) ServeJobs(h func(Job)) error {
	if h == nil {
		return ErrNoJobHandler
	}
	served := true
	e.jobsOnce.Do(func() {
		served = false
		e.onJob.Store(&h)
		go func() {
			defer close(e.jobTimerDone)
			ctx := e.jobsCtx
			// Every account with stored jobs is due at once: its actor
			// hands out again the jobs a previous run left running and
			// sets its own next instant. An engine that serves only the
			// accounts it owns (Config.Owner) learns them by Adopt.
			if e.cfg.Owner == nil {
				if err := e.store.JobAccounts(ctx, func(account string) error {
					e.jobs.set(account, 0)
					return ctx.Err()
				}); err != nil && ctx.Err() == nil {
					e.log.Error().Err(err).Msg("listing the accounts with queued jobs failed")
				}
			}
			e.runJobTimer(ctx)
		}()
	})
	if served {
		return ErrJobsServed
	}
	return nil
}

// Adopt makes the accounts that list names due at once in the job timer,
// for a cluster member that has just acquired them (their partition): each
// one's actor loads its jobs, hands out again those its previous owner
// left running (Job.Recovered: counted, reported, never run again) and
// sets its own next instant. list calls fn for each account with stored
// jobs (the store's scan of the partition) and returns its error; Adopt
// returns how many accounts it made due and list's error.
func (e *Engine) Adopt(list func(fn func(account string) error) error) (int, error) {
	n := 0
	err := list(func(account string) error {
		if e.closed.Load() {
			return ErrClosed
		}
		e.jobs.set(account, 0)
		n++
		return nil
	})
	return n, err
}

// serving reports whether jobs are served.
func (e *Engine) serving() bool { return e.onJob.Load() != nil }

// QueuedAccounts returns how many accounts have jobs waiting for the
// engine's timer.
func (e *Engine) QueuedAccounts() int { return e.jobs.len() }

// jobKey names one start of a job handed out by this engine: a job put
// back in the queue starts again with a new slot, and the end of its
// previous start (Finish returning) must not forget the new one.
type jobKey struct {
	account string
	id      uint64
	slot    uint64
}

// handOut gives job j to Config.OnJob on a goroutine of its own.
func (e *Engine) handOut(account string, j persistence.Job, recovered bool) {
	e.inflight.Store(jobKey{account, j.ID, j.Slot}, recovered)
	pj := e.publicJob(account, j)
	pj.Recovered = recovered
	go (*e.onJob.Load())(pj)
}

// publicJob converts a stored job.
func (e *Engine) publicJob(account string, j persistence.Job) Job {
	pj := Job{
		Account:  account,
		ID:       j.ID,
		State:    j.State,
		Enqueued: time.UnixMilli(j.Enqueued),
		Payload:  j.Payload,
		Result:   j.Result,
	}
	if j.Slot != 0 {
		pj.Slot = Reservation{Account: account, ID: j.Slot, Deadline: time.UnixMilli(j.Deadline)}
	}
	if j.State == JobDone {
		pj.Finished = time.UnixMilli(j.Finished)
	}
	return pj
}

// loadJobs reads the account's jobs into the actor, and hands out again the
// running ones that no goroutine of this engine holds: a previous engine
// started them and stopped before they finished.
func (a *accountActor) loadJobs() error {
	stored, err := a.eng.store.Jobs(a.eng.ctx, a.account)
	if err != nil {
		return err
	}
	a.jobs, a.done, a.waiting = nil, nil, 0
	a.doneStored, a.jobsUnstored = false, false
	for _, j := range stored {
		a.nextJob = max(a.nextJob, j.ID+1)
		switch j.State {
		case JobDone:
			a.done = append(a.done, j)
		case JobWaiting:
			a.waiting++
			a.jobs = append(a.jobs, j)
		default:
			a.jobs = append(a.jobs, j)
		}
	}
	a.handOutRecovered()
	return nil
}

// handOutRecovered hands out again the running jobs no goroutine of this
// engine holds, once jobs are served.
func (a *accountActor) handOutRecovered() {
	if !a.eng.serving() || len(a.jobs) == a.waiting {
		return
	}
	for _, j := range a.jobs {
		if _, held := a.eng.inflight.Load(jobKey{a.account, j.ID, j.Slot}); j.State == JobRunning && !held {
			a.logger().Warn().Uint64("job", j.ID).Msg("job was running when the engine stopped; its outcome is unknown")
			a.eng.handOut(a.account, j, true)
		}
	}
}

// writeJobs journals ev (if not nil), jobs and drops in one write and
// waits until it is durable. It attaches no snapshot: a snapshot of a
// write that fails would claim events folded in that are not stored.
func (a *accountActor) writeJobs(now int64, ev *persistence.Event, jobs []persistence.Job, drops []uint64) error {
	w := persistence.AccountWrite{Account: a.account, ExpiresAt: a.expiry(now), Jobs: jobs, DropJobs: drops}
	if ev != nil {
		a.seq++
		ev.Seq = a.seq
		a.sinceSnap++
		w.Events = []persistence.Event{*ev}
	}
	a.appended = true
	done := make(chan error, 1)
	a.journalWrite(w, now, func(err error) { done <- err })
	if err := <-done; err != nil {
		a.jobsUnstored = true
		return fmt.Errorf("actors: account %q: %w: %w", a.account, ErrUnavailable, err)
	}
	return nil
}

// loadDone reads the done jobs a parked incarnation left in the store
// (doneStored) in front of those done since. A failed read leaves them
// to the next call.
func (a *accountActor) loadDone() error {
	if !a.doneStored {
		return nil
	}
	stored, err := a.eng.store.Jobs(a.eng.ctx, a.account)
	if err != nil {
		return fmt.Errorf("actors: account %q: %w: %w", a.account, ErrUnavailable, err)
	}
	var done []persistence.Job
	for _, j := range stored {
		if j.State == JobDone && !slices.ContainsFunc(a.done, func(d persistence.Job) bool { return d.ID == j.ID }) {
			done = append(done, j)
		}
	}
	a.done = append(done, a.done...)
	a.doneStored = false
	return nil
}

// runDue starts the waiting jobs whose slots are free at now, in queue
// order: each takes a reservation, and the reservation and the job's start
// are written in one durable write before the job is handed out. Then it
// sets the account's next instant in the engine's timer.
func (a *accountActor) runDue(now int64) {
	for a.waiting > 0 && a.eng.serving() && now >= a.retryAt {
		i := slices.IndexFunc(a.jobs, func(j persistence.Job) bool { return j.State == JobWaiting })
		first, granted := a.led.reserve(now, 1)
		if granted == 0 {
			break
		}
		j := a.jobs[i]
		j.State, j.Slot, j.Deadline = JobRunning, first, now+a.led.lease
		ev := persistence.Event{Kind: persistence.EventReserve, ID: first, Count: 1, At: now, Deadline: j.Deadline}
		if err := a.writeJobs(now, &ev, []persistence.Job{j}, nil); err != nil {
			// Told no one: give the slot back (the write may have landed
			// all the same; the release supersedes it) and try later.
			a.led.release(now, first)
			a.append(now, persistence.Event{Kind: persistence.EventRelease, ID: first}, nil)
			a.retryAt = now + jobRetry.Milliseconds()
			a.logger().Error().Err(err).Uint64("job", j.ID).Msg("starting a queued job failed; trying again shortly")
			break
		}
		a.jobs[i] = j
		a.waiting--
		if a.eng.obs != nil {
			a.eng.obs.Granted(1)
		}
		a.eng.handOut(a.account, j, false)
	}
	a.schedule(now)
}

// schedule sets the account's entry in the engine's timer: the instant its
// first waiting job is due, or none.
func (a *accountActor) schedule(now int64) {
	if a.waiting == 0 || !a.eng.serving() {
		if a.timed {
			a.eng.jobs.set(a.account, Never)
			a.timed = false
		}
		return
	}
	at := max(a.led.freeAt(now, 1), a.retryAt)
	a.eng.jobs.set(a.account, at)
	a.timed = true
}

// startTimes returns the start instants of the account's waiting jobs, in
// queue order (see Job.Due). It runs the engine's own rule for starting a
// job (runDue and schedule: the first instant a slot is free under every
// rule in force, and the hold, no earlier than retryAt) on a copy of the
// ledger, recording each job ahead as a pin made at its start.
func (a *accountActor) startTimes(now int64) []int64 {
	out := make([]int64, a.waiting)
	if len(out) == 0 {
		return out
	}
	sim := a.led.clone()
	t := max(now, a.retryAt)
	for k := range out {
		if t != Never {
			sim.expire(t)
			t = max(sim.freeAt(t, 1), t)
		}
		out[k] = t
		if t != Never {
			sim.record(t)
		}
	}
	return out
}

// jobList returns the account's jobs as Jobs returns them: its waiting
// and running jobs, then its done ones.
func (a *accountActor) jobList(now int64) ([]Job, error) {
	if err := a.loadDone(); err != nil {
		return nil, err
	}
	out := a.liveJobs(now, len(a.done))
	for _, j := range a.done {
		out = append(out, a.eng.publicJob(a.account, j))
	}
	return out, nil
}

// liveJobs returns the account's running jobs, then its waiting ones in
// order, with room for extra more.
func (a *accountActor) liveJobs(now int64, extra int) []Job {
	out := make([]Job, 0, len(a.jobs)+extra)
	due := a.startTimes(now)
	k := 0
	for _, j := range a.jobs {
		if j.State == JobRunning {
			out = append(out, a.eng.publicJob(a.account, j))
		}
	}
	for _, j := range a.jobs {
		if j.State == JobWaiting {
			pj := a.eng.publicJob(a.account, j)
			pj.Due = time.UnixMilli(due[k])
			k++
			out = append(out, pj)
		}
	}
	return out
}

// handleJobs serves the job requests.
func (a *accountActor) handleJobs(m *request, now int64) {
	switch m.op {
	case opEnqueue:
		a.enqueue(m, now)
	case opJobs:
		jobs, err := a.jobList(now)
		if err != nil {
			a.answer(m, response{status: a.status(now), err: err})
			return
		}
		a.answer(m, response{status: a.status(now), jobs: &jobReply{jobs: jobs}})
	case opCancel:
		a.cancel(m, now)
	case opFinish:
		a.finish(m, now)
	}
}

func (a *accountActor) enqueue(m *request, now int64) {
	payloads := m.job.payloads
	room := max(a.eng.cfg.MaxQueue-len(a.jobs), 0)
	k := min(len(payloads), room)
	refused := len(payloads) - k
	if k == 0 {
		a.answer(m, response{status: a.status(now), jobs: &jobReply{refused: refused}})
		return
	}
	a.nextJob = max(a.nextJob, uint64(now)<<10)
	added := make([]persistence.Job, k)
	for i := range added {
		added[i] = persistence.Job{ID: a.nextJob + uint64(i), State: JobWaiting, Enqueued: now, Payload: slices.Clone(payloads[i])}
	}
	if err := a.writeJobs(now, nil, added, nil); err != nil {
		a.logger().Error().Err(err).Int("jobs", k).Msg("queueing jobs failed")
		a.answer(m, response{status: a.status(now), err: err})
		return
	}
	a.nextJob += uint64(k)
	a.jobs = append(a.jobs, added...)
	a.waiting += k
	a.runDue(now)
	first := added[0].ID
	var out []Job
	for _, j := range a.liveJobs(now, 0) {
		if j.ID >= first {
			out = append(out, j)
		}
	}
	a.answer(m, response{status: a.status(now), jobs: &jobReply{jobs: out, refused: refused}})
}

func (a *accountActor) cancel(m *request, now int64) {
	var drops []uint64
	for _, j := range a.jobs {
		if j.State == JobWaiting && (m.job.ids == nil || slices.Contains(m.job.ids, j.ID)) {
			drops = append(drops, j.ID)
		}
	}
	if len(drops) == 0 {
		a.answer(m, response{status: a.status(now), jobs: &jobReply{}})
		return
	}
	if err := a.writeJobs(now, nil, nil, drops); err != nil {
		a.answer(m, response{status: a.status(now), err: err})
		return
	}
	var canceled []Job
	keep := a.jobs[:0]
	for _, j := range a.jobs {
		if j.State == JobWaiting && slices.Contains(drops, j.ID) {
			canceled = append(canceled, a.eng.publicJob(a.account, j))
			a.waiting--
			continue
		}
		keep = append(keep, j)
	}
	clear(a.jobs[len(keep):])
	a.jobs = keep
	a.schedule(now)
	a.answer(m, response{status: a.status(now), jobs: &jobReply{jobs: canceled}})
}

func (a *accountActor) finish(m *request, now int64) {
	i := slices.IndexFunc(a.jobs, func(j persistence.Job) bool { return j.ID == m.id })
	if i < 0 || a.jobs[i].State != JobRunning || a.jobs[i].Slot != m.job.slot {
		a.answer(m, response{status: a.status(now), err: fmt.Errorf("actors: account %q: job %d: %w", a.account, m.id, ErrUnknownJob)})
		return
	}
	j := a.jobs[i]
	o := m.job.outcome
	if o.Absent && (o.Done || o.Unknown) {
		a.answer(m, response{status: a.status(now), err: fmt.Errorf("actors: account %q: job %d: %w: Absent with Done or Unknown", a.account, m.id, ErrInvalidOutcome)})
		return
	}
	if rec, _ := a.eng.inflight.Load(jobKey{a.account, j.ID, j.Slot}); rec == true && !o.Done && !o.Unknown && !o.Absent {
		// A recovered job's work may have been done by the engine that
		// started it: its slot is never released, nor is it run again,
		// unless it is proven not done (Absent).
		a.logger().Warn().Uint64("job", j.ID).Msg("a recovered job may not be released or retried; its outcome is kept unknown")
		o.Unknown, o.Retry = true, false
	}
	var ev *persistence.Event
	switch {
	case o.Done:
		if t, _, ok := a.led.commit(now, j.Slot, o.At.UnixMilli()); ok {
			ev = &persistence.Event{Kind: persistence.EventCommit, ID: j.Slot, At: t}
			if a.eng.obs != nil {
				a.eng.obs.Committed()
			}
		}
	case o.Unknown:
		// The slot stays pending and counts as a pin made at its deadline.
	default:
		if a.led.release(now, j.Slot) {
			ev = &persistence.Event{Kind: persistence.EventRelease, ID: j.Slot}
			if a.eng.obs != nil {
				a.eng.obs.Released()
			}
		}
	}
	if o.Retry && !o.Done && !o.Unknown {
		a.retry(m, now, i, ev, o.RetryAfter)
		return
	}
	j.State, j.Finished, j.Result = JobDone, now, slices.Clone(o.Result)
	j.ExpiresAt = a.eng.wall() + a.eng.cfg.KeepDoneFor.Milliseconds()
	a.jobs = slices.Delete(a.jobs, i, i+1)
	if err := a.loadDone(); err != nil {
		// The oldest stored ones stay over KeepDone until read (their
		// lifetime, KeepDoneFor, still bounds them).
		a.logger().Warn().Err(err).Msg("reading the done jobs failed")
	}
	a.done = append(a.done, j)
	var drops []uint64
	if over := len(a.done) - a.eng.cfg.KeepDone; over > 0 && !a.doneStored {
		for _, d := range a.done[:over] {
			drops = append(drops, d.ID)
		}
		a.done = slices.Delete(a.done, 0, over)
	}
	var store []persistence.Job
	if a.eng.cfg.KeepDone > 0 {
		store = []persistence.Job{j}
	}
	err := a.writeJobs(now, ev, store, drops)
	if err != nil {
		// In memory the job is done; a restart before another write of it
		// finds it running and hands it out as recovered: never run again.
		a.logger().Error().Err(err).Uint64("job", j.ID).Msg("recording a finished job failed")
	}
	a.runDue(now)
	a.answer(m, response{status: a.status(now), err: err})
}

// retry puts running job i back to waiting, its slot released (ev), not to
// start before after from now.
func (a *accountActor) retry(m *request, now int64, i int, ev *persistence.Event, after time.Duration) {
	j := a.jobs[i]
	j.State, j.Slot, j.Deadline = JobWaiting, 0, 0
	err := a.writeJobs(now, ev, []persistence.Job{j}, nil)
	if err != nil {
		// The store still says running: a restart hands it out as
		// recovered, never runs it again.
		a.logger().Error().Err(err).Uint64("job", j.ID).Msg("putting a job back in the queue failed")
	}
	a.jobs[i] = j
	a.waiting++
	a.retryAt = max(a.retryAt, now+max(after, jobRetry).Milliseconds())
	a.runDue(now)
	a.answer(m, response{status: a.status(now), err: err})
}
