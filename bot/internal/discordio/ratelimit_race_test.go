package discordio

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/disgoorg/disgo/rest"
	"github.com/rs/zerolog"
)

// fakeClockLimiter returns a restLimiter whose clock reads *clk (Unix ns),
// safe to move while other goroutines read it.
func fakeClockLimiter(clk *atomic.Int64) *restLimiter {
	l := newRESTLimiter(zerolog.Nop())
	l.now = func() time.Time { return time.Unix(0, clk.Load()).UTC() }
	return l
}

// limiterT0 is the instant the fake clock of these tests starts at.
var limiterT0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// limiterAtT0 returns a fakeClockLimiter and its clock, set to limiterT0.
func limiterAtT0() (*restLimiter, *atomic.Int64) {
	clk := new(atomic.Int64)
	clk.Store(limiterT0.UnixNano())
	return fakeClockLimiter(clk), clk
}

// TestRESTLimiterQueuedRequestSeesNewGlobal: a request queued on a busy
// bucket while the request ahead of it gets Discord's global 429 must wait
// out that limit once the bucket is handed over, not go out at once into
// another 429 (counted toward Cloudflare's invalid-request ban).
func TestRESTLimiterQueuedRequestSeesNewGlobal(t *testing.T) {
	t0 := limiterT0
	l, clk := limiterAtT0()
	msg := rest.GetMessage.Compile(nil, 1, 2)

	// A holds the bucket, its request in flight.
	if err := l.Wait(context.Background(), msg); err != nil {
		t.Fatal(err)
	}

	// B queues behind A.
	t1 := t0.Add(time.Millisecond)
	clk.Store(t1.UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- l.Wait(ctx, msg) }()
	// Until B has looked the bucket up (and read the global limit with it).
	for {
		l.mu.Lock()
		queued := l.buckets[bucketKey(msg)].used.Equal(t1)
		l.mu.Unlock()
		if queued {
			break
		}
		runtime.Gosched()
	}

	// A's answer: Discord's global 429, 30 s.
	if err := l.Unlock(msg, response(http.StatusTooManyRequests, map[string]string{
		"Retry-After": "30", "X-RateLimit-Global": "true", "X-RateLimit-Scope": "global", "Via": "1.1 google",
	})); err != nil {
		t.Fatal(err)
	}
	err := <-done
	if err == nil {
		_ = l.Unlock(msg, nil)
		t.Fatalf("queued request let through during a 30 s global limit (deadline 5 s); want DeadlineExceeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued request: %v, want DeadlineExceeded", err)
	}
}

