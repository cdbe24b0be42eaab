package app

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/bot/web"
	"github.com/pinbot/pinbot/internal/metrics"
	"github.com/pinbot/pinbot/internal/metrics/metricstest"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// get GETs url and returns the status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	return do(t, http.MethodGet, url)
}

func do(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestReadinessChecks runs the readiness check over an engine on a store
// that fails on demand, a token store and a gateway the test sets, one
// failure at a time, and checks each answer's status and body exactly.
func TestReadinessChecks(t *testing.T) {
	clock := actors.NewManualClock(t0)
	faults := persistencetest.NewFaultStore(persistencetest.NewMemStore(clock.Now))
	ecfg := actors.DefaultConfig()
	ecfg.Clock, ecfg.Recover = clock, false
	eng, err := actors.New(ecfg, faults, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	tokens, err := badgerlinks.Open("", badgerlinks.Options{InMemory: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	r := &readiness{engine: eng, links: tokens, log: zerolog.Nop()}
	r.serving.Store(true)
	shards := []bot.ShardState{{ID: 0, Connected: true}, {ID: 1, Connected: true}}
	shardsFunc := func() []bot.ShardState { return shards }

	const (
		ready       = `{"ready":true}`
		noGateway   = `{"ready":false,"failing":["gateway not connected"]}`
		shard1Down  = `{"ready":false,"failing":["gateway shard 1 disconnected"]}`
		storeFails  = `{"ready":false,"failing":["engine store not writable"]}`
		tokensGone  = `{"ready":false,"failing":["engine store not writable","token store not readable","gateway shard 1 disconnected"]}`
		notServing  = `{"ready":false,"failing":["HTTP listener not serving","engine store not writable","token store not readable","gateway shard 1 disconnected"]}`
		shuttingOff = `{"ready":false,"failing":["shutting down"]}`
	)
	steps := []struct {
		what   string
		change func()
		status int
		body   string
	}{
		{"before the bot is built", func() {}, 503, noGateway},
		{"every shard connected", func() { r.shards.Store(&shardsFunc) }, 200, ready},
		{"shard 1 disconnected", func() { shards[1].Connected = false }, 503, shard1Down},
		{"shard 1 back", func() { shards[1].Connected = true }, 200, ready},
		{"the store fails its writes", func() { faults.FailWrites(errDisk) }, 503, storeFails},
		{"the store takes writes again", func() { faults.FailWrites(nil); clock.Advance(time.Millisecond) }, 200, ready},
		{"the store fails, the token store is closed, shard 1 is down", func() {
			faults.FailWrites(errDisk)
			_ = tokens.Close()
			shards[1].Connected = false
		}, 503, tokensGone},
		{"the listener stopped too", func() { r.serving.Store(false) }, 503, notServing},
		{"shutting down says only that", func() { r.closing.Store(true) }, 503, shuttingOff},
	}
	for i, s := range steps {
		s.change()
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, ReadyPath, nil))
		if body := strings.TrimSpace(rec.Body.String()); rec.Code != s.status || body != s.body {
			t.Errorf("step %d (%s): %d %s; want %d %s", i, s.what, rec.Code, body, s.status, s.body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("step %d: Content-Type %q", i, ct)
		}
	}
}

// errDisk is the fault of TestReadinessChecks' store.
var errDisk = errors.New("disk error")

// t0 is the instant TestReadinessChecks' engine clock starts at.
var t0 = time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC)

// TestBuildServesMetricsAndReadiness: the built program serves /metrics
// (pinbot's metrics, the Go runtime's and the process's), /healthz
// (alive) and /readyz (not ready before Start: no gateway), each to GET
// only; a closed engine store makes it not ready, and Close makes /readyz
// say "shutting down" before anything else closes.
func TestBuildServesMetricsAndReadiness(t *testing.T) {
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()
	cfg := testConfig(t, dc, ps, t.TempDir())
	base := "http://" + cfg.Listener.Addr().String()
	a, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())

	s := metricstest.Scrape(t, base+metrics.Path)
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "pinbot_engine_resident_accounts", "pinbot_gateway_shards_connected"} {
		if _, ok := s.Lookup(name); !ok {
			t.Errorf("%s not served", name)
		}
	}
	if v := s.Get("pinbot_pins_total", "result", "pinned"); v != 0 {
		t.Errorf("pinbot_pins_total{result=pinned} = %v before any pin", v)
	}
	if st, body := get(t, base+web.HealthPath); st != 200 || body != "ok\n" {
		t.Errorf("healthz: %d %q", st, body)
	}
	if st, body := get(t, base+ReadyPath); st != 503 || strings.TrimSpace(body) != `{"ready":false,"failing":["gateway not connected"]}` {
		t.Errorf("readyz before Start: %d %s", st, body)
	}
	for _, p := range []string{metrics.Path, ReadyPath} {
		if st, _ := do(t, http.MethodPost, base+p); st != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: %d, want 405", p, st)
		}
	}
	// The engine's writes are counted: the readiness probe wrote the
	// high-water mark through the journal.
	if n := metricstest.Scrape(t, base+metrics.Path).Get("pinbot_journal_commit_seconds"); n < 1 {
		t.Errorf("%v journal batches counted after a readiness probe, want at least 1", n)
	}

	// During Close, before anything closes, /readyz says shutting down. A
	// closer pushed last runs first.
	var during struct {
		status int
		body   string
	}
	a.push("the test's look at /readyz", 0, func(context.Context) error {
		during.status, during.body = get(t, base+ReadyPath)
		return nil
	})
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if during.status != 503 || strings.TrimSpace(during.body) != `{"ready":false,"failing":["shutting down"]}` {
		t.Errorf("readyz during Close: %d %s; want 503 shutting down", during.status, during.body)
	}
}

