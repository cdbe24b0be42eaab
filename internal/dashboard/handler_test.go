package dashboard

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pinbot/pinbot/actors"
)

// get sends a GET for path through the dashboard mounted before a 404
// handler, with the Authorization header auth when not "".
func get(t *testing.T, h http.Handler, method, path, auth string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAuthorized: only the exact token, as a Bearer credential, passes;
// the scheme's case does not matter (RFC 7235), nor surrounding spaces.
func TestAuthorized(t *testing.T) {
	f := newFixture(t)
	for i, c := range []struct {
		auth string
		ok   bool
	}{
		{"", false},
		{"Bearer " + testToken, true},
		{"bearer " + testToken, true},
		{"BEARER  " + testToken + " ", true},
		{"Bearer", false},
		{"Bearer ", false},
		{testToken, false},
		{"Basic " + testToken, false},
		{"Bearer " + testToken[:len(testToken)-1], false},       // a prefix
		{"Bearer " + testToken + "x", false},                    // longer
		{"Bearer " + testToken[:len(testToken)-1] + "X", false}, // same length, last byte differs
		{"Bearer " + strings.ToUpper(testToken), false},
		{"Bearer " + testToken + " " + testToken, false},
	} {
		req := httptest.NewRequest(http.MethodGet, Path, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		if got := f.dash.authorized(req); got != c.ok {
			t.Errorf("step %d: authorized(%q) = %v want %v", i, c.auth, got, c.ok)
		}
	}
}

// TestRefusals: without the token or with a wrong one the dashboard and
// its data answer 401 with the Bearer challenge and show nothing; other
// paths under /admin are 404, other methods 405; every answer carries
// the strict headers.
func TestRefusals(t *testing.T) {
	f := newFixture(t)
	h := f.dash.Mount(http404())
	for i, c := range []struct {
		method, path, auth string
		status             int
		challenge          string
	}{
		{"GET", Path, "", 401, `Bearer realm="pinbot admin"`},
		{"GET", Path, "Bearer wrong", 401, `Bearer realm="pinbot admin", error="invalid_token"`},
		{"GET", Path, "Basic " + testToken, 401, `Bearer realm="pinbot admin"`},
		{"GET", DataPath, "", 401, `Bearer realm="pinbot admin"`},
		{"GET", DataPath, "Bearer wrong", 401, `Bearer realm="pinbot admin", error="invalid_token"`},
		{"GET", Path, "Bearer " + testToken, 200, ""},
		{"HEAD", Path, "Bearer " + testToken, 200, ""},
		{"GET", DataPath, "Bearer " + testToken, 200, ""},
		{"GET", LoginPath, "", 200, ""},
		{"GET", StaticPrefix + "admin.js", "", 200, ""},
		{"GET", StaticPrefix + "admin.css", "", 200, ""},
		{"GET", StaticPrefix + "nothing.js", "", 404, ""},
		{"GET", Path + "/other", "Bearer " + testToken, 404, ""},
		{"POST", Path, "Bearer " + testToken, 405, ""},
		{"DELETE", LoginPath, "", 405, ""},
	} {
		resp := get(t, h, c.method, c.path, c.auth)
		text := body(t, resp)
		if resp.StatusCode != c.status {
			t.Errorf("step %d: %s %s (%q) = %d want %d", i, c.method, c.path, c.auth, resp.StatusCode, c.status)
		}
		if got := resp.Header.Get("WWW-Authenticate"); got != c.challenge {
			t.Errorf("step %d: WWW-Authenticate %q want %q", i, got, c.challenge)
		}
		if c.status == 401 && strings.Contains(text, "acct-") {
			t.Errorf("step %d: a refusal shows accounts: %s", i, text)
		}
		for k, v := range securityHeaders {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("step %d: %s %q want %q", i, k, got, v)
			}
		}
	}
	// Other paths go to the listener's handler.
	if resp := get(t, h, "GET", "/administrator", ""); resp.StatusCode != 404 || resp.Header.Get("X-Frame-Options") != "" {
		t.Errorf("/administrator: %d, headers %v", resp.StatusCode, resp.Header)
	}
}

// TestPagesHaveNoInlineScript: the CSP forbids inline scripts and
// styles, so the pages hold none.
func TestPagesHaveNoInlineScript(t *testing.T) {
	f := newFixture(t)
	h := f.dash.Mount(http404())
	for _, p := range []struct{ path, auth string }{{Path, "Bearer " + testToken}, {LoginPath, ""}, {Path, ""}} {
		html := body(t, get(t, h, "GET", p.path, p.auth))
		for _, bad := range []string{"<script>", "style=", " onclick=", " onload=", "<style"} {
			if strings.Contains(html, bad) {
				t.Errorf("%s holds %q", p.path, bad)
			}
		}
	}
}

// TestDataJSON: /admin/data.json carries the same data.
func TestDataJSON(t *testing.T) {
	f := newFixture(t)
	resp := get(t, f.dash.Mount(http404()), "GET", DataPath, "Bearer "+testToken)
	var d Data
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if len(d.Busiest) == 0 || d.Busiest[0].Account != "acct-alice-art" || d.Busiest[0].Used != 98 ||
		d.Metrics.Failures.Total != 17 || d.Waiting != 2 {
		t.Fatalf("data: %+v", d)
	}
}

// TestCache: within the TTL every request shows one assembly.
func TestCache(t *testing.T) {
	f := newFixture(t)
	now := monday
	f.dash.now = func() time.Time { return now }
	first := f.dash.Data(t.Context())
	f.pin(t, "acct-erin", 1)
	if again := f.dash.Data(t.Context()); again != first {
		t.Fatal("assembled again within the TTL")
	}
	now = now.Add(DefaultTTL)
	if again := f.dash.Data(t.Context()); again == first || again.Busiest[4].Used != 4 {
		t.Fatalf("not assembled again after the TTL: %+v", again.Busiest)
	}
}

// TestNew: the token and the engine are required.
func TestNew(t *testing.T) {
	if _, err := New(Config{Engine: &actors.Engine{}}); err == nil || !strings.Contains(err.Error(), "Token") {
		t.Errorf("no token: %v", err)
	}
	if _, err := New(Config{Token: []byte("x")}); err == nil || !strings.Contains(err.Error(), "Engine") {
		t.Errorf("no engine: %v", err)
	}
}

// TestNoMetrics: without the metric families the page says "no data"
// where each would be, and nothing fails.
func TestNoMetrics(t *testing.T) {
	f := newFixture(t)
	for _, g := range []prometheus.Gatherer{nil, prometheus.NewRegistry()} {
		d, err := New(Config{Token: []byte(testToken), Engine: f.eng, Gatherer: g})
		if err != nil {
			t.Fatal(err)
		}
		resp := get(t, d.Mount(http404()), "GET", Path, "Bearer "+testToken)
		html := body(t, resp)
		if resp.StatusCode != 200 || strings.Count(html, "no data") != 7 || strings.Contains(html, `class="problem"`) {
			t.Errorf("gatherer %v: %d, %d \"no data\":\n%s", g, resp.StatusCode, strings.Count(html, "no data"), html)
		}
		if !strings.Contains(html, "98/100") {
			t.Errorf("gatherer %v: the engine's part is missing", g)
		}
	}
}

// TestFailuresListOnlyWhatHappened: the failures card leaves out the
// reasons whose counters are still zero, and says so when every one is.
func TestFailuresListOnlyWhatHappened(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricPinFailures, Help: "h"}, []string{"reason"})
	reg.MustRegister(failures)
	for _, r := range []string{"timeout", "no_image", "held"} {
		failures.WithLabelValues(r) // present, at zero
	}
	page := func() string {
		t.Helper()
		d, err := New(Config{Token: []byte(testToken), Engine: f.eng, Gatherer: reg})
		if err != nil {
			t.Fatal(err)
		}
		return body(t, get(t, d.Mount(http404()), "GET", Path, "Bearer "+testToken))
	}
	html := page()
	if !strings.Contains(html, "No failures since pinbot started.") || strings.Contains(html, "<td>timeout</td>") {
		t.Errorf("all at zero: the card lists reasons or lacks its sentence:\n%s", html)
	}
	failures.WithLabelValues("timeout").Add(2)
	html = page()
	if !strings.Contains(html, "<td>timeout</td>") || strings.Contains(html, "<td>no_image</td>") || strings.Contains(html, "<td>held</td>") ||
		strings.Contains(html, "No failures since") {
		t.Errorf("one reason counted: want timeout alone:\n%s", html)
	}
}
