package discordtest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// TestGlobalRateLimitHasNoBucket: Discord's documented global 429
// (https://discord.com/developers/docs/topics/rate-limits, "Example Global
// Rate Limit Response") carries Retry-After, X-RateLimit-Global and
// X-RateLimit-Scope: global, and no per-route bucket headers. The
// stand-in's must too: disgo v0.19.6's own rate limiter reads a 429 only
// when it has a bucket header, so with one added, tests would see a global
// limit honoured that production would not honour.
func TestGlobalRateLimitHasNoBucket(t *testing.T) {
	s := newServer(t)
	if err := s.Inject(discordtest.RouteGetCurrentUser, 1, discordtest.Fault{
		Status: http.StatusTooManyRequests, RetryAfter: 1500 * time.Millisecond, Global: true,
	}); err != nil {
		t.Fatal(err)
	}
	r := call(t, s, "GET", "/users/@me", nil, true)
	if r.status != http.StatusTooManyRequests || r.header.Get("X-RateLimit-Global") == "" {
		t.Fatalf("status %d headers %v; want a global 429", r.status, r.header)
	}
	for _, h := range []string{"X-RateLimit-Bucket", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-RateLimit-Reset-After"} {
		if v := r.header.Get(h); v != "" {
			t.Errorf("global 429 carries %s: %q; Discord's global 429 has no per-route bucket headers", h, v)
		}
	}
}
