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
// dashboard reads with known values.
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
	// Six rounds, 50 minutes apart: each account makes a sixth of its
	// pins (the remainder in the last round).
	for round := range 6 {
		if round > 0 {
			f.clock.Advance(50 * time.Minute)
		}
		for _, a := range seededAccounts {
			n := a.pins / 6
			if round == 5 {
				n = a.pins - 5*n
			}
			f.pin(t, a.account, n)
		}
	}
	f.clock.Advance(20 * time.Minute)
	// Pinterest asked bob's account to wait 40 minutes: its pins queue.
	if _, err := eng.Hold(ctx, "acct-bob-photos", eng.Now().Add(40*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Enqueue(ctx, "acct-bob-photos", [][]byte{[]byte("one"), []byte("two")}); err != nil {
		t.Fatal(err)
	}
	f.reg = prometheus.NewRegistry()
	registerTestMetrics(t, f.reg)
	f.dash, err = New(Config{Token: []byte(testToken), Engine: eng, Gatherer: f.reg})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

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

// registerTestMetrics registers the families the dashboard reads under
// their names, with known values: 1,234 pins made and 17 failed (9 for
// an invalid image, 5 for a timeout, 3 at Pinterest's rate limit);
// Pinterest 1,000 requests on two routes, 40 of them errors, with a
// known latency; Discord 2,000 requests, 10 errors; 3 shards connected.
func registerTestMetrics(t testing.TB, reg *prometheus.Registry) {
	t.Helper()
	pins := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPins, Help: "Pins by result."}, []string{"result"})
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPinFailures, Help: "Failed pins by reason."}, []string{"reason"})
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricUpstreamRequests, Help: "Upstream requests."}, []string{"upstream", "route", "class"})
	durs := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: MetricUpstreamDuration, Help: "Upstream request latency.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5},
	}, []string{"upstream", "route"})
	shards := prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricGatewayShards, Help: "Shards connected."})
	for _, c := range []prometheus.Collector{pins, failures, reqs, durs, shards} {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	pins.WithLabelValues("ok").Add(1234)
	pins.WithLabelValues("failed").Add(17)
	failures.WithLabelValues("invalid_image").Add(9)
	failures.WithLabelValues("timeout").Add(5)
	failures.WithLabelValues("rate_limited").Add(3)
	reqs.WithLabelValues("pinterest", "POST /pins", "2xx").Add(780)
	reqs.WithLabelValues("pinterest", "POST /pins", "5xx").Add(30)
	reqs.WithLabelValues("pinterest", "POST /pins", "429").Add(10)
	reqs.WithLabelValues("pinterest", "GET /boards", "2xx").Add(180)
	reqs.WithLabelValues("discord", "POST /interactions", "2xx").Add(1990)
	reqs.WithLabelValues("discord", "POST /interactions", "timeout").Add(10)
	// Pinterest's POST /pins: 50 fast, 40 of a quarter second, 10 slow.
	observe(durs.WithLabelValues("pinterest", "POST /pins"), 0.03, 50)
	observe(durs.WithLabelValues("pinterest", "POST /pins"), 0.2, 40)
	observe(durs.WithLabelValues("pinterest", "POST /pins"), 2, 10)
	observe(durs.WithLabelValues("discord", "POST /interactions"), 0.07, 100)
	shards.Set(3)
}

func observe(o prometheus.Observer, v float64, n int) {
	for range n {
		o.Observe(v)
	}
}

// http404 stands for the listener's other paths.
func http404() http.Handler { return http.NotFoundHandler() }
