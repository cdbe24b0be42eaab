package discordio

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/disgoorg/disgo/rest"
	"github.com/rs/zerolog"
)

// limiterAt returns a restLimiter whose clock reads *now.
func limiterAt(now *time.Time) *restLimiter {
	l := newRESTLimiter(zerolog.Nop())
	l.now = func() time.Time { return *now }
	return l
}

func response(status int, h map[string]string) *http.Response {
	rs := &http.Response{StatusCode: status, Header: http.Header{}}
	for k, v := range h {
		rs.Header.Set(k, v)
	}
	return rs
}

// TestRESTLimiterGlobalSparesInteractions: after a global 429, requests on
// an interaction token go at once (Discord exempts them), and others wait
// for Retry-After, failing at once when their deadline comes first.
func TestRESTLimiterGlobalSparesInteractions(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := limiterAt(&now)
	msg := rest.GetMessage.Compile(nil, 1, 2)
	if err := l.Wait(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	// Discord's global 429: no bucket headers.
	if err := l.Unlock(msg, response(http.StatusTooManyRequests, map[string]string{
		"Retry-After": "30", "X-RateLimit-Global": "true", "X-RateLimit-Scope": "global", "Via": "1.1 google",
	})); err != nil {
		t.Fatal(err)
	}

	for _, ep := range []*rest.CompiledEndpoint{
		rest.CreateInteractionResponse.Compile(nil, 3, "tok"),
		rest.UpdateInteractionResponse.Compile(nil, 4, "tok"),
		rest.CreateFollowupMessage.Compile(nil, 4, "tok"),
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := l.Wait(ctx, ep)
		cancel()
		if err != nil {
			t.Fatalf("%s during a global limit: %v; interaction requests are exempt", ep.Endpoint.Route, err)
		}
		if err := l.Unlock(ep, response(http.StatusNoContent, nil)); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	err := l.Wait(ctx, rest.GetChannel.Compile(nil, 5))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("another route during a 30 s global limit, 1 s deadline: %v, want DeadlineExceeded", err)
	}
	if waited := time.Since(start); waited > 500*time.Millisecond {
		t.Fatalf("waited %v before failing; a wait beyond the deadline must fail at once", waited)
	}
}

// TestRESTLimiterRouteLimit: a bucket with no request left waits for its
// reset, other buckets do not; a route 429 (with a Via header) limits only
// its bucket; a 429 without Via comes from Cloudflare and is global.
func TestRESTLimiterRouteLimit(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := limiterAt(&now)
	a := rest.GetMessage.Compile(nil, 1, 2)
	b := rest.GetMessage.Compile(nil, 9, 2) // another channel: another bucket
	mustWait := func(ep *rest.CompiledEndpoint) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := l.Wait(ctx, ep); err != nil {
			t.Fatalf("Wait(%s %s): %v", ep.Endpoint.Route, ep.MajorParams, err)
		}
	}
	mustBlock := func(ep *rest.CompiledEndpoint) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := l.Wait(ctx, ep); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait(%s %s) = %v, want it limited past its deadline", ep.Endpoint.Route, ep.MajorParams, err)
		}
	}

	mustWait(a)
	if err := l.Unlock(a, response(http.StatusOK, map[string]string{
		"X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": "30.5", "X-RateLimit-Bucket": "h",
	})); err != nil {
		t.Fatal(err)
	}
	mustBlock(a)
	mustWait(b)
	if err := l.Unlock(b, response(http.StatusTooManyRequests, map[string]string{
		"Retry-After": "20", "X-RateLimit-Scope": "user", "Via": "1.1 google",
	})); err != nil {
		t.Fatal(err)
	}
	mustBlock(b)
	c := rest.GetChannel.Compile(nil, 5)
	mustWait(c)

	now = now.Add(31 * time.Second) // both resets passed
	mustWait(a)
	if err := l.Unlock(a, response(http.StatusTooManyRequests, map[string]string{"Retry-After": "10"})); err != nil {
		t.Fatal(err) // no Via: Cloudflare
	}
	if err := l.Unlock(c, nil); err != nil {
		t.Fatal(err)
	}
	mustBlock(c)
	now = now.Add(11 * time.Second)
	mustWait(c)

	// Malformed headers are ignored, not errors: the request went through.
	if err := l.Unlock(c, response(http.StatusOK, map[string]string{"X-RateLimit-Remaining": "x", "X-RateLimit-Reset-After": "-3"})); err != nil {
		t.Fatalf("malformed headers: %v", err)
	}
	mustWait(c)
}

