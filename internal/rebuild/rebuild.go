package rebuild

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/internal/reconcile"
)

// Defaults of Config.
const (
	// DefaultSlotMargin is how long after a request ended Pinterest is
	// assumed to have acted on it, at most: the bot's default SlotMargin.
	DefaultSlotMargin = bot.DefaultSlotMargin
	// DefaultListingLag is how long after Pinterest made a pin its
	// listing is assumed to show it, at most: the bot's default
	// ListingLag.
	DefaultListingLag = bot.DefaultListingLag
	// DefaultSkew is how far Pinterest's clock may lag the engine's, as
	// the reconciliation assumes.
	DefaultSkew = reconcile.DefaultSkew
	// DefaultRetryEvery is the interval between rounds while some
	// linked account is still held.
	DefaultRetryEvery = 5 * time.Minute
	// listTimeout bounds one account's listing, its retries included.
	listTimeout = 2 * time.Minute
)

// Config configures a Rebuilder.
type Config struct {
	// Engine is the rate-limit engine: its holds say whether there is
	// anything to rebuild, its clock is the Rebuilder's, and Rebuild
	// rebuilds each account. Required.
	Engine *actors.Engine
	// Links is the token store: the linked accounts and their tokens,
	// and, with CountAll, the pins made elsewhere it remembers. Required.
	Links links.Store
	// Pinterest lists the accounts' pins. Required.
	Pinterest *pinterest.Client
	// Session returns the Session to list account's pins with; nil means
	// reconcile.ReadOnlySessions over Links, which never refresh a token
	// (only the bot's own Session of an account may).
	Session func(ctx context.Context, account string) (*pinterest.Session, error)
	// CountAll rebuilds the window from every pin the account made, those
	// made outside pinbot included (PINBOT_COUNT_ALL_PINS); off, from
	// pinbot's own (those with its mark).
	CountAll bool
	// SlotMargin is how long after a request ended Pinterest may still
	// act on it, and ListingLag how long after it made a pin its listing
	// may still lack it (the bot's settings of the same names); 0 means
	// their defaults. The first round starts their sum after the
	// restore.
	SlotMargin, ListingLag time.Duration
	// Skew bounds how far Pinterest's clock may lag the engine's: the
	// listing reaches that much further back, and each pin counts from
	// its creation plus it. 0 means DefaultSkew.
	Skew time.Duration
	// RetryEvery is the interval between rounds while some account is
	// held; 0 means DefaultRetryEvery.
	RetryEvery time.Duration
	// MaxPages bounds the pages of one listing (a listing that needs
	// more fails); 0 means the client's pinterest.Config.MaxPinPages.
	MaxPages int
	// OnRound, when not nil, learns what each round did.
	OnRound func(Report)
	// Log receives a line per account rebuilt, a warning per account
	// that stays held, and a line per round; tagged component=rebuild.
	Log zerolog.Logger
}