// TestRESTLimiterSleeperSeesNewGlobal: a request sleeping until its
// bucket's reset looks at the global limit again when it wakes: a global
// 429 met meanwhile by another route holds it too.
func TestRESTLimiterSleeperSeesNewGlobal(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var clk atomic.Int64
	clk.Store(t0.UnixNano())
	var calls atomic.Int64
	l := newRESTLimiter(zerolog.Nop())
	l.now = func() time.Time { calls.Add(1); return time.Unix(0, clk.Load()).UTC() }
	msg := rest.GetMessage.Compile(nil, 1, 2)
	other := rest.GetChannel.Compile(nil, 3)

	// msg's bucket is spent for 300 ms.
	if err := l.Wait(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(msg, response(http.StatusOK, map[string]string{
		"X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": "0.3",
	})); err != nil {
		t.Fatal(err)
	}
	// other is in flight.
	if err := l.Wait(context.Background(), other); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before := calls.Load()
	done := make(chan error, 1)
	go func() { done <- l.Wait(ctx, msg) }()
	// Wait reads the clock twice (bucket lookup, then the check) before
	// it sleeps until the reset.
	for calls.Load() < before+2 {
		runtime.Gosched()
	}
	// other meets the global limit, 60 s, while msg's request sleeps.
	if err := l.Unlock(other, response(http.StatusTooManyRequests, map[string]string{
		"Retry-After": "60", "X-RateLimit-Global": "true", "X-RateLimit-Scope": "global", "Via": "1.1 google",
	})); err != nil {
		t.Fatal(err)
	}
	err := <-done
	if err == nil {
		_ = l.Unlock(msg, nil)
		t.Fatalf("request let through after its bucket reset, during a 60 s global limit (deadline 10 s); want DeadlineExceeded")
	}
}

// TestRESTLimiterPruneKeepsPendingReset: a bucket unused for a minute is
// pruned only once its reset has passed: after a route 429 with a long
// Retry-After, the next request on it must still wait, not go out into
// another 429.
func TestRESTLimiterPruneKeepsPendingReset(t *testing.T) {
	t0 := limiterT0
	l, clk := limiterAtT0()
	msg := rest.GetMessage.Compile(nil, 1, 2)
	if err := l.Wait(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	// A route 429: 300 s on this bucket only.
	if err := l.Unlock(msg, response(http.StatusTooManyRequests, map[string]string{
		"Retry-After": "300", "X-RateLimit-Scope": "user", "Via": "1.1 google",
	})); err != nil {
		t.Fatal(err)
	}
	// 61 s later another route's request prunes idle buckets.
	clk.Store(t0.Add(61 * time.Second).UnixNano())
	other := rest.GetChannel.Compile(nil, 3)
	if err := l.Wait(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	_ = l.Unlock(other, response(http.StatusOK, nil))

	clk.Store(t0.Add(62 * time.Second).UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := l.Wait(ctx, msg)
	if err == nil {
		_ = l.Unlock(msg, nil)
		t.Fatalf("request sent 62 s into a 300 s route limit: the pruned bucket forgot its reset")
	}
}

// TestRESTLimiterCloudflareHoldsInteractions: a Cloudflare 429 (no Via
// header) bans the whole address, interaction requests included: disgo's
// retry of an interaction request must wait it out, not go out at once, up
// to ten times in a row, each an invalid request lengthening the ban.
func TestRESTLimiterCloudflareHoldsInteractions(t *testing.T) {
	l, _ := limiterAtT0()
	cb := rest.CreateInteractionResponse.Compile(nil, 3, "tok")
	if err := l.Wait(context.Background(), cb); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(cb, response(http.StatusTooManyRequests, map[string]string{"Retry-After": "20"})); err != nil {
		t.Fatal(err)
	}
	// disgo retries the same request.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := l.Wait(ctx, cb); err == nil {
		_ = l.Unlock(cb, nil)
		t.Fatalf("retry after a Cloudflare 429 (Retry-After 20 s) let through at once")
	}
}

// TestRESTLimiterReset: Reset voids every limit, with a request in flight
// too, and keeps one request at a time per bucket.
func TestRESTLimiterReset(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := limiterAt(&now)
	msg := rest.GetMessage.Compile(nil, 1, 2)
	short := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), time.Second)
	}
	if err := l.Wait(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(msg, response(http.StatusOK, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": "30"})); err != nil {
		t.Fatal(err)
	}
	other := rest.GetChannel.Compile(nil, 5)
	if err := l.Wait(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(other, response(http.StatusTooManyRequests, map[string]string{"Retry-After": "30", "X-RateLimit-Global": "true", "Via": "1.1 google"})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := short()
	if err := l.Wait(ctx, msg); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("before Reset: %v, want the bucket limited", err)
	}
	cancel()

	l.Reset()
	ctx, cancel = short()
	defer cancel()
	if err := l.Wait(ctx, msg); err != nil {
		t.Fatalf("after Reset: %v, want no limit left", err)
	}
	// That request is in flight while Reset runs again: the next request
	// on its bucket still waits its turn.
	l.Reset()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if err := l.Wait(ctx2, msg); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second request on a bucket in use: %v, want it to wait its turn", err)
	}
	if err := l.Unlock(msg, response(http.StatusOK, nil)); err != nil {
		t.Fatal(err)
	}
	ctx3, cancel3 := short()
	defer cancel3()
	if err := l.Wait(ctx3, msg); err != nil {
		t.Fatalf("once the request in flight is answered: %v", err)
	}
	if err := l.Unlock(msg, nil); err != nil {
		t.Fatal(err)
	}
}