// TestRESTLimiterPrunesIdleBuckets: every interaction token makes buckets
// of its own; unused ones go after restPruneAge.
func TestRESTLimiterPrunesIdleBuckets(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := limiterAt(&now)
	for i := range 100 {
		ep := rest.CreateInteractionResponse.Compile(nil, i, "tok"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		if err := l.Wait(context.Background(), ep); err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ep, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(l.buckets); n != 100 {
		t.Fatalf("%d buckets, want 100", n)
	}
	now = now.Add(restPruneAge + time.Second)
	ep := rest.GetChannel.Compile(nil, 5)
	if err := l.Wait(context.Background(), ep); err != nil {
		t.Fatal(err)
	}
	if n := len(l.buckets); n != 1 {
		t.Fatalf("%d buckets after the idle ones aged, want 1 (the one in use)", n)
	}
	if err := l.Unlock(ep, nil); err != nil {
		t.Fatal(err)
	}
}

// TestGlobalShare: the global limit divided among the processes, rounded
// down, never below one request.
func TestGlobalShare(t *testing.T) {
	for _, c := range []struct{ processes, want int }{
		{0, 50}, {1, 50}, {2, 25}, {3, 16}, {7, 7}, {49, 1}, {50, 1}, {200, 1},
	} {
		if got := GlobalShare(c.processes); got != c.want {
			t.Errorf("GlobalShare(%d) = %d, want %d", c.processes, got, c.want)
		}
	}
}

// TestRESTLimiterShare: with a share function, the requests the global
// limit binds are let through up to the share of the processes sharing
// the token in any shareSpan, the share read again at every request as
// processes come and go; interaction responses are not held by it.
func TestRESTLimiterShare(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	processes := 3
	l := newRESTLimiter(zerolog.Nop())
	l.setShare(func() int { return processes })

	// run takes n requests at instant ms with the given processes, and
	// checks how many went and when the next one may.
	run := func(step, ms, procs, n, wantLet int, wantNext time.Time) {
		t.Helper()
		processes = procs
		let := 0
		var next time.Time
		for range n {
			if nx, ok := l.takeShare(at(ms)); ok {
				let++
			} else {
				next = nx
			}
		}
		if let != wantLet || !next.Equal(wantNext) {
			t.Errorf("step %d: %d let through, next at %v; want %d, next at %v", step, let, next, wantLet, wantNext)
		}
	}
	span := int(shareSpan / time.Millisecond)
	run(0, 0, 3, 20, 16, at(span))      // three processes: 16 each
	run(1, span-1, 3, 1, 0, at(span))   // not before the first expires
	run(2, span, 3, 20, 16, at(2*span)) // a whole share again
	run(3, 2*span, 1, 60, 50, at(3*span))
	// Five more processes join while the window holds 50: the share of
	// six (8) frees only once 43 of those 50 have expired.
	run(4, 2*span+10, 6, 1, 0, at(3*span))
	run(5, 3*span, 6, 10, 8, at(4*span))
	run(6, 4*span, 100, 3, 1, at(5*span)) // at least one each
	run(7, 5*span, 2, 30, 25, at(6*span))

	// Wait: with the share used up, another route fails at once when its
	// deadline comes before the share frees; interaction responses go.
	l = newRESTLimiter(zerolog.Nop())
	now := t0
	l.now = func() time.Time { return now }
	l.setShare(func() int { return 50 })
	msg := rest.GetMessage.Compile(nil, 1, 2)
	if err := l.Wait(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(msg, response(http.StatusOK, nil)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := l.Wait(ctx, rest.GetChannel.Compile(nil, 5)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second request within the span with a share of 1: %v, want DeadlineExceeded", err)
	}
	for _, ep := range []*rest.CompiledEndpoint{
		rest.CreateInteractionResponse.Compile(nil, 3, "tok"),
		rest.UpdateInteractionResponse.Compile(nil, 4, "tok"),
		rest.CreateFollowupMessage.Compile(nil, 4, "tok"),
	} {
		if err := l.Wait(ctx, ep); err != nil {
			t.Fatalf("%s with the share used up: %v; interaction responses are not bound by it", ep.Endpoint.Route, err)
		}
		if err := l.Unlock(ep, response(http.StatusNoContent, nil)); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(shareSpan)
	if err := l.Wait(ctx, rest.GetChannel.Compile(nil, 5)); err != nil {
		t.Fatalf("a request once the span passed: %v", err)
	}
}

// TestRESTLimiterNoShare: without a share function (one process), the
// limiter keeps no share: requests go as fast as their buckets allow.
func TestRESTLimiterNoShare(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := limiterAt(&now)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	for i := range 3 * GlobalLimit {
		ep := rest.GetChannel.Compile(nil, i)
		if err := l.Wait(ctx, ep); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if err := l.Unlock(ep, response(http.StatusOK, nil)); err != nil {
			t.Fatal(err)
		}
	}
}