// Validate reports the first problem with c, naming the field.
func (c Config) Validate() error {
	switch {
	case c.Engine == nil:
		return errors.New("rebuild: Config.Engine is nil")
	case c.Links == nil:
		return errors.New("rebuild: Config.Links is nil")
	case c.Pinterest == nil:
		return errors.New("rebuild: Config.Pinterest is nil")
	case c.SlotMargin < 0:
		return fmt.Errorf("rebuild: Config.SlotMargin %v is negative", c.SlotMargin)
	case c.ListingLag < 0:
		return fmt.Errorf("rebuild: Config.ListingLag %v is negative", c.ListingLag)
	case c.Skew < 0:
		return fmt.Errorf("rebuild: Config.Skew %v is negative", c.Skew)
	case c.RetryEvery < 0:
		return fmt.Errorf("rebuild: Config.RetryEvery %v is negative", c.RetryEvery)
	case c.MaxPages < 0:
		return fmt.Errorf("rebuild: Config.MaxPages %d is negative", c.MaxPages)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.SlotMargin == 0 {
		c.SlotMargin = DefaultSlotMargin
	}
	if c.ListingLag == 0 {
		c.ListingLag = DefaultListingLag
	}
	if c.Skew == 0 {
		c.Skew = DefaultSkew
	}
	if c.RetryEvery == 0 {
		c.RetryEvery = DefaultRetryEvery
	}
	return c
}

// Held is a linked account that stays held after a restore: its pins on
// Pinterest could not be listed.
type Held struct {
	Account string
	// Username is the account's Pinterest username at its last link.
	Username string
	// Reason says why it could not be read.
	Reason string
	// Since is when it first could not be read, Retry when it is tried
	// again, Until when the hold ends for it all the same (engine time).
	Since, Retry, Until time.Time
}

// Report says what one round did.
type Report struct {
	// Rebuilt is how many accounts were rebuilt, Held how many could not
	// be read and stay held, Left how many the round did not reach
	// (Paused: Pinterest rate limited the listings or was not
	// answering).
	Rebuilt, Held, Left int
	Paused              bool
	// Done says that no linked account awaits a rebuild any more, or
	// that no hold a rebuild lifts is in force.
	Done bool
}

// Rebuilder rebuilds the linked accounts' windows after a restore (see
// the package documentation). It is safe for simultaneous use.
type Rebuilder struct {
	cfg     Config
	eng     *actors.Engine
	session func(context.Context, string) (*pinterest.Session, error)
	log     zerolog.Logger

	round sync.Mutex // one round at a time

	mu   sync.Mutex
	held map[string]Held
	// done are the accounts rebuilt, or found bound by no hold a rebuild
	// lifts: later rounds skip them.
	done map[string]bool
}

// New returns a Rebuilder for cfg, after validating it.
func New(cfg Config) (*Rebuilder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	r := &Rebuilder{
		cfg:     cfg,
		eng:     cfg.Engine,
		session: cfg.Session,
		log:     cfg.Log.With().Str("component", "rebuild").Logger(),
		held:    make(map[string]Held),
		done:    make(map[string]bool),
	}
	if r.session == nil {
		r.session = reconcile.NewReadOnlySessions(cfg.Links, cfg.Engine.Now, reconcile.DefaultTokenMargin).Session
	}
	return r, nil
}

// hold sums up the engine's holds that a rebuild lifts: the latest
// start, the latest end, the widest window; ok false when there is none.
type hold struct {
	from, until time.Time
	window      time.Duration
}

func (r *Rebuilder) hold() (h hold, ok bool) {
	for _, x := range r.eng.Holds() {
		ok = true
		if x.From.After(h.from) {
			h.from = x.From
		}
		if x.Until.After(h.until) {
			h.until = x.Until
		}
		h.window = max(h.window, x.Window)
	}
	h.window = max(h.window, r.eng.Config().Window)
	return h, ok
}

// Start returns the instant of the first round, and false when no hold a
// rebuild lifts is in force: the restore's instant plus SlotMargin and
// ListingLag, by which every pin of the runs before it is listed.
func (r *Rebuilder) Start() (time.Time, bool) {
	h, ok := r.hold()
	return h.from.Add(r.cfg.SlotMargin + r.cfg.ListingLag), ok
}

// Run does nothing unless a restore's hold that a rebuild lifts is in
// force. Then it runs a round at Start, and another every RetryEvery, by
// the engine's clock, until the hold ends (each taking the accounts
// still held and those linked since) or ctx does.
func (r *Rebuilder) Run(ctx context.Context) {
	start, ok := r.Start()
	if !ok {
		return
	}
	h, _ := r.hold()
	r.log.Info().Time("hold_from", h.from).Time("hold_until", h.until).Time("first_round", start).
		Msg("a restore's hold is in force: each linked account's window is rebuilt from Pinterest's listing once every pin made before the restore must be listed")
	at := start
	for {
		if err := r.eng.SleepUntil(ctx, at); err != nil {
			return
		}
		r.Round(ctx)
		if ctx.Err() != nil {
			return
		}
		h, ok := r.hold()
		if !ok {
			r.log.Info().Msg("the restore's hold has ended: every account counts by its own window again")
			return
		}
		at = r.eng.Now().Add(r.cfg.RetryEvery)
		if at.After(h.until) {
			at = h.until
		}
	}
}

// Round runs one round now, waiting first for Start if it is later, and
// reports what it did; rounds never overlap. Each linked account that a
// restore's hold binds is listed and rebuilt, or named as held.
func (r *Rebuilder) Round(ctx context.Context) Report {
	r.round.Lock()
	defer r.round.Unlock()
	rep := r.runRound(ctx)
	if r.cfg.OnRound != nil {
		r.cfg.OnRound(rep)
	}
	ev := r.log.Info()
	if rep.Rebuilt == 0 && rep.Held == 0 && rep.Left == 0 {
		ev = r.log.Debug()
	}
	ev.Int("rebuilt", rep.Rebuilt).Int("held", rep.Held).Int("left", rep.Left).Bool("paused", rep.Paused).
		Bool("done", rep.Done).Msg("rebuild round after a restore")
	return rep
}

func (r *Rebuilder) runRound(ctx context.Context) Report {
	h, ok := r.hold()
	if !ok {
		r.forget(nil)
		return Report{Done: true}
	}
	start := h.from.Add(r.cfg.SlotMargin + r.cfg.ListingLag)
	if err := r.eng.SleepUntil(ctx, start); err != nil {
		return Report{}
	}
	var accts []links.Account
	linked := make(map[string]bool)
	if err := r.cfg.Links.AllAccounts(ctx, func(a links.Account) error {
		linked[a.ID] = true
		if !r.isDone(a.ID) {
			accts = append(accts, a)
		}
		return nil
	}); err != nil {
		r.log.Warn().Err(err).Msg("rebuild round: the linked accounts cannot be read; trying again later")
		return Report{}
	}
	r.forget(linked)

	var rep Report
	for i, a := range accts {
		if ctx.Err() != nil {
			rep.Left = len(accts) - i
			return rep
		}
		if r.cfg.Pinterest.BreakerState() == "open" {
			r.log.Info().Msg("rebuild round paused: Pinterest is not answering (circuit open)")
			rep.Left, rep.Paused = len(accts)-i, true
			break
		}
		done, pause := r.account(ctx, a, h)
		switch {
		case done:
			rep.Rebuilt++
		case !r.isHeld(a.ID):
			// Nothing to rebuild: not held, or unlinked meanwhile.
		default:
			rep.Held++
		}
		if pause {
			rep.Left, rep.Paused = len(accts)-i-1, true
			break
		}
	}
	rep.Done = rep.Held == 0 && rep.Left == 0
	return rep
}

// account rebuilds one linked account, or records why it stays held. It
// reports whether it rebuilt it, and whether the round must stop
// (Pinterest rate limits the listings or is not answering).
func (r *Rebuilder) account(ctx context.Context, a links.Account, h hold) (done, pause bool) {
	log := r.log.With().Str("account", a.ID).Str("username", a.Username).Logger()
	awaits, err := r.eng.AwaitsRebuild(ctx, a.ID)
	switch {
	case errors.Is(err, actors.ErrNotOwner):
		// Served by another member of a cluster, whose rebuild takes it.
		r.release(a.ID, false)
		return false, false
	case err != nil:
		r.keepHeld(log, a, h, "its count cannot be read: "+err.Error())
		return false, false
	case !awaits:
		r.release(a.ID, true)
		return false, false
	case a.RelinkNeeded:
		r.keepHeld(log, a, h, "it needs a new link: Pinterest refused its grant")
		return false, false
	}
	sess, err := r.session(ctx, a.ID)
	switch {
	case errors.Is(err, links.ErrNoToken):
		r.release(a.ID, false) // unlinked meanwhile
		return false, false
	case errors.Is(err, reconcile.ErrTokenDue):
		r.keepHeld(log, a, h, "its access token is due for renewal, which only the bot's own use of the account makes")
		return false, false
	case err != nil:
		r.keepHeld(log, a, h, "no session to list its pins with: "+err.Error())
		return false, false
	}
	began := r.eng.Now()
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	pins, err := r.cfg.Pinterest.ListPins(lctx, sess, pinterest.ListOptions{Since: began.Add(-h.window - r.cfg.Skew), MaxPages: r.cfg.MaxPages})
	cancel()
	switch {
	case errors.Is(err, pinterest.ErrReauthRequired):
		r.keepHeld(log, a, h, "Pinterest refused its access token (revoked, or replaced since the backup): "+err.Error())
		return false, false
	case err != nil:
		if ctx.Err() != nil {
			return false, false
		}
		pause = errors.Is(err, pinterest.ErrRateLimited) || errors.Is(err, pinterest.ErrUnavailable)
		r.keepHeld(log, a, h, "listing its pins failed: "+err.Error())
		return false, pause
	}
	l := actors.Listing{Began: began, Settle: r.cfg.SlotMargin + r.cfg.ListingLag, Skew: r.cfg.Skew}
	var elsewhere []links.ObservedPin
	cut := began.Add(-h.window)
	for _, p := range pins {
		if p.Mark == "" {
			if !r.cfg.CountAll {
				continue
			}
			if p.CreatedAt.Add(r.cfg.Skew).After(cut) {
				elsewhere = append(elsewhere, links.ObservedPin{ID: p.ID, CreatedAt: p.CreatedAt,
					Until: p.CreatedAt.Add(h.window + r.cfg.Skew + reconcile.RememberMargin)})
			}
		}
		l.Pins = append(l.Pins, p.CreatedAt)
	}
	res, err := r.eng.Rebuild(ctx, a.ID, l)
	if err != nil {
		r.keepHeld(log, a, h, "rebuilding its window failed: "+err.Error())
		return false, false
	}
	r.release(a.ID, true)
	if !res.Rebuilt {
		return false, false
	}
	if len(elsewhere) > 0 {
		// Counted now: the reconciliation must not count them again.
		// The engine first, the token store second: a failure here
		// counts them twice, never less.
		if err := r.cfg.Links.MarkObserved(ctx, a.ID, elsewhere, r.eng.Now()); err != nil {
			log.Error().Err(err).Int("pins", len(elsewhere)).
				Msg("remembering the pins made elsewhere failed: the next reconciliation counts them again")
		}
	}
	st := res.Status
	log.Info().Int("listed", res.Listed).Int("kept", res.Kept).Int("used", st.Used).Int("free", st.Free()).
		Time("next_free", st.NextFree).Msg("account rebuilt from Pinterest's listing: the restore's hold no longer applies to it")
	return true, false
}

// keepHeld records that account a stays held for reason: a warning the
// first time, or when the reason changes.
func (r *Rebuilder) keepHeld(log zerolog.Logger, a links.Account, h hold, reason string) {
	now := r.eng.Now()
	retry := now.Add(r.cfg.RetryEvery)
	if retry.After(h.until) {
		retry = h.until
	}
	r.mu.Lock()
	old, was := r.held[a.ID]
	since := now
	if was {
		since = old.Since
	}
	r.held[a.ID] = Held{Account: a.ID, Username: a.Username, Reason: reason, Since: since, Retry: retry, Until: h.until}
	r.mu.Unlock()
	ev := log.Warn()
	if was && old.Reason == reason {
		ev = log.Debug()
	}
	ev.Str("reason", reason).Time("retry", retry).Time("hold_until", h.until).
		Msg("account stays held after the restore: its pins on Pinterest could not be listed")
}

// release forgets account's entry among the held, and with done notes
// that no round needs to look at it again.
func (r *Rebuilder) release(account string, done bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.held, account)
	if done {
		r.done[account] = true
	}
}

// isDone reports whether account needs no rebuild any more.
func (r *Rebuilder) isDone(account string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done[account]
}

// isHeld reports whether account is among the held.
func (r *Rebuilder) isHeld(account string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.held[account]
	return ok
}

// forget drops the held and done accounts that linked does not name
// (all of them when linked is nil): an account linked again later is
// looked at again.
func (r *Rebuilder) forget(linked map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for a := range r.held {
		if !linked[a] {
			delete(r.held, a)
		}
	}
	for a := range r.done {
		if !linked[a] {
			delete(r.done, a)
		}
	}
}

// Held returns the linked accounts that stay held because their pins
// could not be listed, by account ID; none once the hold has ended.
func (r *Rebuilder) Held() []Held {
	now := r.eng.Now()
	r.mu.Lock()
	out := make([]Held, 0, len(r.held))
	for _, h := range r.held {
		if h.Until.After(now) {
			out = append(out, h)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Held) int { return cmp.Compare(a.Account, b.Account) })
	return out
}
