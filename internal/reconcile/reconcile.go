package reconcile

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
)

// Drift is one account's standing at its last reconciliation: what
// Pinterest listed against what pinbot counted.
type Drift struct {
	Account string
	// At is the engine time of the reconciliation.
	At time.Time
	// Pinterest is how many pins Pinterest listed as created in the
	// window: every pin with Config.CountAll, pinbot's own (those with its
	// mark) without.
	Pinterest int
	// Counted is how many pins pinbot counted as made (Status.Used less
	// Pending), and Pending how many reservations were unresolved: their
	// pins may exist or not.
	Counted, Pending int
	// Elsewhere is how many of the account's pins in the window lack
	// pinbot's mark (made in Pinterest's app, with another tool), and
	// Observed how many of them this reconciliation recorded in the
	// engine. CountAll is Config.CountAll: whether pinbot counts them.
	Elsewhere, Observed int
	CountAll            bool
	// Drift is Pinterest less Counted: positive when Pinterest lists more
	// pins than pinbot counts.
	Drift int
	// Unexplained is how many of a positive Drift the rules do not
	// explain (see the package documentation); 0 otherwise.
	Unexplained int
}

// Summary sums up the drifts the reconciler keeps.
type Summary struct {
	// Positive and Negative are how many accounts had Pinterest list
	// more pins than pinbot counts, and fewer.
	Positive, Negative int
	// Largest is the largest positive drift (0 when none), Smallest the
	// most negative (0 when none).
	Largest, Smallest int
}

// Reconciler runs the rounds of the package documentation and keeps the
// last drift of each account it reconciled within the window, up to
// maxDrifts accounts. It is safe for simultaneous use.
type Reconciler struct {
	cfg     Config
	eng     *actors.Engine
	session func(context.Context, string) (*pinterest.Session, error)
	ro      *ReadOnlySessions // the default sessions; nil with Config.Session
	log     zerolog.Logger

	round sync.Mutex // one round at a time

	mu     sync.Mutex
	drifts map[string]Drift
	// last is when each account was last reached (listed or skipped),
	// so that the accounts not reached go first.
	last map[string]time.Time
}

// maxDrifts bounds the accounts whose drift the reconciler keeps (and
// when each was last reached): the most a survey examines.
const maxDrifts = actors.DefaultSurveyMax

// New returns a Reconciler for cfg, after validating it.
func New(cfg Config) (*Reconciler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	r := &Reconciler{
		cfg:     cfg,
		eng:     cfg.Engine,
		session: cfg.Session,
		log:     cfg.Log.With().Str("component", "reconcile").Logger(),
		drifts:  make(map[string]Drift),
		last:    make(map[string]time.Time),
	}
	if r.session == nil {
		r.ro = NewReadOnlySessions(cfg.Links, cfg.Engine.Now, cfg.TokenMargin)
		r.session = r.ro.Session
	}
	return r, nil
}

// Every returns the interval between rounds.
func (r *Reconciler) Every() time.Duration { return r.cfg.Every }

// Run runs a round every Config.Every, by the engine's clock, until ctx
// ends; the first one Every after the call.
func (r *Reconciler) Run(ctx context.Context) {
	for {
		if err := r.eng.SleepUntil(ctx, r.eng.Now().Add(r.cfg.Every)); err != nil {
			return
		}
		r.Round(ctx)
	}
}

// Report says what one round did.
type Report struct {
	// End is how the round ended, one of RoundEnds.
	End string
	// Reconciled, Failed and Skipped count the accounts by outcome (see
	// Results); Observed the pins made elsewhere recorded.
	Reconciled, Failed, Skipped, Observed int
	// Left is how many active accounts the round did not reach.
	Left int
}

// Round runs one round now and reports what it did; rounds never
// overlap.
func (r *Reconciler) Round(ctx context.Context) Report {
	r.round.Lock()
	defer r.round.Unlock()
	rep := r.runRound(ctx)
	if r.cfg.Observer != nil {
		r.cfg.Observer.Round(rep.End)
	}
	ev := r.log.Debug()
	if rep.Failed > 0 || rep.Observed > 0 || rep.End != EndComplete {
		ev = r.log.Info()
	}
	ev.Str("end", rep.End).Int("reconciled", rep.Reconciled).Int("failed", rep.Failed).Int("skipped", rep.Skipped).
		Int("observed", rep.Observed).Int("left", rep.Left).Msg("reconciliation round")
	return rep
}

