package dashboard

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pinbot/pinbot/actors"
)

// windowRig is a dashboard over a registry of its own, on a clock the
// test sets; its engine is never surveyed (the tests read the metrics
// alone).
type windowRig struct {
	now      time.Time
	reg      *prometheus.Registry
	reqs     *prometheus.CounterVec
	durs     *prometheus.HistogramVec
	failures *prometheus.CounterVec
	gathers  int
	dash     *Dashboard
}

// newWindowRig starts the process at t0 with every family registered
// and no series yet (each absent from a gather).
func newWindowRig(t *testing.T, t0 time.Time) *windowRig {
	t.Helper()
	r := &windowRig{now: t0, reg: prometheus.NewRegistry()}
	r.reqs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricUpstreamRequests, Help: "x"}, []string{"upstream", "route", "class"})
	r.durs = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricUpstreamDuration, Help: "x", Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5}}, []string{"upstream", "route"})
	r.failures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPinFailures, Help: "x"}, []string{"reason"})
	r.reg.MustRegister(r.reqs, r.durs, r.failures)
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		r.gathers++
		return r.reg.Gather()
	})
	var err error
	r.dash, err = New(Config{Token: []byte(testToken), Engine: &actors.Engine{}, Gatherer: g, Now: func() time.Time { return r.now }, Started: t0})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pinterest counts n requests of class to Pinterest's POST /pins, each
// taking latency seconds.
func (r *windowRig) pinterest(class string, n int, latency float64) {
	r.reqs.WithLabelValues("pinterest", "POST /pins", class).Add(float64(n))
	observe(r.durs.WithLabelValues("pinterest", "POST /pins"), latency, n)
}

// window reads the metrics now and returns the window of length.
func (r *windowRig) window(t *testing.T, length time.Duration) Window {
	t.Helper()
	m, problems := r.dash.gatherMetrics()
	if len(problems) > 0 {
		t.Fatalf("problems: %q", problems)
	}
	w := m.Window(length)
	if w == nil {
		t.Fatalf("no %v window in %+v", length, m.Windows)
	}
	return *w
}

// want is what a window shows of Pinterest: zero latencies for none.
type want struct {
	label                     string
	span                      time.Duration
	requests, errors, tooMany float64
	perMinute                 float64
	p50, p99                  float64
	failures                  float64
	failuresAbsent, upsAbsent bool
}

func check(t *testing.T, step string, w Window, x want) {
	t.Helper()
	if got := w.Label(); got != x.label {
		t.Errorf("%s: label %q want %q", step, got, x.label)
	}
	if w.Span != x.span {
		t.Errorf("%s: span %v want %v", step, w.Span, x.span)
	}
	if w.UpstreamsPresent == x.upsAbsent {
		t.Errorf("%s: upstreams present %v", step, w.UpstreamsPresent)
	}
	if w.Failures.Present == x.failuresAbsent || w.Failures.Total != x.failures {
		t.Errorf("%s: failures %+v want %v", step, w.Failures, x.failures)
	}
	if x.upsAbsent {
		return
	}
	u := w.Upstream("pinterest")
	if u == nil {
		t.Fatalf("%s: no pinterest in %+v", step, w.Upstreams)
	}
	a := u.All
	if a.Requests != x.requests || a.Errors != x.errors || a.TooMany != x.tooMany || !near(w.PerMinute(a.Requests), x.perMinute) {
		t.Errorf("%s: requests %v errors %v 429s %v rate %v; want %v %v %v %v",
			step, a.Requests, a.Errors, a.TooMany, w.PerMinute(a.Requests), x.requests, x.errors, x.tooMany, x.perMinute)
	}
	var p50, p99 float64
	if a.Latency != nil {
		p50, p99 = a.Latency.P50, a.Latency.P99
	}
	if !near(p50, x.p50) || !near(p99, x.p99) {
		t.Errorf("%s: p50 %v p99 %v want %v %v", step, p50, p99, x.p50, x.p99)
	}
}

