package actors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pinbot/pinbot/persistence"
)

// SurveyOptions bounds Engine.Survey.
type SurveyOptions struct {
	// Top is how many accounts Survey.Busiest and Survey.Queue list at
	// most; 0 means DefaultSurveyTop.
	Top int
	// Max bounds the accounts examined: those with queued jobs first,
	// then the resident ones, then stored ones in key order; 0 means
	// DefaultSurveyMax. The cost of a survey grows with it, not with
	// the number of accounts stored.
	Max int
	// Bucket is the width of the timeline's buckets, from a millisecond
	// to the window; 0 means the window divided by 48.
	Bucket time.Duration
}

// Defaults of SurveyOptions.
const (
	DefaultSurveyTop = 10
	DefaultSurveyMax = 10_000
)

// surveyWorkers is how many accounts a survey examines at once.
const surveyWorkers = 8

// Survey is the engine's standing at one instant, read without changing
// anything: the accounts nearest their limit, the queue, and when the
// pins still counting were made. See Engine.Survey.
type Survey struct {
	// At is the engine time of the survey; Limit and Window are the
	// current rule's.
	At     time.Time
	Limit  int
	Window time.Duration
	// Busiest are the examined accounts with the most slots in use
	// (Used+Blocked), most first; ties go to the one with more jobs
	// waiting, then by account ID. Accounts with nothing in use and
	// nothing queued are left out.
	Busiest []Status
	// Queue are the examined accounts with jobs waiting, most waiting
	// first (ties by account ID), and Waiting the jobs waiting on all
	// the examined accounts.
	Queue   []Status
	Waiting int
	// QueuedAccounts is how many accounts have jobs waiting for the
	// engine's timer, examined or not (Engine.QueuedAccounts).
	QueuedAccounts int
	// Timeline counts the pins of the examined accounts that still count
	// at At, by the instant each counts from, in buckets of Bucket
	// aligned on multiples of Bucket since the Unix epoch: bucket i
	// starts at Start + i*Bucket. Reservations not yet resolved are not
	// in it (they are in Status.Used and Status.Pending).
	Timeline []int
	Start    time.Time
	Bucket   time.Duration
	// Examined is how many accounts were looked at, Resident how many
	// actors were in memory, and Failed how many examined accounts'
	// state could not be read (their errors are logged).
	Examined, Resident, Failed int
	// Complete is true when every account with queued jobs, every
	// resident account and every stored one was examined: Busiest and
	// Queue are then exact, not a sample.
	Complete bool
}

// surveyArgs carries a survey request to an actor: the timeline to add
// the account's pins to.
type surveyArgs struct {
	tl *timeline
}

// timeline counts instants in buckets; not safe for simultaneous use.
type timeline struct {
	first  int64 // the first instant counted: pins at or after it count
	start  int64 // the first bucket's start
	bucket int64 // ms
	counts []int
}

func newTimeline(now, window, bucket int64) *timeline {
	first := now - window + 1
	start := first - mod(first, bucket)
	n := int((now-start)/bucket) + 1
	return &timeline{first: first, start: start, bucket: bucket, counts: make([]int, n)}
}

// mod is a%b, non-negative for b > 0.
func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// add counts the instants of ts within the timeline.
func (t *timeline) add(ts []int64) {
	for _, x := range ts {
		if x < t.first {
			continue
		}
		if i := (x - t.start) / t.bucket; i < int64(len(t.counts)) {
			t.counts[i]++
		}
	}
}

// merge adds o's counts, of the same shape, to t's.
func (t *timeline) merge(o *timeline) {
	for i, c := range o.counts {
		t.counts[i] += c
	}
}

