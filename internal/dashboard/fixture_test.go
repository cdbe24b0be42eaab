package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// testToken is the fixture's admin token.
const testToken = "s3cret-admin-token-for-tests"

// monday is the fixture engine's start, a multiple of 15 minutes.
var monday = time.Date(2026, time.November, 16, 12, 0, 0, 0, time.UTC)

// fixture is a dashboard over a seeded engine and metrics registry.
type fixture struct {
	clock *actors.ManualClock
	eng   *actors.Engine
	reg   *prometheus.Registry
	dash  *Dashboard
}

// The fixture's accounts, and the pins each has in its window.
var seededAccounts = []struct {
	account string
	pins    int
}{
	{"acct-alice-art", 98},
	{"acct-bob-photos", 75}, // and 2 queued pins, held by Pinterest
	{"acct-carol", 41},
	{"acct-dave", 12},
	{"acct-erin", 3},
}

// newFixture starts an engine on a manual clock over an in-memory store,
// seeds it with seededAccounts' pins spread over the last 6 hours and two
// queued pins on a held account, and registers the metrics the
// dashboard reads with known values, scripted at known instants: the
// dashboard takes its snapshots of them an hour and five minutes before
// the end (see testPhases).
func newFixture(t testing.TB) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{clock: actors.NewManualClock(monday)}
	cfg := actors.DefaultConfig()
	cfg.Clock, cfg.Wall, cfg.Recover = f.clock, f.clock.Now, false
	cfg.OnJob = func(actors.Job) {} // queued pins wait: none can start
	eng, err := actors.New(cfg, persistencetest.NewMemStore(f.clock.Now), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	f.eng = eng
	f.reg = prometheus.NewRegistry()
	tm := registerTestMetrics(t, f.reg)
	f.dash, err = New(Config{Token: []byte(testToken), Engine: eng, Gatherer: f.reg, Names: fixtureNames, Drift: fixtureDrift{}, Now: f.now, Started: monday})
	if err != nil {
		t.Fatal(err)
	}
	// Six rounds, 50 minutes apart: each account makes a sixth of its
	// pins (the remainder in the last round). The metrics reach their
	// phases at 3h30m (a snapshot), 4h25m (a snapshot) and 4h30m, the
	// end.
	advance := func(d time.Duration) {
		at := f.now().Add(d)
		for i, ph := range testPhases {
			if f.now().Before(monday.Add(ph.at)) && !at.Before(monday.Add(ph.at)) {
				f.clock.Set(monday.Add(ph.at))
				tm.reach(i)
				f.dash.Sample()
			}
		}
		f.clock.Set(at)
	}
	for round := range 6 {
		if round > 0 {
			advance(50 * time.Minute)
		}
		for _, a := range seededAccounts {
			n := a.pins / 6
			if round == 5 {
				n = a.pins - 5*n
			}
			f.pin(t, a.account, n)
		}
	}
	advance(20 * time.Minute)
	// Pinterest asked bob's account to wait 40 minutes: its pins queue.
	if _, err := eng.Hold(ctx, "acct-bob-photos", eng.Now().Add(40*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Enqueue(ctx, "acct-bob-photos", [][]byte{[]byte("one"), []byte("two")}); err != nil {
		t.Fatal(err)
	}
	return f
}

// now is the fixture's clock as a time.
func (f *fixture) now() time.Time { return time.UnixMilli(f.clock.Now()).UTC() }

// pin makes account use n slots, committed now.
func (f *fixture) pin(t testing.TB, account string, n int) {
	t.Helper()
	ctx := context.Background()
	for n > 0 {
		g, err := f.eng.Reserve(ctx, account, min(n, actors.MaxBatch))
		if err != nil || g.Granted == 0 {
			t.Fatalf("Reserve(%s): %+v, %v", account, g, err)
		}
		for _, r := range g.Reservations() {
			if _, err := f.eng.Commit(ctx, r, f.eng.Now()); err != nil {
				t.Fatal(err)
			}
		}
		n -= g.Granted
	}
}

// server serves the dashboard, mounted in front of a handler that
// answers 404 as the listener does, on loopback.
func (f *fixture) server(t testing.TB) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(f.dash.Mount(http404()))
	t.Cleanup(srv.Close)
	return srv
}

// testPhase is what the fixture's counters hold from an instant on
// (since monday), cumulative.
type testPhase struct {
	at       time.Duration
	reqs     map[[3]string]float64 // upstream, route, class
	obs      map[[2]string][]int   // upstream, route: observations of testLatencies
	failures map[string]float64    // reason
}

// testLatencies are the latencies the fixture observes, in seconds.
var testLatencies = []float64{0.03, 0.07, 0.2, 0.4, 2}

var (
	pinsRoute   = [2]string{"pinterest", "POST /pins"}
	boardsRoute = [2]string{"pinterest", "GET /boards"}
	interRoute  = [2]string{"discord", "POST /interactions"}
)

// testPhases: an hour before the end, five minutes before it, and at
// the end, when the totals are those of registerTestMetrics. Over the
// last 5 minutes Pinterest answered 43 requests, 18 of them errors (6
// 429s), and Discord 44, 4 of them errors; over the last hour 238 (28
// errors, 8 429s) and 296 (6 errors); 8 pins failed in the last hour.
var testPhases = []testPhase{
	{
		at: 3*time.Hour + 30*time.Minute,
		reqs: map[[3]string]float64{
			{"pinterest", "POST /pins", "2xx"}: 600, {"pinterest", "POST /pins", "5xx"}: 10, {"pinterest", "POST /pins", "429"}: 2,
			{"pinterest", "GET /boards", "2xx"}:      150,
			{"discord", "POST /interactions", "2xx"}: 1700, {"discord", "POST /interactions", "timeout"}: 4,
		},
		obs: map[[2]string][]int{
			pinsRoute:  {40, 0, 31, 0, 3},
			interRoute: {0, 80, 0, 0, 0},
		},
		failures: map[string]float64{"invalid_image": 6, "timeout": 2, "rate_limited": 1},
	},
	{
		at: 4*time.Hour + 25*time.Minute,
		reqs: map[[3]string]float64{
			{"pinterest", "POST /pins", "2xx"}: 760, {"pinterest", "POST /pins", "5xx"}: 18, {"pinterest", "POST /pins", "429"}: 4,
			{"pinterest", "GET /boards", "2xx"}:      175,
			{"discord", "POST /interactions", "2xx"}: 1950, {"discord", "POST /interactions", "timeout"}: 6,
		},
		obs: map[[2]string][]int{
			pinsRoute:  {48, 0, 36, 0, 4},
			interRoute: {0, 94, 0, 0, 0},
		},
		failures: map[string]float64{"invalid_image": 8, "timeout": 3, "rate_limited": 2},
	},
	{
		at: 4*time.Hour + 30*time.Minute,
		reqs: map[[3]string]float64{
			{"pinterest", "POST /pins", "2xx"}: 780, {"pinterest", "POST /pins", "5xx"}: 30, {"pinterest", "POST /pins", "429"}: 10,
			{"pinterest", "GET /boards", "2xx"}:      180,
			{"discord", "POST /interactions", "2xx"}: 1990, {"discord", "POST /interactions", "timeout"}: 10,
		},
		obs: map[[2]string][]int{
			pinsRoute:  {50, 0, 40, 0, 10},
			interRoute: {0, 99, 0, 1, 0},
		},
		failures: map[string]float64{"invalid_image": 9, "timeout": 5, "rate_limited": 3},
	},
}

// testMetrics are the fixture's collectors and the phase they are at.
type testMetrics struct {
	reqs     *prometheus.CounterVec
	durs     *prometheus.HistogramVec
	failures *prometheus.CounterVec
	phase    int // -1: none yet
}

// reach adds what the counters count from the phase they are at to
// phase i.
func (m *testMetrics) reach(i int) {
	var from testPhase
	if m.phase >= 0 {
		from = testPhases[m.phase]
	}
	to := testPhases[i]
	for k, v := range to.reqs {
		if d := v - from.reqs[k]; d > 0 {
			m.reqs.WithLabelValues(k[0], k[1], k[2]).Add(d)
		}
	}
	for k, counts := range to.obs {
		for j, n := range counts {
			if from.obs[k] != nil {
				n -= from.obs[k][j]
			}
			observe(m.durs.WithLabelValues(k[0], k[1]), testLatencies[j], n)
		}
	}
	for k, v := range to.failures {
		if d := v - from.failures[k]; d > 0 {
			m.failures.WithLabelValues(k).Add(d)
		}
	}
	m.phase = i
}

// registerTestMetrics registers the families the dashboard reads under
// their names and sets the totals at the end of testPhases: 1,234 pins
// made and 17 failed (9 for an invalid image, 5 for a timeout, 3 at
// Pinterest's rate limit); Pinterest 1,000 requests on two routes, 40 of
// them errors, with a known latency; Discord 2,000 requests, 10 errors;
// 3 shards connected; 7 commands refused (5 throttled, 2 while closing)
// and 4 HTTP requests over their client's rate. The fixture instead moves the counters through
// testPhases with the returned testMetrics.
func registerTestMetrics(t testing.TB, reg *prometheus.Registry) *testMetrics {
	t.Helper()
	pins := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPins, Help: "Pins by result."}, []string{"result"})
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPinFailures, Help: "Failed pins by reason."}, []string{"reason"})
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricUpstreamRequests, Help: "Upstream requests."}, []string{"upstream", "route", "class"})
	durs := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: MetricUpstreamDuration, Help: "Upstream request latency.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5},
	}, []string{"upstream", "route"})
	shards := prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricGatewayShards, Help: "Shards connected."})
	irefs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricInteractionRefusals, Help: "Refused interactions."}, []string{"reason"})
	hrefs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricHTTPRefusals, Help: "Refused HTTP requests."}, []string{"reason"})
	for _, c := range []prometheus.Collector{pins, failures, reqs, durs, shards, irefs, hrefs} {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	pins.WithLabelValues("ok").Add(1234)
	pins.WithLabelValues("failed").Add(17)
	shards.Set(3)
	irefs.WithLabelValues("throttled").Add(5)
	irefs.WithLabelValues("closing").Add(2)
	irefs.WithLabelValues("busy")
	hrefs.WithLabelValues("http_rate").Add(4)
	return &testMetrics{reqs: reqs, durs: durs, failures: failures, phase: -1}
}

// setTestMetrics registers the metrics with their totals at the end of
// testPhases.
func setTestMetrics(t testing.TB, reg *prometheus.Registry) {
	t.Helper()
	registerTestMetrics(t, reg).reach(len(testPhases) - 1)
}

func observe(o prometheus.Observer, v float64, n int) {
	for range n {
		o.Observe(v)
	}
}

// http404 stands for the listener's other paths.
func http404() http.Handler { return http.NotFoundHandler() }