// TestWindowsScripted: requests, errors and failures at known minutes,
// a snapshot each minute as the sampler takes them, and the windows read
// as time moves are exactly what happened in them.
func TestWindowsScripted(t *testing.T) {
	t0 := monday
	r := newWindowRig(t, t0)
	at := func(m float64) time.Time { return t0.Add(time.Duration(m * float64(time.Minute))) }
	events := map[int]func(){
		1: func() { // 100 fast successes
			r.pinterest("2xx", 100, 0.03)
			r.failures.WithLabelValues("timeout").Add(1)
		},
		30: func() { // an outage: 50 5xx and 10 429s, slow
			r.pinterest("5xx", 50, 2)
			r.pinterest("429", 10, 2)
			r.failures.WithLabelValues("rate_limited").Add(4)
		},
		65: func() { // recovered: 20 fast successes
			r.pinterest("2xx", 20, 0.2)
		},
	}
	minute := 0
	until := func(m int) { // runs the minutes up to m, sampling each
		for ; minute <= m; minute++ {
			r.now = at(float64(minute))
			if f := events[minute]; f != nil {
				f()
			}
			r.dash.Sample()
		}
	}

	until(3)
	r.now = at(3.5)
	check(t, "3m30s, 5m", r.window(t, 5*time.Minute), want{
		label: "since start, 3 min", span: 210 * time.Second,
		requests: 100, perMinute: 100 / 3.5, p50: 0.025, p99: 0.0495, failures: 1,
	})
	check(t, "3m30s, 1h", r.window(t, time.Hour), want{
		label: "since start, 3 min", span: 210 * time.Second,
		requests: 100, perMinute: 100 / 3.5, p50: 0.025, p99: 0.0495, failures: 1,
	})

	until(61)
	r.now = at(61)
	// (56m, 61m]: nothing happened.
	check(t, "61m, 5m", r.window(t, 5*time.Minute), want{label: "last 5 min", span: 5 * time.Minute})
	// (1m, 61m]: the outage alone; the successes of minute 1 are in the
	// snapshot at 1m. 60 observations of 2 s in (1, 2.5].
	check(t, "61m, 1h", r.window(t, time.Hour), want{
		label: "last hour", span: time.Hour,
		requests: 60, errors: 60, tooMany: 10, perMinute: 1, p50: 1.75, p99: 2.485, failures: 4,
	})

	until(67)
	r.now = at(67.5)
	// From the snapshot at 62m, just before 62m30s: the recovery.
	check(t, "67m30s, 5m", r.window(t, 5*time.Minute), want{
		label: "last 5 min", span: 330 * time.Second,
		requests: 20, perMinute: 20 / 5.5, p50: 0.175, p99: 0.2485,
	})
	check(t, "67m30s, 1h", r.window(t, time.Hour), want{
		label: "last hour", span: 3630 * time.Second,
		requests: 80, errors: 60, tooMany: 10, perMinute: 80 / 60.5, p50: 1.5, p99: 2.48, failures: 4,
	})

	// Two hours on without a sample: the windows say how far back their
	// snapshot is.
	r.now = at(67.5 + 120)
	check(t, "3h07m30s, 5m", r.window(t, 5*time.Minute), want{label: "last 2h 00m", span: 7230 * time.Second})
}

// TestWindowYoungProcess: a process younger than a window counts its
// whole life, and says so.
func TestWindowYoungProcess(t *testing.T) {
	r := newWindowRig(t, monday)
	r.pinterest("2xx", 30, 0.03)
	r.pinterest("5xx", 10, 0.03)
	r.now = monday.Add(3*time.Minute + 20*time.Second)
	for _, length := range Windows {
		w := r.window(t, length)
		check(t, length.String(), w, want{
			label: "since start, 3 min", span: 200 * time.Second, requests: 40, errors: 10,
			perMinute: 40 / (200.0 / 60), p50: 0.025, p99: 0.0495, failuresAbsent: true,
		})
		if !w.FromStart || !w.From.Equal(monday) || w.During() != "since start, 3 min" {
			t.Errorf("%v: from start %v, from %v, %q", length, w.FromStart, w.From, w.During())
		}
	}
	r.now = monday.Add(10 * time.Minute)
	if w := r.window(t, 5*time.Minute); w.FromStart || w.Label() != "last 5 min" || w.During() != "in the last 5 min" {
		t.Errorf("10 minutes old, 5m: %+v %q", w, w.Label())
	}
}

// TestWindowAbsentFamilies: a family absent now is "no data" in every
// window; one absent from the snapshot a window counts from counts from
// zero; without a gatherer there are no windows.
func TestWindowAbsentFamilies(t *testing.T) {
	r := newWindowRig(t, monday)
	r.now = monday.Add(time.Hour)
	r.dash.Sample() // every family absent
	if len(r.dash.hist.snaps) != 1 {
		t.Fatalf("%d snapshots", len(r.dash.hist.snaps))
	}
	r.now = monday.Add(time.Hour + 5*time.Minute)
	check(t, "all absent", r.window(t, 5*time.Minute), want{label: "last 5 min", span: 5 * time.Minute, upsAbsent: true, failuresAbsent: true})

	r.pinterest("429", 7, 0.5)
	r.failures.WithLabelValues("timeout").Add(2)
	r.now = monday.Add(time.Hour + 10*time.Minute)
	check(t, "appeared after the snapshot", r.window(t, 5*time.Minute), want{
		label: "last 5 min", span: 5 * time.Minute, requests: 7, errors: 7, tooMany: 7, perMinute: 1.4,
		p50: 0.375, p99: 0.4975, failures: 2,
	})

	d, err := New(Config{Token: []byte(testToken), Engine: &actors.Engine{}})
	if err != nil {
		t.Fatal(err)
	}
	d.Sample()
	if m, problems := d.gatherMetrics(); m.Windows != nil || problems != nil {
		t.Errorf("no gatherer: %+v %q", m.Windows, problems)
	}
}

