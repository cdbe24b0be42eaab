package bot

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// TestInteractionAckedAfterGlobal429: Discord exempts interaction
// endpoints from the global rate limit ("Interaction endpoints are not
// bound to the bot's Global Rate Limit", docs/topics/rate-limits). After a
// global 429 on another request, the interaction callback must go at once:
// held until a reset beyond the bot's 3-second ackTimeout, it would never
// be sent, and the user would get nothing. The rest of the work waits out
// the global limit (4 s here).
func TestInteractionAckedAfterGlobal429(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	m := w.addImages(w.channel.ID, 1, "")

	// Any bot request meets a global 429 (here the bot's own REST client
	// reading a message, as /pin does).
	if err := w.dc.Inject(discordtest.RouteGetMessage, 1, discordtest.Fault{
		Status: http.StatusTooManyRequests, RetryAfter: 4 * time.Second, Global: true,
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(w.ctx, 2*time.Second)
	_, _ = w.bot.api.Message(ctx, w.channel.ID, m.ID)
	cancel()

	in := w.interact(pinInvocation(alice, m.ID.String()))
	w.waitDone(in)
	rs := in.Responses()
	if lat, ok := in.FirstResponseLatency(); !ok || lat > ackTimeout {
		t.Fatalf("first response after %v (acknowledged: %v); want it within %v of the global 429", lat, ok, ackTimeout)
	}
	if len(rs) == 0 || rs[0].Kind != discordtest.KindCallback || !rs[0].OK() {
		t.Fatalf("interaction after a global 429: responses %+v; want it acknowledged (interaction callbacks are exempt from the global limit)", rs)
	}
}

// TestGlobal429IsWaitedOut: Discord's global 429 carries Retry-After,
// X-RateLimit-Global and X-RateLimit-Scope, and no X-RateLimit-Bucket
// (docs/topics/rate-limits, "Example Global Rate Limit Response"). The
// request must be sent again only after Retry-After: disgo v0.19.6's own
// limiter ignores such an answer and retries at once, as many as 10 times,
// requests Discord counts as invalid (10,000 per 10 minutes gets the IP
// banned by Cloudflare).
func TestGlobal429IsWaitedOut(t *testing.T) {
	var (
		mu       sync.Mutex
		arrivals []time.Time
	)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		n := len(arrivals)
		mu.Unlock()
		if n == 1 {
			rw.Header().Set("Content-Type", "application/json")
			rw.Header().Set("Retry-After", "1")
			rw.Header().Set("X-RateLimit-Global", "true")
			rw.Header().Set("X-RateLimit-Scope", "global")
			rw.Header().Set("Via", "1.1 google")
			rw.WriteHeader(http.StatusTooManyRequests)
			_, _ = rw.Write([]byte(`{"message":"You are being rate limited.","retry_after":0.8,"global":true}`))
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write([]byte(`{"id":"1200000000000000000","username":"pinbot","discriminator":"0","bot":true}`))
	}))
	defer srv.Close()

	b, err := New(Config{Token: "MTIwMDAwMDAwMDAwMDAwMDAwMA.x.y", APIURL: srv.URL, Engine: nonNilEngine, Links: nonNilLinks, Pinterest: nonNilPinterest})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.api.Original(ctx, "token"); err != nil {
		t.Fatalf("GET the original response: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(arrivals) < 2 {
		t.Fatalf("%d requests", len(arrivals))
	}
	if gap := arrivals[1].Sub(arrivals[0]); gap < 800*time.Millisecond {
		t.Fatalf("request repeated %v after a global 429 asking for 1 s: the global limit was ignored", gap)
	}
}

// TestNoRateLimiterGoroutineAfterClose: disgo's default REST rate limiter
// starts a cleanup goroutine that nothing stops; the bot's own limiter
// runs none, so a Bot built and closed leaves nothing running.
func TestNoRateLimiterGoroutineAfterClose(t *testing.T) {
	count := func() int {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		return strings.Count(string(buf), "rest.(*rateLimiterImpl).cleanup")
	}
	before := count()
	b, err := New(Config{Token: "MTIwMDAwMDAwMDAwMDAwMDAwMA.x.y", Engine: nonNilEngine, Links: nonNilLinks, Pinterest: nonNilPinterest})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := count(); after > before {
		t.Fatalf("%d REST rate limiter cleanup goroutines still running after Close (before New: %d)", after, before)
	}
}

// TestDeferralAnsweredLateStillReplied: the deferral reaches Discord and
// takes effect, but its answer is late (here held past the bot's 3-second
// ackTimeout). The bot must find out that the deferral took effect (the
// original response exists) and go on, or the user's "thinking…" message
// would never be edited. It takes ackTimeout of real time.
func TestDeferralAnsweredLateStillReplied(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	m := w.addImages(w.channel.ID, 1, "")
	if err := w.dc.Inject(discordtest.RouteInteractionCallback, 1, discordtest.Fault{Delay: ackTimeout + 500*time.Millisecond, AfterHandling: true}); err != nil {
		t.Fatal(err)
	}
	in := w.interact(pinInvocation(alice, m.ID.String()))
	w.waitDone(in)
	rs := in.Responses()
	if len(rs) == 0 || !rs[0].OK() {
		t.Fatalf("responses %+v; want the deferral to have taken effect", rs)
	}
	if len(rs) < 2 {
		t.Fatalf("the deferral took effect at Discord (callback status %d) but the bot never edited it: %d response(s); the user sees \"thinking…\" until the token expires", rs[0].Status, len(rs))
	}
}