// TestReadinessClosedStore: an engine store closed under the running
// program makes it not ready, naming the store.
func TestReadinessClosedStore(t *testing.T) {
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()
	cfg := testConfig(t, dc, ps, t.TempDir())
	base := "http://" + cfg.Listener.Addr().String()
	a, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if err := a.store.Close(); err != nil {
		t.Fatal(err)
	}
	want := `{"ready":false,"failing":["engine store not writable","gateway not connected"]}`
	if st, body := get(t, base+ReadyPath); st != 503 || strings.TrimSpace(body) != want {
		t.Errorf("readyz with the engine store closed: %d %s; want 503 %s", st, body, want)
	}
}

// TestReadinessProbeReuse: however often readiness is asked, the engine
// store gets one probe write per probeEvery, and its outcome answers the
// requests in between.
func TestReadinessProbeReuse(t *testing.T) {
	clock := actors.NewManualClock(t0)
	faults := persistencetest.NewFaultStore(persistencetest.NewMemStore(clock.Now))
	ecfg := actors.DefaultConfig()
	ecfg.Clock, ecfg.Recover = clock, false
	eng, err := actors.New(ecfg, faults, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	r := &readiness{engine: eng, log: zerolog.Nop(), probeEvery: time.Hour}
	ctx := context.Background()
	for i := range 5 {
		clock.Advance(time.Millisecond)
		if err := r.probe(ctx); err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
	}
	if n := faults.Counts().Writes; n != 1 {
		t.Errorf("5 probes within probeEvery made %d store writes, want 1", n)
	}
	// The store fails: still the earlier outcome until probeEvery has
	// passed (an hour here), then the failure.
	faults.FailWrites(errDisk)
	if err := r.probe(ctx); err != nil {
		t.Errorf("probe reusing a fresh outcome: %v", err)
	}
	r.probeEvery = 0
	if err := r.probe(ctx); !errors.Is(err, errDisk) {
		t.Errorf("probe once the outcome is stale: %v, want the store's error", err)
	}
}