func (r *Reconciler) runRound(ctx context.Context) Report {
	s, err := r.eng.Survey(ctx, actors.SurveyOptions{Top: actors.DefaultSurveyMax})
	if err != nil {
		r.log.Warn().Err(err).Msg("reconciliation: surveying the engine failed")
		return Report{End: EndFailed}
	}
	window := s.Window
	candidates := r.order(s.Busiest)
	if r.ro != nil {
		keep := make(map[string]bool, len(candidates))
		for _, a := range candidates[:min(len(candidates), r.cfg.MaxAccounts)] {
			keep[a] = true
		}
		r.ro.Forget(keep)
	}
	rep := Report{End: EndComplete}
	listed := 0
	for i, account := range candidates {
		if ctx.Err() != nil {
			rep.End, rep.Left = EndFailed, len(candidates)-i
			break
		}
		if listed == r.cfg.MaxAccounts {
			rep.End, rep.Left = EndBounded, len(candidates)-i
			break
		}
		if r.cfg.Pinterest.BreakerState() == "open" {
			r.log.Info().Msg("reconciliation paused: Pinterest is not answering (circuit open)")
			rep.End, rep.Left = EndPaused, len(candidates)-i
			break
		}
		res, observed, sent, pause := r.account(ctx, account, window)
		rep.Observed += observed
		switch res {
		case ResultReconciled:
			rep.Reconciled++
		case ResultFailed:
			rep.Failed++
		case ResultSkipped:
			rep.Skipped++
		}
		if sent {
			listed++
		}
		if r.cfg.Observer != nil {
			r.cfg.Observer.Reconciled(res)
			if observed > 0 {
				r.cfg.Observer.Observed(observed)
			}
		}
		if pause {
			rep.End, rep.Left = EndPaused, len(candidates)-i-1
			break
		}
	}
	r.prune(r.eng.Now(), window)
	return rep
}

// order returns the accounts of the survey's busiest, those reached
// least recently first (never reached before all), then the busiest
// first, as the survey listed them.
func (r *Reconciler) order(busiest []actors.Status) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	type cand struct {
		account string
		last    time.Time
		rank    int
	}
	cs := make([]cand, len(busiest))
	for i, st := range busiest {
		cs[i] = cand{account: st.Account, last: r.last[st.Account], rank: i}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return cmp.Or(a.last.Compare(b.last), cmp.Compare(a.rank, b.rank)) })
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.account
	}
	return out
}

// account reconciles one account: it returns the outcome, the pins made
// elsewhere it recorded, whether it asked Pinterest for a listing, and
// whether the round must stop (Pinterest rate limits the listings or is
// not answering).
func (r *Reconciler) account(ctx context.Context, account string, window time.Duration) (result string, observed int, sent, pause bool) {
	log := r.log.With().Str("account", account).Logger()
	r.reached(account)
	acct, err := r.cfg.Links.Account(ctx, account)
	switch {
	case errors.Is(err, links.ErrNoToken), errors.Is(err, links.ErrInvalid):
		// Not linked (any more): nothing to list it with.
		log.Debug().Msg("reconciliation skipped: the account is not linked")
		return ResultSkipped, 0, false, false
	case err != nil:
		log.Warn().Err(err).Msg("reconciliation failed: the token store cannot be read")
		return ResultFailed, 0, false, false
	case acct.RelinkNeeded:
		log.Info().Str("username", acct.Username).Msg("reconciliation skipped: the account needs a new link")
		return ResultSkipped, 0, false, false
	}
	sess, err := r.session(ctx, account)
	switch {
	case errors.Is(err, links.ErrNoToken):
		log.Debug().Msg("reconciliation skipped: the account is not linked")
		return ResultSkipped, 0, false, false
	case errors.Is(err, ErrTokenDue):
		log.Info().Str("username", acct.Username).Msg("reconciliation skipped: its access token is due for renewal, which the bot makes at its next use")
		return ResultSkipped, 0, false, false
	case err != nil:
		log.Warn().Err(err).Msg("reconciliation failed: no session to list with")
		return ResultFailed, 0, false, false
	}
	since := r.eng.Now().Add(-window - r.cfg.Skew)
	pins, err := r.cfg.Pinterest.ListPins(ctx, sess, pinterest.ListOptions{Since: since, MaxPages: r.cfg.MaxPages})
	switch {
	case errors.Is(err, pinterest.ErrReauthRequired):
		// Revoked, or the token replaced early: the bot's own use of the
		// account finds out which, and marks it for a new link if so.
		log.Info().Err(err).Str("username", acct.Username).Msg("reconciliation skipped: Pinterest refused the account's access token")
		return ResultSkipped, 0, true, false
	case err != nil:
		pause = errors.Is(err, pinterest.ErrRateLimited) || errors.Is(err, pinterest.ErrUnavailable)
		ev := log.Warn()
		if ctx.Err() != nil {
			ev = log.Info()
		}
		ev.Err(err).Bool("round_paused", pause).Msg("reconciliation failed: listing the account's pins; nothing changed")
		return ResultFailed, 0, true, pause
	}

	if r.cfg.CountAll {
		n, err := r.observe(ctx, account, pins, window)
		if err != nil {
			log.Warn().Err(err).Msg("reconciliation failed: recording the pins made elsewhere")
			return ResultFailed, 0, true, false
		}
		observed = n
	}
	st, err := r.eng.Peek(ctx, account)
	if err != nil {
		log.Warn().Err(err).Msg("reconciliation failed: reading the account's count")
		return ResultFailed, observed, true, false
	}
	d := r.drift(account, pins, st, window)
	d.Observed = observed
	r.keep(d)
	r.report(log, d)
	return ResultReconciled, observed, true, false
}

