package discordtest_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// TestGlobalRateLimit: with WithGlobalRateLimit, a bot-token request
// that finds the limit's requests within the window before it is
// answered Discord's global 429, without bucket headers, with the wait
// until the oldest stops counting; interaction webhooks and requests
// without a bot token are not bound; the 429s do not count, and are
// counted.
func TestGlobalRateLimit(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, time.November, 16, 12, 0, 0, 0, time.UTC)
	clock := discordtest.NewManualClock(t0)
	s := newServer(t, discordtest.WithClock(clock.Now), discordtest.WithGlobalRateLimit(3, time.Second))
	original := "/webhooks/" + discordtest.DefaultApplicationID.String() + "/no-such-token/messages/@original"

	type body struct {
		Message    string  `json:"message"`
		RetryAfter float64 `json:"retry_after"`
		Global     bool    `json:"global"`
	}
	steps := []struct {
		at         time.Duration
		method     string
		path       string
		auth       bool
		status     int
		retryAfter float64
	}{
		{0, "GET", "/users/@me", true, 200, 0},
		{0, "GET", "/gateway/bot", true, 200, 0},
		{100 * time.Millisecond, "GET", "/users/@me", true, 200, 0},
		{100 * time.Millisecond, "GET", "/users/@me", true, 429, 0.9}, // 3: the first counts until 1 s
		{100 * time.Millisecond, "GET", "/gateway/bot", true, 429, 0.9},
		{100 * time.Millisecond, "PATCH", original, true, 401, 0},  // 5: interaction webhooks are exempt (an unknown token here)
		{100 * time.Millisecond, "GET", "/gateway", false, 200, 0}, // 6: no bot token
		{time.Second - time.Millisecond, "GET", "/users/@me", true, 429, 0.001},
		{time.Second, "GET", "/users/@me", true, 200, 0}, // 8: both sent at 0 stopped counting
		{time.Second, "GET", "/users/@me", true, 200, 0},
		{time.Second, "GET", "/users/@me", true, 429, 0.1}, // 10: the 429s did not count
		{1100 * time.Millisecond, "GET", "/users/@me", true, 200, 0},
	}
	for i, st := range steps {
		clock.Set(t0.Add(st.at))
		var patch any
		if st.method == "PATCH" {
			patch = map[string]any{"content": "x"}
		}
		r := call(t, s, st.method, st.path, patch, st.auth)
		if r.status != st.status {
			t.Fatalf("step %d: %s %s = %d %s, want %d", i, st.method, st.path, r.status, r.body, st.status)
		}
		if st.status != http.StatusTooManyRequests {
			continue
		}
		var b body
		if err := json.Unmarshal(r.body, &b); err != nil {
			t.Fatalf("step %d: 429 body %s: %v", i, r.body, err)
		}
		if b.Message != "You are being rate limited." || !b.Global || b.RetryAfter != st.retryAfter {
			t.Errorf("step %d: 429 body %+v, want Discord's global one with retry_after %v", i, b, st.retryAfter)
		}
		if r.header.Get("X-RateLimit-Global") != "true" || r.header.Get("X-RateLimit-Scope") != "global" || r.header.Get("Retry-After") != "1" {
			t.Errorf("step %d: 429 headers %v, want X-RateLimit-Global true, scope global, Retry-After 1", i, r.header)
		}
		for _, h := range []string{"X-RateLimit-Bucket", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset-After"} {
			if v := r.header.Get(h); v != "" {
				t.Errorf("step %d: the global 429 carries %s: %q", i, h, v)
			}
		}
	}
	if n := s.GlobalRateLimited(); n != 4 {
		t.Errorf("GlobalRateLimited() = %d, want 4", n)
	}
}

// TestGlobalRateLimitOff: without WithGlobalRateLimit, nothing is
// refused however many requests come at once.
func TestGlobalRateLimitOff(t *testing.T) {
	t.Parallel()
	s := newServer(t, discordtest.WithClock(discordtest.NewManualClock(time.Date(2026, time.November, 16, 12, 0, 0, 0, time.UTC)).Now))
	for i := range discordtest.GlobalLimit + 10 {
		if r := call(t, s, "GET", "/users/@me", nil, true); r.status != 200 {
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
	}
	if n := s.GlobalRateLimited(); n != 0 {
		t.Errorf("GlobalRateLimited() = %d, want 0", n)
	}
}
