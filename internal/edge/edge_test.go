package edge_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pinbot/pinbot/internal/edge"
	"github.com/pinbot/pinbot/internal/limit/gcra"
	"github.com/pinbot/pinbot/internal/metrics"
	"github.com/pinbot/pinbot/internal/metrics/metricstest"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// clock is a fake of a machine's two clocks: the wall clock (Now), which
// Step sets back or forward as an operator or NTP does, and monotonic
// time (Elapsed), which only moves forward. Advance is time passing: it
// moves both.
type clock struct {
	mu   sync.Mutex
	wall time.Time
	mono time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

func (c *clock) Elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(d)
	c.mono += d
}

func (c *clock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(d)
}

// setup returns a Limiter for cfg on a fake clock, wrapping a handler
// that counts the requests it serves.
func setup(t *testing.T, cfg edge.Config) (*edge.Limiter, http.Handler, *clock, *int) {
	t.Helper()
	clk := &clock{wall: t0}
	cfg.Now, cfg.Elapsed = clk.Now, clk.Elapsed
	l, err := edge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	served := new(int)
	h := l.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*served++
		_, _ = w.Write([]byte("ok\n"))
	}))
	return l, h, clk, served
}

func get(h http.Handler, remote string, xff ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/oauth/callback?code=x&state=y", nil)
	r.RemoteAddr = remote
	for _, v := range xff {
		r.Header.Add("X-Forwarded-For", v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestHeaders steps one client through 3 a minute (a unit every 20 s) on
// the fake clock: every answer's headers are exact, the fourth request
// gets 429 with Retry-After and never reaches the handler.
func TestHeaders(t *testing.T) {
	_, h, clk, served := setup(t, edge.Config{Rate: gcra.Rate{Limit: 3, Period: time.Minute}})
	type want struct {
		status                  int
		remaining, reset, retry string
	}
	steps := []struct {
		advance time.Duration
		want    want
	}{
		0: {0, want{200, "2", "20", ""}},
		1: {0, want{200, "1", "40", ""}},
		2: {500 * time.Millisecond, want{200, "0", "60", ""}}, // 59.5 s, rounded up
		3: {0, want{429, "0", "60", "20"}},                    // 19.5 s, rounded up
		4: {19 * time.Second, want{429, "0", "41", "1"}},
		5: {500 * time.Millisecond, want{200, "0", "60", ""}},
		6: {3 * time.Minute, want{200, "2", "20", ""}},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		w := get(h, "192.0.2.10:5555")
		hd := w.Header()
		got := want{w.Code, hd.Get("RateLimit-Remaining"), hd.Get("RateLimit-Reset"), hd.Get("Retry-After")}
		if got != st.want || hd.Get("RateLimit-Limit") != "3" {
			t.Errorf("step %d: %+v limit %q, want %+v limit 3", i, got, hd.Get("RateLimit-Limit"), st.want)
		}
		for _, k := range []string{"Limit", "Remaining", "Reset"} {
			if hd.Get("X-RateLimit-"+k) != hd.Get("RateLimit-"+k) {
				t.Errorf("step %d: X-RateLimit-%s %q, RateLimit-%s %q", i, k, hd.Get("X-RateLimit-"+k), k, hd.Get("RateLimit-"+k))
			}
		}
		if w.Code == http.StatusTooManyRequests && !strings.Contains(w.Body.String(), "Try again in "+got.retry+" seconds") {
			t.Errorf("step %d: body %q", i, w.Body.String())
		}
	}
	if *served != 5 {
		t.Errorf("handler served %d requests, want 5", *served)
	}
}

// TestClientsApart: each address has its own rate; an IPv6 /64 is one
// client.
func TestClientsApart(t *testing.T) {
	_, h, _, _ := setup(t, edge.Config{Rate: gcra.Rate{Limit: 1, Period: time.Hour}})
	for i, tt := range []struct {
		remote string
		want   int
	}{
		0: {"192.0.2.1:1000", 200},
		1: {"192.0.2.1:2000", 429}, // same address, another port
		2: {"192.0.2.2:1000", 200},
		3: {"[2001:db8:1:2::1]:1000", 200},
		4: {"[2001:db8:1:2:ffff::9]:1000", 429}, // same /64
		5: {"[2001:db8:1:3::1]:1000", 200},
		6: {"[::ffff:192.0.2.2]:1000", 429}, // IPv4-mapped: 192.0.2.2
	} {
		if w := get(h, tt.remote); w.Code != tt.want {
			t.Errorf("step %d: %s: %d, want %d", i, tt.remote, w.Code, tt.want)
		}
	}
}

// TestClientAddr: X-Forwarded-For is believed only from trusted proxies,
// and read from the right only as far as trusted proxies go.
func TestClientAddr(t *testing.T) {
	proxies, err := edge.ParseProxies("10.0.0.0/8, 192.0.2.7, 2001:db8::/32")
	if err != nil {
		t.Fatal(err)
	}
	l, err := edge.New(edge.Config{TrustedProxies: proxies})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		remote string
		xff    []string
		want   string
	}{
		0:  {"198.51.100.1:1", nil, "198.51.100.1"},
		1:  {"198.51.100.1:1", []string{"203.0.113.5"}, "198.51.100.1"}, // untrusted peer: header ignored
		2:  {"10.1.2.3:1", nil, "10.1.2.3"},
		3:  {"10.1.2.3:1", []string{"203.0.113.5"}, "203.0.113.5"},
		4:  {"10.1.2.3:1", []string{"6.6.6.6, 203.0.113.5"}, "203.0.113.5"},           // a spoofed left entry is not reached
		5:  {"10.1.2.3:1", []string{"6.6.6.6, 203.0.113.5, 10.9.9.9"}, "203.0.113.5"}, // a chain of proxies
		6:  {"10.1.2.3:1", []string{"6.6.6.6", "203.0.113.5, 192.0.2.7"}, "203.0.113.5"},
		7:  {"10.1.2.3:1", []string{"10.0.0.5, 10.0.0.6"}, "10.0.0.5"},                // all proxies: the leftmost
		8:  {"10.1.2.3:1", []string{"garbage, 10.0.0.6"}, "10.0.0.6"},                 // unreadable: the last address read
		9:  {"10.1.2.3:1", []string{"203.0.113.5:4711"}, "203.0.113.5"},               // with a port
		10: {"[2001:db8::1]:1", []string{"[2001:db8:ffff::2]:1, 2a00::1"}, "2a00::1"}, // IPv6 proxies
		11: {"192.0.2.7:1", []string{""}, "192.0.2.7"},
		12: {"not an address", []string{"203.0.113.5"}, "invalid IP"},
	}
	for i, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tt.remote
		for _, v := range tt.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := l.ClientAddr(r).String(); got != tt.want {
			t.Errorf("step %d: ClientAddr(%s, %q) = %s want %s", i, tt.remote, tt.xff, got, tt.want)
		}
	}
}

// TestProxiedClientsApart: behind a trusted proxy, clients count by
// their forwarded addresses, not by the proxy's.
func TestProxiedClientsApart(t *testing.T) {
	proxies, _ := edge.ParseProxies("10.0.0.1")
	_, h, _, _ := setup(t, edge.Config{Rate: gcra.Rate{Limit: 1, Period: time.Hour}, TrustedProxies: proxies})
	if w := get(h, "10.0.0.1:1", "203.0.113.1"); w.Code != 200 {
		t.Fatalf("first client: %d", w.Code)
	}
	if w := get(h, "10.0.0.1:1", "203.0.113.2"); w.Code != 200 {
		t.Fatalf("second client: %d", w.Code)
	}
	if w := get(h, "10.0.0.1:1", "203.0.113.1"); w.Code != 429 {
		t.Fatalf("first client again: %d, want 429", w.Code)
	}
	// A client cannot pose as another by sending the header itself.
	if w := get(h, "203.0.113.1:1", "198.51.100.77"); w.Code != 429 {
		t.Fatalf("direct client with a forged header: %d, want 429", w.Code)
	}
}

// TestMemoryBound: clients are forgotten once idle, and never more than
// MaxClients are kept, however many addresses call.
func TestMemoryBound(t *testing.T) {
	l, h, clk, _ := setup(t, edge.Config{Rate: gcra.Rate{Limit: 20, Period: time.Minute}, MaxClients: 500})
	for i := range 5000 {
		get(h, "198.51.100."+strconv.Itoa(i%250)+":1")
		get(h, "[2001:db8:"+strconv.FormatInt(int64(i), 16)+"::1]:1")
		if n := l.Clients(); n > 500 {
			t.Fatalf("%d clients kept, want at most 500", n)
		}
	}
	clk.Advance(time.Minute)
	get(h, "192.0.2.1:1")
	if n := l.Clients(); n != 1 {
		t.Fatalf("%d clients kept after a minute idle, want 1", n)
	}
}

func TestParseProxies(t *testing.T) {
	got, err := edge.ParseProxies(" 10.0.0.1/8 ,192.0.2.7,, ::ffff:198.51.100.2, 2001:db8::/32 ")
	want := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"),
		netip.MustParsePrefix("198.51.100.2/32"), netip.MustParsePrefix("2001:db8::/32"),
	}
	if err != nil || len(got) != len(want) {
		t.Fatalf("ParseProxies = %v, %v", got, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("prefix %d = %v want %v", i, got[i], want[i])
		}
	}
	if got, err := edge.ParseProxies(""); err != nil || len(got) != 0 {
		t.Errorf("empty: %v, %v", got, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", "10.0.0.1/8/9"} {
		if _, err := edge.ParseProxies(bad); err == nil || !strings.Contains(err.Error(), "is not an address or CIDR prefix") {
			t.Errorf("ParseProxies(%q) error %v", bad, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg   edge.Config
		field string
	}{
		{edge.Config{Rate: gcra.Rate{Limit: -1, Period: time.Minute}}, "Config.Rate"},
		{edge.Config{MaxClients: -1}, "Config.MaxClients"},
		{edge.Config{TrustedProxies: []netip.Prefix{{}}}, "Config.TrustedProxies"},
	} {
		if _, err := edge.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("New(%+v) error %v, want one naming %s", tt.cfg, err, tt.field)
		}
	}
}

// getPath is get for another path.
func getPath(h http.Handler, remote, path string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestOperatorRoutesApart: with Config.Operator, health checks and
// scrapes count against their own rate: a client that used up the
// public pages' allowance still passes its probes, and probes never use
// up the public allowance. Each class has its own headers; with
// NoOperatorLimit the probes are not limited at all.
func TestOperatorRoutesApart(t *testing.T) {
	operator := func(r *http.Request) bool { return r.URL.Path == "/readyz" || r.URL.Path == "/metrics" }
	_, h, clk, served := setup(t, edge.Config{
		Rate:         gcra.Rate{Limit: 2, Period: time.Minute},
		Operator:     operator,
		OperatorRate: gcra.Rate{Limit: 3, Period: time.Minute},
	})
	const client = "192.0.2.30:4000"
	type step struct {
		path      string
		status    int
		limit     string
		remaining string
	}
	for i, st := range []step{
		0: {"/oauth/callback", 200, "2", "1"},
		1: {"/oauth/callback", 200, "2", "0"},
		2: {"/oauth/callback", 429, "2", "0"},
		3: {"/readyz", 200, "3", "2"}, // the public pages are used up, the probe passes
		4: {"/metrics", 200, "3", "1"},
		5: {"/readyz", 200, "3", "0"},
		6: {"/readyz", 429, "3", "0"},
		7: {"/oauth/callback", 429, "2", "0"},
	} {
		w := getPath(h, client, st.path)
		if w.Code != st.status || w.Header().Get("RateLimit-Limit") != st.limit || w.Header().Get("RateLimit-Remaining") != st.remaining {
			t.Errorf("step %d: %s: %d limit %q remaining %q, want %d %s %s", i, st.path, w.Code,
				w.Header().Get("RateLimit-Limit"), w.Header().Get("RateLimit-Remaining"), st.status, st.limit, st.remaining)
		}
	}
	if *served != 5 {
		t.Errorf("handler served %d requests, want 5", *served)
	}
	// Probes first, on a fresh client: the public allowance stays whole.
	clk.Advance(time.Hour)
	for range 3 {
		getPath(h, client, "/readyz")
	}
	if w := getPath(h, client, "/"); w.Code != 200 || w.Header().Get("RateLimit-Remaining") != "1" {
		t.Errorf("public page after 3 probes: %d remaining %q, want 200 1", w.Code, w.Header().Get("RateLimit-Remaining"))
	}

	_, h, _, served = setup(t, edge.Config{Rate: gcra.Rate{Limit: 1, Period: time.Hour}, Operator: operator, NoOperatorLimit: true})
	for i := range 50 {
		if w := getPath(h, client, "/metrics"); w.Code != 200 || w.Header().Get("RateLimit-Limit") != "" {
			t.Fatalf("unlimited probe %d: %d, RateLimit-Limit %q", i, w.Code, w.Header().Get("RateLimit-Limit"))
		}
	}
	if w := getPath(h, client, "/"); w.Code != 200 {
		t.Errorf("public page after unlimited probes: %d", w.Code)
	}
	if w := getPath(h, client, "/"); w.Code != 429 {
		t.Errorf("second public page: %d, want 429", w.Code)
	}
	if *served != 51 {
		t.Errorf("handler served %d requests, want 51", *served)
	}
}

// TestOperatorRateValidated: a bad OperatorRate is refused by name.
func TestOperatorRateValidated(t *testing.T) {
	_, err := edge.New(edge.Config{OperatorRate: gcra.Rate{Limit: -1, Period: time.Minute}})
	if err == nil || !strings.Contains(err.Error(), "Config.OperatorRate") {
		t.Fatalf("New: %v, want an error naming Config.OperatorRate", err)
	}
}

// TestWallClockSteps: the rates run on monotonic time. The wall clock set
// back an hour locks out none of the clients just allowed, the health
// probes included; set forward a day, it lets no client through before
// its allowance has come back in the time that actually passed.
func TestWallClockSteps(t *testing.T) {
	_, h, clk, _ := setup(t, edge.Config{
		Rate:         gcra.Rate{Limit: 3, Period: time.Minute},
		Operator:     func(r *http.Request) bool { return r.URL.Path == "/readyz" },
		OperatorRate: gcra.Rate{Limit: 2, Period: time.Minute},
	})
	const client, probe = "192.0.2.40:1000", "10.0.0.9:2000"
	type step struct {
		remote, path string
		status       int
		remaining    string
	}
	check := func(when string, steps ...step) {
		t.Helper()
		for i, st := range steps {
			w := getPath(h, st.remote, st.path)
			if w.Code != st.status || w.Header().Get("RateLimit-Remaining") != st.remaining {
				t.Errorf("%s, step %d: %s %s: %d remaining %q, want %d %s", when, i, st.remote, st.path,
					w.Code, w.Header().Get("RateLimit-Remaining"), st.status, st.remaining)
			}
		}
	}
	check("before the steps",
		step{client, "/oauth/callback", 200, "2"},
		step{probe, "/readyz", 200, "1"},
	)

	clk.Advance(time.Second)
	clk.Step(-time.Hour)
	check("wall clock set back an hour",
		step{client, "/oauth/callback", 200, "1"},
		step{client, "/oauth/callback", 200, "0"},
		step{probe, "/readyz", 200, "0"},
		step{client, "/oauth/callback", 429, "0"},
	)

	// A unit comes back every 20 s to the client, every 30 s to the
	// probe: the client's first at 20 s, the probe's at 30 s. A day's
	// step forward brings none back sooner.
	clk.Advance(18 * time.Second)
	clk.Step(24 * time.Hour)
	check("wall clock set forward a day, 19 s in",
		step{client, "/oauth/callback", 429, "0"},
		step{probe, "/readyz", 429, "0"},
	)
	clk.Advance(time.Second)
	check("20 s in",
		step{client, "/oauth/callback", 200, "0"},
		step{client, "/oauth/callback", 429, "0"},
		step{probe, "/readyz", 429, "0"},
	)
	clk.Advance(10 * time.Second)
	check("30 s in",
		step{probe, "/readyz", 200, "0"},
	)
}

// TestRefusalsCounted: every 429 is counted by the limit that refused
// it, in pinbot_http_refusals_total; requests let through are not.
func TestRefusalsCounted(t *testing.T) {
	m := metrics.New()
	_, h, _, _ := setup(t, edge.Config{
		Rate:         gcra.Rate{Limit: 1, Period: time.Hour},
		Operator:     func(r *http.Request) bool { return r.URL.Path == "/readyz" },
		OperatorRate: gcra.Rate{Limit: 1, Period: time.Hour},
		Refused:      m.HTTPRefused,
	})
	const client = "192.0.2.50:1000"
	for i, st := range []struct {
		path   string
		status int
	}{
		{"/oauth/callback", 200},
		{"/oauth/callback", 429},
		{"/", 429},
		{"/readyz", 200},
		{"/readyz", 429},
	} {
		if w := getPath(h, client, st.path); w.Code != st.status {
			t.Fatalf("step %d: %s: %d, want %d", i, st.path, w.Code, st.status)
		}
	}
	s := metricstest.ScrapeHandler(t, m.Handler())
	for _, tt := range []struct {
		reason string
		want   float64
	}{{edge.RefusedRate, 2}, {edge.RefusedOperatorRate, 1}, {"other", 0}} {
		if got := s.Get("pinbot_http_refusals_total", "reason", tt.reason); got != tt.want {
			t.Errorf("pinbot_http_refusals_total{reason=%q} = %v, want %v", tt.reason, got, tt.want)
		}
	}
	for _, r := range []string{edge.RefusedRate, edge.RefusedOperatorRate} {
		if !slices.Contains(metrics.HTTPRefusals, r) {
			t.Errorf("reason %q is not in metrics.HTTPRefusals", r)
		}
	}
}