// TestWindowFailedGather: a gather that fails keeps no snapshot: the
// families it missed would count from zero in the windows after it.
func TestWindowFailedGather(t *testing.T) {
	reg := prometheus.NewRegistry()
	setTestMetrics(t, reg)
	now, fail := monday, true
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		if fail {
			return nil, errors.New("a collector failed")
		}
		return reg.Gather()
	})
	d, err := New(Config{Token: []byte(testToken), Engine: &actors.Engine{}, Gatherer: g, Now: func() time.Time { return now }, Started: monday.Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	d.Sample()
	if m, problems := d.gatherMetrics(); len(problems) != 1 || m.Windows[0].UpstreamsPresent {
		t.Errorf("failed gather: %q, %+v", problems, m.Windows[0])
	}
	if n := len(d.hist.snaps); n != 0 {
		t.Fatalf("%d snapshots kept of failed gathers", n)
	}
	fail = false
	d.Sample()
	if n := len(d.hist.snaps); n != 1 {
		t.Fatalf("%d snapshots", n)
	}
}

// TestHistory steps through the ring: one snapshot a minute however
// often it is offered one, the latest at or before a window's start as
// its base, a bounded length, and a clock that goes back.
func TestHistory(t *testing.T) {
	t0 := monday
	h := history{started: t0, every: time.Minute, keep: time.Hour}
	mark := func(v float64) reading { return reading{failures: map[string]float64{"x": v}} }
	// Offered every 10 s for 3 hours.
	for s := 0; s <= 3*3600; s += 10 {
		h.record(t0.Add(time.Duration(s)*time.Second), mark(float64(s)))
		if len(h.snaps) > 62 {
			t.Fatalf("%d snapshots at %ds", len(h.snaps), s)
		}
	}
	now := t0.Add(3 * time.Hour)
	if n := len(h.snaps); n != 61 {
		t.Errorf("%d snapshots kept, want 61", n)
	}
	for i, c := range []struct {
		now       time.Time
		length    time.Duration
		at        time.Time
		fromStart bool
	}{
		{now, 5 * time.Minute, now.Add(-5 * time.Minute), false},
		{now, time.Hour, now.Add(-time.Hour), false},
		{now.Add(30 * time.Second), 5 * time.Minute, now.Add(-5 * time.Minute), false},
		{t0.Add(4 * time.Minute), 5 * time.Minute, t0, true},
		{now.Add(time.Hour), time.Hour, now, false},
		{now.Add(2 * time.Hour), time.Hour, now, false}, // the last one
	} {
		s, fromStart := h.base(c.now, c.length)
		if !s.at.Equal(c.at) || fromStart != c.fromStart {
			t.Errorf("step %d: base(%v, %v) = %v, %v want %v, %v", i, c.now.Sub(t0), c.length, s.at.Sub(t0), fromStart, c.at.Sub(t0), c.fromStart)
		}
		if !fromStart && s.r.failures["x"] != float64(s.at.Sub(t0)/time.Second) {
			t.Errorf("step %d: the snapshot at %v holds %v", i, s.at.Sub(t0), s.r.failures["x"])
		}
	}
	// The clock goes back to 2h29m30s: the snapshots after it go, and
	// sampling resumes a minute after the last one kept.
	h.record(now.Add(-30*time.Minute-30*time.Second), mark(-1))
	if last := h.snaps[len(h.snaps)-1]; !last.at.Equal(now.Add(-31 * time.Minute)) {
		t.Errorf("after the clock went back: last snapshot at %v", last.at.Sub(t0))
	}
	h.record(now.Add(-30*time.Minute), mark(-2))
	if last := h.snaps[len(h.snaps)-1]; !last.at.Equal(now.Add(-30*time.Minute)) || last.r.failures["x"] != -2 {
		t.Errorf("after the clock went back: last snapshot at %v: %v", last.at.Sub(t0), last.r.failures["x"])
	}
}

// TestReadingSince: differences by series; a series that went down was
// reset and counts from zero; a series or family the base lacks counts
// from zero; a family absent now is absent.
func TestReadingSince(t *testing.T) {
	k1, k2 := seriesKey{"pinterest", "POST /pins", "2xx"}, seriesKey{"pinterest", "POST /pins", "5xx"}
	rk := routeKey{"pinterest", "POST /pins"}
	base := reading{
		reqs:     map[seriesKey]float64{k1: 10, k2: 50},
		durs:     map[routeKey]*buckets{rk: {bounds: []float64{1, 2}, counts: []float64{4, 6}, count: 7}},
		failures: map[string]float64{"timeout": 3},
	}
	cur := reading{
		reqs: map[seriesKey]float64{k1: 15, k2: 5, {"discord", "x", "2xx"}: 2},
		durs: map[routeKey]*buckets{rk: {bounds: []float64{1, 2}, counts: []float64{5, 9}, count: 10}},
	}
	d := cur.since(base)
	if d.reqs[k1] != 5 || d.reqs[k2] != 5 || d.reqs[seriesKey{"discord", "x", "2xx"}] != 2 || d.failures != nil {
		t.Errorf("since: %+v", d)
	}
	if b := d.durs[rk]; b.count != 3 || b.counts[0] != 1 || b.counts[1] != 3 {
		t.Errorf("histogram since: %+v", b)
	}
	// A histogram reset: counts from zero.
	reset := &buckets{bounds: []float64{1, 2}, counts: []float64{1, 2}, count: 2}
	if b := reset.since(base.durs[rk]); b.count != 2 || b.counts[1] != 2 {
		t.Errorf("reset histogram since: %+v", b)
	}
	// Fewer in a bucket, though not in all: reset too.
	odd := &buckets{bounds: []float64{1, 2}, counts: []float64{3, 9}, count: 10}
	if b := odd.since(base.durs[rk]); b.count != 10 {
		t.Errorf("bucket went down: %+v", b)
	}
}

// TestWindowLabel names windows.
func TestWindowLabel(t *testing.T) {
	for i, c := range []struct {
		w    Window
		want string
	}{
		{Window{Length: 5 * time.Minute, Span: 5 * time.Minute}, "last 5 min"},
		{Window{Length: 5 * time.Minute, Span: 7 * time.Minute}, "last 5 min"},
		{Window{Length: 5 * time.Minute, Span: 7*time.Minute + time.Second}, "last 7 min"},
		{Window{Length: time.Hour, Span: time.Hour + 30*time.Second}, "last hour"},
		{Window{Length: time.Hour, Span: 3*time.Hour + 5*time.Minute}, "last 3h 05m"},
		{Window{Length: time.Hour, Span: 40 * time.Second, FromStart: true}, "since start, 40 s"},
		{Window{Length: time.Hour, Span: 59 * time.Minute, FromStart: true}, "since start, 59 min"},
	} {
		if got := c.w.Label(); got != c.want {
			t.Errorf("step %d: %q want %q", i, got, c.want)
		}
	}
}

// TestSampleCost: Sample gathers only when a snapshot is due, once per
// SampleEvery, and not after an assembly took one.
func TestSampleCost(t *testing.T) {
	r := newWindowRig(t, monday)
	for i, c := range []struct {
		at      time.Duration
		page    bool // an assembly reads the metrics instead
		gathers int  // in all, after the step
	}{
		{0, false, 1},
		{0, false, 1},
		{30 * time.Second, false, 1},
		{SampleEvery, false, 2},
		{SampleEvery + time.Second, false, 2},
		{SampleEvery + 10*time.Second, true, 3}, // too soon for a snapshot
		{2 * SampleEvery, false, 4},
		{2*SampleEvery + 10*time.Second, true, 5},
		{3*SampleEvery + 10*time.Second, true, 6}, // a snapshot
		{3*SampleEvery + 30*time.Second, false, 6},
		{4 * SampleEvery, false, 6},
		{4*SampleEvery + 10*time.Second, false, 7},
	} {
		r.now = monday.Add(c.at)
		if c.page {
			r.dash.gatherMetrics()
		} else {
			r.dash.Sample()
		}
		if r.gathers != c.gathers {
			t.Errorf("step %d: %d gathers want %d", i, r.gathers, c.gathers)
		}
	}
}

// TestRun: each tick takes a sample; Run returns when its context ends.
func TestRun(t *testing.T) {
	r := newWindowRig(t, monday)
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.dash.Run(ctx, ticks)
	}()
	for i := range 3 {
		r.dash.hmu.Lock()
		r.now = monday.Add(time.Duration(i) * SampleEvery)
		r.dash.hmu.Unlock()
		// The second send is taken once the first tick's Sample returned:
		// the clock moves only after it.
		ticks <- r.now
		ticks <- r.now
	}
	cancel()
	<-done
	if n := len(r.dash.hist.snaps); n != 3 {
		t.Errorf("%d snapshots after ticks at 3 minutes", n)
	}
}
