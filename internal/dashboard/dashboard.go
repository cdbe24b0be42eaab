package dashboard

import (
	"github.com/pinbot/pinbot/internal/logctx"

	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/persistence"
)

// Defaults of Config.
const (
	// DefaultTTL is how long one assembly of the data serves every view:
	// a survey costs up to DefaultMaxAccounts status reads.
	DefaultTTL = 10 * time.Second
	// DefaultTop is how many accounts each list shows.
	DefaultTop = 10
	// DefaultMaxAccounts bounds the accounts one survey examines.
	DefaultMaxAccounts = actors.DefaultSurveyMax
	// SurveyTimeout bounds one survey.
	SurveyTimeout = 10 * time.Second
)

// Config configures a Dashboard.
type Config struct {
	// Token is what requests must carry as "Authorization: Bearer
	// <token>". Required: without a token there is no dashboard.
	Token []byte
	// Engine is surveyed for the accounts, the queue and the timeline.
	// Required.
	Engine *actors.Engine
	// Gatherer gives the metric families read by name (see the Metric
	// constants); nil shows "no data" for each.
	Gatherer prometheus.Gatherer
	// Names, when not nil, names each account shown: its Pinterest
	// username and the Discord users who linked it (the token store,
	// package bot/links); a zero Name for an account nobody links. An
	// account it fails on shows its ID alone, and the failure is logged.
	// Nil: every account shows its ID alone.
	Names func(ctx context.Context, account string) (Name, error)
	// Rules, when not nil, gives the rules the engine enforces (its
	// store's): the page names the earlier ones still in force, which
	// hold slots the current limit leaves free.
	Rules RuleReader
	// Drift, when not nil, gives what the reconciler last found of each
	// account (package internal/reconcile): the accounts lists show its
	// drift as a column, and the page lists the largest drifts. Nil: no
	// drift is shown.
	Drift DriftReader
	// Held, when not nil, gives the linked accounts that stay held after
	// a restore because Pinterest's listing of their pins could not be
	// read (package internal/rebuild): the page names each, with why.
	Held HeldReader
	// TTL is how long one assembly of the data is shown to every request
	// (0: DefaultTTL); Top how many accounts each list shows (0:
	// DefaultTop); MaxAccounts how many accounts one survey examines at
	// most (0: DefaultMaxAccounts).
	TTL         time.Duration
	Top         int
	MaxAccounts int
	// Now is the wall clock; default time.Now. Its readings are only
	// compared with one another, so time.Now's monotonic readings keep
	// the recent windows right across a step of the wall clock.
	Now func() time.Time
	// Started is when the gatherer's counters were all zero, the
	// process's start: a recent window longer than the process's life
	// counts from there. Zero: when New is called.
	Started time.Time
	// Log receives the failures to read the engine or the metrics,
	// tagged component=dashboard.
	Log zerolog.Logger
}

// Name is what the dashboard shows of an account besides its ID.
type Name struct {
	// Username is the account's Pinterest username.
	Username string
	// LinkedBy are the ids of the Discord users who linked it, in the
	// order they linked it.
	LinkedBy []string
}

// RuleReader reads the rules the engine enforces, as the engine's store
// keeps them (persistence.RuleKeeper).
type RuleReader interface {
	Rules(ctx context.Context) (persistence.Rules, error)
}

// Validate reports the first problem with c, naming the field.
func (c Config) Validate() error {
	switch {
	case len(c.Token) == 0:
		return errors.New("dashboard: Config.Token is empty")
	case c.Engine == nil:
		return errors.New("dashboard: Config.Engine is nil")
	case c.TTL < 0:
		return fmt.Errorf("dashboard: Config.TTL %v is negative", c.TTL)
	case c.Top < 0:
		return fmt.Errorf("dashboard: Config.Top %d is negative", c.Top)
	case c.MaxAccounts < 0:
		return fmt.Errorf("dashboard: Config.MaxAccounts %d is negative", c.MaxAccounts)
	}
	return nil
}

