package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The values of the reconciler's labels (package internal/reconcile's
// Results and RoundEnds, which this package's tests check against them).
var (
	// ReconcileResults are the values of pinbot_reconcile_accounts_total's
	// result label: reconciled (listed, drift measured), failed (the
	// listing or what follows it failed; nothing changed), skipped (not
	// linked, needing a new link, or its token due for renewal).
	ReconcileResults = []string{"reconciled", "failed", "skipped"}
	// ReconcileEnds are the values of pinbot_reconcile_rounds_total's
	// end label: complete, bounded (PINBOT_RECONCILE_EVERY's round
	// reached its bound on accounts), paused (Pinterest rate limited the
	// listings or was not answering), failed.
	ReconcileEnds = []string{"complete", "bounded", "paused", "failed"}
)

// DriftSummary is what the drift gauges show: how many accounts
// Pinterest lists more pins for than pinbot counts (Positive), and fewer
// (Negative), at their last reconciliation, the largest positive drift
// and the most negative one (0 when none).
type DriftSummary struct {
	Positive, Negative int
	Largest, Smallest  int
}

// ReconcileObserver receives the reconciler's reports: it is the
// reconcile.Observer to set as reconcile.Config.Observer (see
// Metrics.Reconcile). Its methods are reconcile.Observer's, written out
// here so that this package does not depend on the reconciler. It is safe
// for simultaneous use.
type ReconcileObserver struct {
	results     map[string]prometheus.Counter
	ends        map[string]prometheus.Counter
	observed    prometheus.Counter
	unexplained prometheus.Counter
}

func (m *Metrics) initReconcile() {
	o := &m.reconcile
	results := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_reconcile_accounts_total",
		Help: "Accounts a reconciliation round reached, by result: reconciled (Pinterest's listing read, drift measured), failed (nothing changed), skipped (not linked, needing a new link, or its access token due for renewal).",
	}, []string{"result"})
	ends := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_reconcile_rounds_total",
		Help: "Reconciliation rounds, by how they ended: complete, bounded (the bound on accounts per round), paused (Pinterest rate limited the listings or was not answering), failed.",
	}, []string{"end"})
	o.observed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "pinbot_reconcile_observed_pins_total",
		Help: "Pins made outside pinbot that reconciliations counted against their accounts' limits (PINBOT_COUNT_ALL_PINS).",
	})
	o.unexplained = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "pinbot_reconcile_unexplained_total",
		Help: "Reconciliations in which Pinterest listed more pins in the window than pinbot counts, beyond what pending reservations and the clocks' skew explain.",
	})
	m.reg.MustRegister(results, ends, o.observed, o.unexplained)
	o.results = children(results, ReconcileResults)
	o.ends = children(ends, ReconcileEnds)

	gauge := func(name, help string, labels prometheus.Labels, read func(DriftSummary) int) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, func() float64 {
			if f := m.drift.Load(); f != nil {
				return float64(read((*f)()))
			}
			return 0
		}))
	}
	const accountsHelp = "Accounts whose last reconciliation, within the window, found Pinterest listing more pins than pinbot counts (sign positive) or fewer (negative)."
	gauge("pinbot_reconcile_drift_accounts", accountsHelp, prometheus.Labels{"sign": "positive"}, func(s DriftSummary) int { return s.Positive })
	gauge("pinbot_reconcile_drift_accounts", accountsHelp, prometheus.Labels{"sign": "negative"}, func(s DriftSummary) int { return s.Negative })
	gauge("pinbot_reconcile_drift_max_pins", "The largest drift among the accounts' last reconciliations: pins Pinterest lists in the window beyond pinbot's count (0 when none does).",
		nil, func(s DriftSummary) int { return s.Largest })
	gauge("pinbot_reconcile_drift_min_pins", "The most negative drift among the accounts' last reconciliations: pinbot's count beyond what Pinterest lists, negated (0 when none).",
		nil, func(s DriftSummary) int { return s.Smallest })
}

// Reconcile returns the observer to set as reconcile.Config.Observer.
func (m *Metrics) Reconcile() *ReconcileObserver { return &m.reconcile }

// WatchDrift has the drift gauges call summary at each scrape
// (reconcile.Reconciler.Summary, converted). It must not block.
func (m *Metrics) WatchDrift(summary func() DriftSummary) { m.drift.Store(&summary) }

// Reconciled counts one account a round reached, by result.
func (o *ReconcileObserver) Reconciled(result string) { inc(o.results, result) }

// Round counts a round by how it ended.
func (o *ReconcileObserver) Round(end string) { inc(o.ends, end) }

// Observed counts pins made elsewhere that a round counted.
func (o *ReconcileObserver) Observed(pins int) { o.observed.Add(float64(pins)) }

// Unexplained counts a drift the rules do not explain.
func (o *ReconcileObserver) Unexplained() { o.unexplained.Inc() }

// inc increments the child of value, or other's.
func inc(cs map[string]prometheus.Counter, value string) {
	c, ok := cs[value]
	if !ok {
		c = cs[other]
	}
	c.Inc()
}