// Survey examines up to o.Max accounts and returns the busiest, the
// queue and a timeline of their pins. It reads resident accounts through
// their actors, in a request that does not count as a use (an account
// kept in memory only by surveys passivates as usual), and accounts not
// in memory straight from the store, without spawning their actors: a
// survey never grows the engine's memory beyond its own answer. Those
// store reads see the account's durable state, which may lag a request
// being served at that instant by a few milliseconds; nothing it
// reports is used to grant anything.
//
// Accounts with queued jobs come first, then resident ones (in no
// particular order), then stored ones in key order, until o.Max:
// Survey.Complete says whether every account was examined. Survey is
// safe for simultaneous use; it returns an error only when ctx ends, the
// engine is closed or the store cannot list its accounts.
func (e *Engine) Survey(ctx context.Context, o SurveyOptions) (Survey, error) {
	if e.closed.Load() {
		return Survey{}, ErrClosed
	}
	if o.Top <= 0 {
		o.Top = DefaultSurveyTop
	}
	if o.Max <= 0 {
		o.Max = DefaultSurveyMax
	}
	now := e.clock.Now()
	rule := e.rules.at(now).cur
	window := rule.width
	bucket := o.Bucket.Milliseconds()
	if bucket <= 0 {
		bucket = max(window/48, 1)
	}
	bucket = min(bucket, window)
	s := Survey{
		At:             time.UnixMilli(now),
		Limit:          rule.limit,
		Window:         time.Duration(window) * time.Millisecond,
		QueuedAccounts: e.jobs.len(),
		Resident:       e.reg.resident(),
	}

	// The candidates, in order, until o.Max: no list is read in full
	// beyond what could be taken.
	seen := make(map[string]struct{})
	var names []string
	take := func(list []string) bool {
		for _, a := range list {
			if _, ok := seen[a]; ok {
				continue
			}
			if len(names) >= o.Max {
				return false
			}
			seen[a] = struct{}{}
			names = append(names, a)
		}
		return true
	}
	queued, allQueued := e.jobs.accounts(o.Max)
	complete := take(queued) && allQueued
	resident, allResident := e.reg.names(o.Max + len(queued))
	complete = take(resident) && allResident && complete
	if complete {
		errFull := errors.New("full")
		err := e.store.Accounts(ctx, func(account string) error {
			if !take([]string{account}) {
				return errFull
			}
			return nil
		})
		switch {
		case errors.Is(err, errFull):
			complete = false
		case err != nil:
			return Survey{}, fmt.Errorf("actors: survey: listing the stored accounts: %w", err)
		}
	}
	s.Complete = complete

	tl := newTimeline(now, window, bucket)
	statuses, failed, err := e.surveyAll(ctx, names, now, tl)
	if err != nil {
		return Survey{}, err
	}
	s.Examined, s.Failed = len(names), failed
	s.Timeline, s.Start, s.Bucket = tl.counts, time.UnixMilli(tl.start), time.Duration(bucket)*time.Millisecond

	for _, st := range statuses {
		s.Waiting += st.Queued
		if st.Used+st.Blocked > 0 || st.Queued > 0 {
			s.Busiest = append(s.Busiest, st)
		}
		if st.Queued > 0 {
			s.Queue = append(s.Queue, st)
		}
	}
	slices.SortFunc(s.Busiest, func(a, b Status) int {
		return cmp.Or(
			cmp.Compare(b.Used+b.Blocked, a.Used+a.Blocked),
			cmp.Compare(b.Queued, a.Queued),
			cmp.Compare(a.Account, b.Account))
	})
	slices.SortFunc(s.Queue, func(a, b Status) int {
		return cmp.Or(cmp.Compare(b.Queued, a.Queued), cmp.Compare(a.Account, b.Account))
	})
	s.Busiest = slices.Clip(s.Busiest[:min(len(s.Busiest), o.Top)])
	s.Queue = slices.Clip(s.Queue[:min(len(s.Queue), o.Top)])
	return s, nil
}

