package metrics_test

import (
	"slices"
	"testing"

	"github.com/pinbot/pinbot/internal/metrics"
	"github.com/pinbot/pinbot/internal/metrics/metricstest"
	"github.com/pinbot/pinbot/internal/reconcile"
)

// TestReconcileLabelsMatch: the label values are the reconciler's own.
func TestReconcileLabelsMatch(t *testing.T) {
	if !slices.Equal(metrics.ReconcileResults, reconcile.Results) {
		t.Errorf("ReconcileResults %v, reconcile.Results %v", metrics.ReconcileResults, reconcile.Results)
	}
	if !slices.Equal(metrics.ReconcileEnds, reconcile.RoundEnds) {
		t.Errorf("ReconcileEnds %v, reconcile.RoundEnds %v", metrics.ReconcileEnds, reconcile.RoundEnds)
	}
}

// TestReconcileMetrics: the observer counts accounts by result, rounds by
// end, pins observed and unexplained drifts; the drift gauges read the
// summary at each scrape, 0 before one is watched; a value outside the
// lists counts as other.
func TestReconcileMetrics(t *testing.T) {
	m := metrics.New()
	var _ reconcile.Observer = m.Reconcile()
	s := metricstest.ScrapeHandler(t, m.Handler())
	for _, r := range metrics.ReconcileResults {
		if v, ok := s.Lookup("pinbot_reconcile_accounts_total", "result", r); !ok || v != 0 {
			t.Errorf("pinbot_reconcile_accounts_total{result=%q} = %v, %v; want 0, served", r, v, ok)
		}
	}
	if v, ok := s.Lookup("pinbot_reconcile_drift_accounts", "sign", "positive"); !ok || v != 0 {
		t.Errorf("drift accounts before a summary = %v, %v", v, ok)
	}

	o := m.Reconcile()
	o.Reconciled("reconciled")
	o.Reconciled("reconciled")
	o.Reconciled("skipped")
	o.Reconciled("bogus")
	o.Round("paused")
	o.Observed(3)
	o.Observed(2)
	o.Unexplained()
	m.WatchDrift(func() metrics.DriftSummary {
		return metrics.DriftSummary{Positive: 2, Negative: 1, Largest: 7, Smallest: -3}
	})
	s = metricstest.ScrapeHandler(t, m.Handler())
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"pinbot_reconcile_accounts_total", []string{"result", "reconciled"}, 2},
		{"pinbot_reconcile_accounts_total", []string{"result", "skipped"}, 1},
		{"pinbot_reconcile_accounts_total", []string{"result", "other"}, 1},
		{"pinbot_reconcile_rounds_total", []string{"end", "paused"}, 1},
		{"pinbot_reconcile_observed_pins_total", nil, 5},
		{"pinbot_reconcile_unexplained_total", nil, 1},
		{"pinbot_reconcile_drift_accounts", []string{"sign", "positive"}, 2},
		{"pinbot_reconcile_drift_accounts", []string{"sign", "negative"}, 1},
		{"pinbot_reconcile_drift_max_pins", nil, 7},
		{"pinbot_reconcile_drift_min_pins", nil, -3},
	} {
		if got := s.Get(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}
