package dashboard

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pinbot/pinbot/internal/metrics"
)

func gather(t *testing.T, reg *prometheus.Registry) Metrics {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return readMetrics(fams)
}

// TestMetricsAbsent: with none of the families, each part is "no data",
// not an error; unrelated families are ignored.
func TestMetricsAbsent(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "other_total", Help: "x"}))
	// A vector with no series yet is absent from Gather.
	reg.MustRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPinFailures, Help: "x"}, []string{"reason"}))
	m := gather(t, reg)
	if m.Pins.Present || m.Failures.Present || m.UpstreamsPresent || m.Shards != nil || m.Upstreams != nil {
		t.Fatalf("metrics from an empty registry: %+v", m)
	}
	if m := readMetrics(nil); m.Pins.Present || m.Shards != nil {
		t.Fatalf("metrics of nothing: %+v", m)
	}
}

// TestMetricsRead: the fixture's registry, read by name.
func TestMetricsRead(t *testing.T) {
	reg := prometheus.NewRegistry()
	setTestMetrics(t, reg)
	m := gather(t, reg)
	if !m.Pins.Present || m.Pins.Total != 1251 || m.Pins.Items[0] != (Count{"ok", 1234}) {
		t.Errorf("pins %+v", m.Pins)
	}
	want := []Count{{"invalid_image", 9}, {"timeout", 5}, {"rate_limited", 3}}
	if len(m.Failures.Items) != 3 || m.Failures.Total != 17 {
		t.Fatalf("failures %+v", m.Failures)
	}
	for i, c := range want {
		if m.Failures.Items[i] != c {
			t.Errorf("failure %d: %+v want %+v", i, m.Failures.Items[i], c)
		}
	}
	if m.Shards == nil || *m.Shards != 3 {
		t.Errorf("shards %v", m.Shards)
	}
	if len(m.Upstreams) != 2 || m.Upstreams[0].Name != "pinterest" || m.Upstreams[1].Name != "discord" {
		t.Fatalf("upstreams %+v", m.Upstreams)
	}
	p := m.Upstreams[0]
	if p.All.Requests != 1000 || p.All.Errors != 40 || p.All.ErrorRate() != 0.04 {
		t.Errorf("pinterest %+v", p.All)
	}
	if len(p.Routes) != 2 || p.Routes[0].Route != "POST /pins" || p.Routes[0].Requests != 820 || p.Routes[1].Latency != nil {
		t.Errorf("pinterest routes %+v", p.Routes)
	}
	// 100 observations: 50 in (0, 0.05], 40 in (0.1, 0.25], 10 in (1, 2.5].
	// p50 is the 50th: the top of the first bucket; p99 is 9/10 of the
	// way through (1, 2.5].
	l := p.All.Latency
	if l == nil || !near(l.P50, 0.05) || !near(l.P99, 2.35) || l.P50Over || l.P99Over || l.Count != 100 {
		t.Errorf("pinterest latency %+v", l)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestQuantile steps through histogram_quantile's cases.
func TestQuantile(t *testing.T) {
	b := &buckets{bounds: []float64{0.1, 0.5, 1}, counts: []float64{10, 10, 30}, count: 40}
	for i, c := range []struct {
		q    float64
		v    float64
		over bool
	}{
		{0, 0, false},
		{0.125, 0.05, false}, // rank 5: half of (0, 0.1]
		{0.25, 0.1, false},   // rank 10: the top of the first bucket
		{0.5, 0.75, false},   // rank 20: the empty (0.1, 0.5] is passed over
		{0.75, 1, false},     // rank 30: the top of the last finite bucket
		{0.99, 1, true},      // rank 39.6: beyond it, in +Inf
	} {
		v, over := b.quantile(c.q)
		if !near(v, c.v) || over != c.over {
			t.Errorf("step %d: quantile(%v) = %v, %v want %v, %v", i, c.q, v, over, c.v, c.over)
		}
	}
	if (&buckets{}).latency() != nil {
		t.Error("an empty histogram has a latency")
	}
}

// TestBucketsMerge: histograms with other bounds merge on the union of
// the bounds.
func TestBucketsMerge(t *testing.T) {
	a := &buckets{bounds: []float64{1, 2}, counts: []float64{1, 3}, count: 4}
	a.merge(&buckets{bounds: []float64{1.5, 2}, counts: []float64{2, 2}, count: 2})
	want := []float64{1, 3, 5}
	if len(a.bounds) != 3 || a.bounds[1] != 1.5 || a.count != 6 {
		t.Fatalf("merged %+v", a)
	}
	for i := range want {
		if a.counts[i] != want[i] {
			t.Fatalf("merged counts %v want %v", a.counts, want)
		}
	}
}

// TestMetricsRefusals: the refusals at the edges, read from the program's
// own registry under its names, by reason; served at 0 from the start,
// they are present before any refusal.
func TestMetricsRefusals(t *testing.T) {
	pm := metrics.New()
	if m := gather(t, pm.Registry()); !m.Refusals.Present || m.Refusals.Total != 0 {
		t.Fatalf("refusals at the start %+v, want present, 0", m.Refusals)
	}
	b := pm.Bot([]string{"pin", "settings", "queue"})
	b.InteractionDone("pin", "throttled")
	b.InteractionDone("settings", "throttled")
	b.InteractionDone("queue", "closing")
	b.InteractionDone("pin", "ok")
	pm.HTTPRefused("operator_rate")
	m := gather(t, pm.Registry())
	if m.Refusals.Total != 4 {
		t.Errorf("refusals total %v, want 4: %+v", m.Refusals.Total, m.Refusals)
	}
	for reason, want := range map[string]float64{"throttled": 2, "closing": 1, "busy": 0, "operator_rate": 1, "http_rate": 0} {
		if got := m.Refusals.Of(reason); got != want {
			t.Errorf("refusals of %s = %v, want %v", reason, got, want)
		}
	}
	if m.Refusals.Items[0] != (Count{"throttled", 2}) {
		t.Errorf("first refusal %+v, want throttled 2", m.Refusals.Items[0])
	}
	if m := gather(t, prometheus.NewRegistry()); m.Refusals.Present {
		t.Errorf("refusals without their families %+v, want absent", m.Refusals)
	}
}