// surveyAll reads the status of each of names at now, surveyWorkers at a
// time, adding their pins to tl. It returns the statuses read and how
// many accounts failed.
func (e *Engine) surveyAll(ctx context.Context, names []string, now int64, tl *timeline) ([]Status, int, error) {
	work := make(chan string)
	var (
		mu       sync.Mutex
		statuses = make([]Status, 0, len(names))
		failed   int
		wg       sync.WaitGroup
	)
	for range min(surveyWorkers, len(names)) {
		wg.Go(func() {
			own := &timeline{first: tl.first, start: tl.start, bucket: tl.bucket, counts: make([]int, len(tl.counts))}
			var mine []Status
			bad := 0
			for account := range work {
				if ctx.Err() != nil {
					// An actor may still be adding to own (see
					// surveyOne): leave it alone.
					continue
				}
				st, err := e.surveyOne(ctx, account, now, own)
				switch {
				case err == nil:
					mine = append(mine, st)
				case ctx.Err() == nil && !errors.Is(err, ErrClosed):
					bad++
					e.log.Warn().Err(err).Str("account", account).Msg("survey: account state unreadable")
				}
			}
			if ctx.Err() != nil {
				return // the survey fails; own may still be written
			}
			mu.Lock()
			statuses = append(statuses, mine...)
			failed += bad
			tl.merge(own)
			mu.Unlock()
		})
	}
	var err error
send:
	for _, a := range names {
		select {
		case work <- a:
		case <-ctx.Done():
			err = ctx.Err()
			break send
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		err = ctx.Err() // ended while the last accounts were examined
	}
	switch {
	case err != nil:
		return nil, 0, fmt.Errorf("actors: survey: %w", err)
	case e.closed.Load():
		return nil, 0, ErrClosed
	}
	return statuses, failed, nil
}

// surveyOne reads account's status and adds its pins to tl: through its
// actor when resident, else from the store.
func (e *Engine) surveyOne(ctx context.Context, account string, now int64, tl *timeline) (Status, error) {
	reply := make(chan response, 1)
	req := &request{op: opSurvey, survey: &surveyArgs{tl: tl}, reply: reply}
	if e.reg.sendResident(account, req) {
		select {
		case r := <-reply:
			return r.status, r.err
		case <-ctx.Done():
			// The actor may still write to tl: stop using it.
			return Status{}, ctx.Err()
		}
	}
	if p := e.reg.peekParked(account); p != nil {
		a := &accountActor{eng: e, account: account}
		a.resume(p)
		a.led.expire(now)
		tl.add(a.led.win.Times(nil, now))
		return a.status(now), nil
	}
	return e.storedStatus(ctx, account, now, tl)
}

// storedStatus reads account's status at now from the store, as its actor
// would load it, and adds its pins to tl.
func (e *Engine) storedStatus(ctx context.Context, account string, now int64, tl *timeline) (Status, error) {
	st, err := e.store.Load(ctx, account)
	if err != nil {
		return Status{}, fmt.Errorf("actors: account %q: %w: %w", account, ErrAccountState, err)
	}
	jobs, err := e.store.Jobs(ctx, account)
	if err != nil {
		return Status{}, fmt.Errorf("actors: account %q: %w: %w", account, ErrAccountState, err)
	}
	a := &accountActor{eng: e, account: account, led: newRuledLedger(e.rules.at(now), e.cfg.Lease)}
	a.led.restore(st.Snapshot)
	for _, ev := range st.Events {
		a.led.apply(ev)
	}
	for _, j := range jobs {
		if j.State == persistence.JobWaiting {
			a.waiting++
		}
	}
	a.led.expire(now)
	tl.add(a.led.win.Times(nil, now))
	return a.status(now), nil
}

// survey answers a survey request: the account's status, its pins added
// to the request's timeline. Not a use of the account: lastUsed and
// served are left alone, so that a dashboard polling every account does
// not keep idle ones in memory.
func (a *accountActor) survey(m *request, now int64) {
	a.led.expire(now)
	if m.survey != nil {
		m.survey.tl.add(a.led.win.Times(nil, now))
	}
	a.answer(m, response{status: a.status(now)})
}

// names returns the accounts of up to n resident actors, and whether
// that is all of them.
func (r *registry) names(n int) ([]string, bool) {
	var out []string
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.RLock()
		for account, e := range sh.m {
			if e.pid == nil || e.passivating {
				continue
			}
			if len(out) >= n {
				sh.mu.RUnlock()
				return out, false
			}
			out = append(out, account)
		}
		for j := range sh.parked.slots {
			if !sh.parked.slots[j].live {
				continue
			}
			if len(out) >= n {
				sh.mu.RUnlock()
				return out, false
			}
			out = append(out, sh.parked.name(j))
		}
		sh.mu.RUnlock()
	}
	return out, true
}

// accounts returns up to n of the accounts waiting in the timer, and
// whether that is all of them.
func (t *jobTimer) accounts(n int) ([]string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, min(n, len(t.h)))
	for _, e := range t.h {
		if len(out) >= n {
			return out, false
		}
		out = append(out, e.account)
	}
	return out, true
}