// Dashboard serves the operator dashboard under /admin (see the package
// documentation). It is safe for simultaneous use by multiple
// goroutines.
type Dashboard struct {
	tokenSum [sha256.Size]byte
	eng      *actors.Engine
	gatherer prometheus.Gatherer
	names    func(context.Context, string) (Name, error)
	rules    RuleReader
	drift    DriftReader
	// heldReader is Config.Held.
	heldReader HeldReader
	ttl        time.Duration
	top, max   int
	now        func() time.Time
	log        zerolog.Logger

	// mu serializes assemblies: requests during one wait for it and
	// share its result.
	mu       sync.Mutex
	cached   *Data
	cachedAt time.Time

	// hmu guards hist, the snapshots of the counters that the recent
	// windows count from, apart from mu so that Sample does not wait for
	// a survey.
	hmu  sync.Mutex
	hist history
}

// New returns a Dashboard for cfg, after validating it.
func New(cfg Config) (*Dashboard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Dashboard{
		tokenSum:   sha256.Sum256(cfg.Token),
		eng:        cfg.Engine,
		gatherer:   cfg.Gatherer,
		names:      cfg.Names,
		rules:      cfg.Rules,
		drift:      cfg.Drift,
		heldReader: cfg.Held,
		ttl:        cfg.TTL,
		top:        cfg.Top,
		max:        cfg.MaxAccounts,
		now:        cfg.Now,
		log:        cfg.Log.With().Str("component", "dashboard").Logger(),
	}
	if d.ttl == 0 {
		d.ttl = DefaultTTL
	}
	if d.top == 0 {
		d.top = DefaultTop
	}
	if d.max == 0 {
		d.max = DefaultMaxAccounts
	}
	if d.now == nil {
		d.now = time.Now
	}
	d.hist = history{started: cfg.Started, every: SampleEvery, keep: Windows[len(Windows)-1]}
	if d.hist.started.IsZero() {
		d.hist.started = d.now()
	}
	return d, nil
}

// Data returns the dashboard's data, assembled at most once per TTL:
// every view within a TTL of an assembly shows it.
func (d *Dashboard) Data(ctx context.Context) *Data {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if d.cached != nil && now.Sub(d.cachedAt) < d.ttl && !now.Before(d.cachedAt) {
		return d.cached
	}
	d.cached, d.cachedAt = d.assemble(ctx), now
	return d.cached
}

// assemble surveys the engine and reads the metrics.
func (d *Dashboard) assemble(ctx context.Context) *Data {
	sctx, cancel := context.WithTimeout(ctx, SurveyTimeout)
	defer cancel()
	s, serr := d.eng.Survey(sctx, actors.SurveyOptions{Top: d.top, Max: d.max, Bucket: bucketFor(d.eng.Config().Window)})
	if serr != nil {
		logctx.Logger(ctx, d.log).Warn().Err(serr).Msg("surveying the engine failed")
	}
	m, problems := d.gatherMetrics()
	data := assemble(s, serr, m, problems, d.now())
	if serr == nil {
		data.Earlier = d.earlierRules(ctx, s.At)
		d.drifts(data)
		d.held(data)
		d.name(sctx, data)
	}
	return data
}

// name sets the names of the accounts data shows. It logs the accounts
// it fails on, and the page says some names are missing.
func (d *Dashboard) name(ctx context.Context, data *Data) {
	if d.names == nil {
		return
	}
	known := map[string]Name{}
	failed := 0
	nameOf := func(account string) Name {
		n, ok := known[account]
		if !ok {
			var err error
			if n, err = d.names(ctx, account); err != nil {
				failed++
				logctx.Logger(ctx, d.log).Warn().Err(err).Str("account", account).Msg("naming an account failed")
			}
			known[account] = n
		}
		return n
	}
	for _, list := range [][]Account{data.Busiest, data.Queue} {
		for i := range list {
			a := &list[i]
			n := nameOf(a.Account)
			a.Username, a.LinkedBy = n.Username, n.LinkedBy
		}
	}
	for i := range data.Drifted {
		a := &data.Drifted[i]
		n := nameOf(a.Account)
		a.Username, a.LinkedBy = n.Username, n.LinkedBy
	}
	for i := range data.Held {
		a := &data.Held[i]
		n := nameOf(a.Account)
		if n.Username != "" {
			a.Username = n.Username
		}
		a.LinkedBy = n.LinkedBy
	}
	if failed > 0 {
		data.Problems = append(data.Problems, "Some accounts show their ID alone: their names could not be read (see the log).")
	}
}