// observe records, of pins, those made elsewhere that the token store
// does not remember and that still count, then remembers them. It
// returns how many it recorded.
func (r *Reconciler) observe(ctx context.Context, account string, pins []pinterest.Pin, window time.Duration) (int, error) {
	now := r.eng.Now()
	var ids []string
	byID := make(map[string]pinterest.Pin)
	for _, p := range pins {
		// A pin counts from its creation plus Skew: Pinterest's clock
		// behind the engine's by up to Skew frees no slot early.
		if p.Mark == "" && p.CreatedAt.Add(r.cfg.Skew).After(now.Add(-window)) {
			ids = append(ids, p.ID)
			byID[p.ID] = p
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	fresh, err := r.cfg.Links.Unobserved(ctx, account, ids)
	if err != nil || len(fresh) == 0 {
		return 0, err
	}
	times := make([]time.Time, len(fresh))
	marks := make([]links.ObservedPin, len(fresh))
	for i, id := range fresh {
		p := byID[id]
		times[i] = p.CreatedAt.Add(r.cfg.Skew)
		marks[i] = links.ObservedPin{ID: id, CreatedAt: p.CreatedAt, Until: p.CreatedAt.Add(window + r.cfg.Skew + RememberMargin)}
	}
	// The engine first, the token store second: a crash between the two
	// counts these pins again next round, twice, never less.
	if _, err := r.eng.Observe(ctx, account, times); err != nil {
		return 0, err
	}
	if err := r.cfg.Links.MarkObserved(ctx, account, marks, now); err != nil {
		r.log.Error().Err(err).Str("account", account).Int("pins", len(fresh)).
			Msg("remembering the pins made elsewhere failed: the next round counts them again")
	}
	return len(fresh), nil
}

// drift compares the pins Pinterest listed with st, the account's
// standing read after them.
func (r *Reconciler) drift(account string, pins []pinterest.Pin, st actors.Status, window time.Duration) Drift {
	now := st.At
	start := now.Add(-window)
	d := Drift{Account: account, At: now, Counted: st.Used - st.Pending, Pending: st.Pending, CountAll: r.cfg.CountAll}
	edge := 0 // pins within Skew of the window's start, of those counted in Pinterest
	for _, p := range pins {
		if !p.CreatedAt.After(start) {
			continue
		}
		if p.Mark == "" {
			d.Elsewhere++
			if !r.cfg.CountAll {
				continue
			}
		}
		d.Pinterest++
		if !p.CreatedAt.After(start.Add(r.cfg.Skew)) {
			edge++
		}
	}
	d.Drift = d.Pinterest - d.Counted
	if d.Drift <= 0 || d.Counted >= st.Limit {
		// pinbot counts at least as much, or refuses every slot anyway
		// (its window keeps the newest pins up to the limit).
		return d
	}
	// Pending reservations may have become pins; a pin near the window's
	// start may sit on either side of it. Without CountAll, the pins made
	// elsewhere explain the rest of what Pinterest holds: they are left
	// out of Pinterest's count, and reported apart.
	d.Unexplained = max(d.Drift-d.Pending-edge, 0)
	return d
}

// report logs d: a warning when Pinterest lists more than the rules
// explain.
func (r *Reconciler) report(log zerolog.Logger, d Drift) {
	if d.Unexplained > 0 {
		if r.cfg.Observer != nil {
			r.cfg.Observer.Unexplained()
		}
		log.Warn().Int("pinterest", d.Pinterest).Int("counted", d.Counted).Int("pending", d.Pending).
			Int("drift", d.Drift).Int("unexplained", d.Unexplained).Bool("count_all", r.cfg.CountAll).
			Msg("Pinterest lists more pins in the window than pinbot counts, beyond what its pending reservations and the clocks' skew explain")
		return
	}
	ev, msg := log.Debug(), "account reconciled"
	switch {
	case !r.cfg.CountAll && d.Elsewhere > 0:
		// The account holds more pins than pinbot counts, by design.
		ev, msg = log.Info(), "account reconciled: Pinterest lists pins made elsewhere, which pinbot does not count (PINBOT_COUNT_ALL_PINS is off)"
	case d.Drift > 0:
		ev, msg = log.Info(), "account reconciled: Pinterest lists more pins than pinbot counts, as its pending reservations and the clocks' skew explain"
	}
	ev.Int("pinterest", d.Pinterest).Int("counted", d.Counted).Int("pending", d.Pending).Int("drift", d.Drift).
		Int("elsewhere", d.Elsewhere).Bool("count_all", r.cfg.CountAll).Int("observed", d.Observed).Msg(msg)
}

// reached notes that account was reached by a round at the engine's now.
func (r *Reconciler) reached(account string) {
	now := r.eng.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last[account] = now
}

// keep stores d as the account's last drift.
func (r *Reconciler) keep(d Drift) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drifts[d.Account] = d
}

// prune forgets the drifts and the reaching times older than the window
// at now, then the oldest beyond maxDrifts.
func (r *Reconciler) prune(now time.Time, window time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cut := now.Add(-window)
	for a, d := range r.drifts {
		if !d.At.After(cut) {
			delete(r.drifts, a)
		}
	}
	for a, t := range r.last {
		if !t.After(cut) {
			delete(r.last, a)
		}
	}
	if over := len(r.last) - maxDrifts; over > 0 {
		type entry struct {
			account string
			at      time.Time
		}
		es := make([]entry, 0, len(r.last))
		for a, t := range r.last {
			es = append(es, entry{a, t})
		}
		slices.SortFunc(es, func(a, b entry) int { return a.at.Compare(b.at) })
		for _, e := range es[:over] {
			delete(r.last, e.account)
			delete(r.drifts, e.account)
		}
	}
}

// Drift returns account's drift at its last reconciliation within the
// window, and whether there is one.
func (r *Reconciler) Drift(account string) (Drift, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.drifts[account]
	return d, ok
}

// Drifts returns up to n of the drifts kept that are not zero, the
// largest in absolute value first (ties: the positive one, then by
// account).
func (r *Reconciler) Drifts(n int) []Drift {
	r.mu.Lock()
	out := make([]Drift, 0, len(r.drifts))
	for _, d := range r.drifts {
		if d.Drift != 0 {
			out = append(out, d)
		}
	}
	r.mu.Unlock()
	abs := func(x int) int { return max(x, -x) }
	slices.SortFunc(out, func(a, b Drift) int {
		return cmp.Or(cmp.Compare(abs(b.Drift), abs(a.Drift)), cmp.Compare(b.Drift, a.Drift), cmp.Compare(a.Account, b.Account))
	})
	return out[:min(len(out), n)]
}

// Summary sums up the drifts kept.
func (r *Reconciler) Summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s Summary
	for _, d := range r.drifts {
		switch {
		case d.Drift > 0:
			s.Positive++
			s.Largest = max(s.Largest, d.Drift)
		case d.Drift < 0:
			s.Negative++
			s.Smallest = min(s.Smallest, d.Drift)
		}
	}
	return s
}