// earlierRules returns the earlier rules in force at at, ending first
// first; none without Config.Rules, or when they cannot be read (logged).
func (d *Dashboard) earlierRules(ctx context.Context, at time.Time) []Rule {
	if d.rules == nil {
		return nil
	}
	rs, err := d.rules.Rules(ctx)
	if err != nil {
		logctx.Logger(ctx, d.log).Warn().Err(err).Msg("reading the rules in force failed")
		return nil
	}
	var out []Rule
	for _, r := range rs.Earlier {
		if until := time.UnixMilli(r.Until); until.After(at) {
			rule := Rule{Limit: r.Limit, Window: time.Duration(r.Window) * time.Millisecond, Until: until}
			if r.From != 0 {
				rule.From = time.UnixMilli(r.From)
			}
			out = append(out, rule)
		}
	}
	slices.SortFunc(out, func(a, b Rule) int { return a.Until.Compare(b.Until) })
	return out
}

// gatherMetrics reads the metrics: the totals, and the recent windows
// from the history of the counters, which the reading joins when a
// snapshot is due. Without a gatherer it returns no metrics.
func (d *Dashboard) gatherMetrics() (m Metrics, problems []string) {
	if d.gatherer == nil {
		return m, nil
	}
	d.hmu.Lock()
	defer d.hmu.Unlock()
	now := d.now()
	fams, err := d.gatherer.Gather()
	if err != nil {
		// Gather returns what it could along with the error.
		d.log.Warn().Err(err).Msg("gathering the metrics failed")
		problems = append(problems, "Some metrics could not be gathered (see the log).")
	}
	m, cur := readTotals(fams)
	if err == nil {
		// A family missing from a failed gather would read as zeros in a
		// snapshot, and its windows would count from zero.
		d.hist.record(now, cur)
	}
	for _, length := range Windows {
		base, fromStart := d.hist.base(now, length)
		m.Windows = append(m.Windows, newWindow(length, now, cur, base, fromStart))
	}
	return m, problems
}

// Sample keeps a snapshot of the counters for the recent windows when
// one is due (SampleEvery after the last, which an assembly may have
// taken), so that they are right when the page is opened after nobody
// looked. It gathers only then: at most once per SampleEvery. It is a
// no-op without a gatherer.
func (d *Dashboard) Sample() {
	if d.gatherer == nil {
		return
	}
	d.hmu.Lock()
	defer d.hmu.Unlock()
	now := d.now()
	if !d.hist.due(now) {
		return
	}
	fams, err := d.gatherer.Gather()
	if err != nil {
		d.log.Warn().Err(err).Msg("gathering the metrics failed")
		return
	}
	_, cur := readTotals(fams)
	d.hist.record(now, cur)
}

// Run calls Sample at each tick until ctx ends; give it a ticker's
// channel of period SampleEvery.
func (d *Dashboard) Run(ctx context.Context, ticks <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			d.Sample()
		}
	}
}

// niceBuckets are the widths the timeline's buckets may take.
var niceBuckets = []time.Duration{
	time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// bucketFor returns the timeline's bucket width for a window: the
// smallest round width that cuts it into at most 48 bars (15 minutes for
// 12 hours).
func bucketFor(window time.Duration) time.Duration {
	for _, b := range niceBuckets {
		if window/b <= 48 {
			return b
		}
	}
	return niceBuckets[len(niceBuckets)-1]
}
