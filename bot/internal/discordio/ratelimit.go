package discordio

import (
	"github.com/pinbot/pinbot/internal/logctx"

	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/disgoorg/disgo/rest"
	"github.com/rs/zerolog"
)

// restLimiter is the bot's rate limiter for Discord's REST API, in place
// of disgo's. disgo's (v0.19.6) reads a 429 only when it carries a bucket
// header, which Discord's global 429 does not: a global limit was retried
// at once, up to ten times, and a bot that keeps hitting 429s gets its IP
// banned by Cloudflare. disgo's also applied a global limit to interaction
// callbacks, which Discord exempts from it: acknowledgements then waited
// past their three seconds. And its cleanup goroutine never stopped.
//
// Requests of one bucket (route and major parameters, as disgo compiles
// them) go one at a time; a bucket with no request left waits for its
// reset, and a 429 on a route holds that bucket for its Retry-After. A
// global 429 (X-RateLimit-Global or X-RateLimit-Scope: global) holds every
// request except those on an interaction token, which Discord exempts,
// until Retry-After has passed. A 429 without a Via header comes from
// Cloudflare, which bans the whole address: it holds every request,
// interactions included.
//
// With a share function (setShare), the limiter also keeps this
// process's requests that the global limit binds (every one but those
// on an interaction token) within its share of that limit: at most
// GlobalShare(processes) of them in any shareSpan, so that processes
// sharing a token stay under Discord's limit together. Without one it
// sends as fast as the buckets allow.
type restLimiter struct {
	log zerolog.Logger
	now func() time.Time
	// processes returns how many processes share the token now; nil:
	// no share of the global limit is kept.
	processes func() int

	mu         sync.Mutex
	buckets    map[string]*restBucket
	global     time.Time // no request outside interactions before this
	cloudflare time.Time // no request at all before this
	epoch      uint64    // raised by Reset: bucket limits of older epochs are void
	lastPrune  time.Time
	// sent holds when each recent request the global limit binds was let
	// through, oldest first, within the last shareSpan (processes set).
	sent []time.Time
}

// restBucket is one Discord rate-limit bucket. sem (capacity 1) is held
// by the request in flight; remaining, reset and epoch are read and
// written only by the holder of sem.
type restBucket struct {
	sem       chan struct{}
	remaining int // -1: unknown
	reset     time.Time
	epoch     uint64
	used      time.Time // last Wait, for pruning (guarded by restLimiter.mu)
}

// restPruneAge is how long an unused bucket is kept. Interaction tokens
// are major parameters, so every interaction makes buckets of its own.
const restPruneAge = time.Minute

var _ rest.RateLimiter = (*restLimiter)(nil)

func newRESTLimiter(log zerolog.Logger) *restLimiter {
	return &restLimiter{log: log, now: time.Now, buckets: make(map[string]*restBucket)}
}

// MaxRetries is how many times disgo sends a request that got 429s.
func (l *restLimiter) MaxRetries() int { return rest.MaxRetries }

// Close implements rest.RateLimiter; the limiter runs no goroutine and
// holds nothing that requests in flight wait for.
func (l *restLimiter) Close(context.Context) {}

// Reset forgets every limit. Buckets stay (requests in flight hold them);
// their limits are voided as each is next taken.
func (l *restLimiter) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.global, l.cloudflare = time.Time{}, time.Time{}
	l.epoch++
}

// bucketKey names ep's bucket: its method, route and major parameters.
func bucketKey(ep *rest.CompiledEndpoint) string {
	return ep.Endpoint.Method + " " + ep.Endpoint.Route + " " + ep.MajorParams
}

// interactionRoute reports whether ep acts on an interaction token: the
// callback, the original response and followups. Discord does not hold
// those to the global limit.
func interactionRoute(ep *rest.CompiledEndpoint) bool {
	return strings.Contains(ep.Endpoint.Route, "{interaction.token}")
}

// bucket returns ep's bucket, creating it, after pruning the buckets left
// unused for restPruneAge whose limits are over.
func (l *restLimiter) bucket(ep *rest.CompiledEndpoint) *restBucket {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastPrune) >= restPruneAge {
		l.lastPrune = now
		for k, b := range l.buckets {
			if now.Sub(b.used) < restPruneAge {
				continue
			}
			select {
			case b.sem <- struct{}{}: // not in use now
				if !b.reset.After(now) {
					delete(l.buckets, k)
				}
				// A Wait that found b before it went takes it, sees it is
				// no longer current and starts over.
				<-b.sem
			default:
			}
		}
	}
	k := bucketKey(ep)
	b := l.buckets[k]
	if b == nil {
		b = &restBucket{sem: make(chan struct{}, 1), remaining: -1, epoch: l.epoch}
		l.buckets[k] = b
	}
	b.used = now
	return b
}

// Wait takes ep's bucket and waits until a request may be sent on it,
// checking every limit again after each wait: another request may have
// met a global limit meanwhile. It gives up at once, with an error, when
// ctx ends first or will end before the wait does.
func (l *restLimiter) Wait(ctx context.Context, ep *rest.CompiledEndpoint) error {
	var (
		b                  *restBucket
		global, cloudflare time.Time
		epoch              uint64
	)
	for b == nil {
		c := l.bucket(ep)
		select {
		case c.sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		// A pruned bucket may have been replaced meanwhile: take the
		// current one.
		l.mu.Lock()
		if l.buckets[bucketKey(ep)] == c {
			b = c
			global, cloudflare, epoch = l.global, l.cloudflare, l.epoch
		}
		l.mu.Unlock()
		if b == nil {
			<-c.sem
		}
	}
	for waited := false; ; waited = true {
		if waited {
			l.mu.Lock()
			global, cloudflare, epoch = l.global, l.cloudflare, l.epoch
			l.mu.Unlock()
		}
		if b.epoch != epoch {
			b.remaining, b.reset, b.epoch = -1, time.Time{}, epoch
		}
		now := l.now()
		var until time.Time
		if b.remaining == 0 && b.reset.After(now) {
			until = b.reset
		}
		if !interactionRoute(ep) && global.After(until) {
			until = global
		}
		if cloudflare.After(until) {
			until = cloudflare
		}
		if !until.After(now) {
			if interactionRoute(ep) {
				return nil
			}
			next, ok := l.takeShare(now)
			if ok {
				return nil
			}
			until = next
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < until.Sub(now) {
			<-b.sem
			return fmt.Errorf("discordio: %s %s is rate limited for %v, beyond the request's deadline: %w",
				ep.Endpoint.Method, ep.Endpoint.Route, until.Sub(now).Round(time.Millisecond), context.DeadlineExceeded)
		}
		t := time.NewTimer(until.Sub(now))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			<-b.sem
			return ctx.Err()
		}
	}
}

// Unlock records what rs says of ep's bucket (rs nil: no response) and
// releases the bucket, which the caller's Wait took: holding it, no prune
// or other request can have replaced it. Malformed headers are logged,
// not returned: the request itself went through.
func (l *restLimiter) Unlock(ep *rest.CompiledEndpoint, rs *http.Response) error {
	l.mu.Lock()
	b := l.buckets[bucketKey(ep)]
	l.mu.Unlock()
	if b == nil {
		return nil
	}
	defer func() { <-b.sem }()
	if rs == nil {
		return nil
	}
	// The request's context carries the log IDs of the work it was for.
	log := &l.log
	if rs.Request != nil {
		log = logctx.Logger(rs.Request.Context(), l.log)
	}
	now := l.now()
	h := rs.Header
	if rs.StatusCode == http.StatusTooManyRequests {
		wait, ok := headerSeconds(h, "Retry-After")
		if !ok {
			wait, ok = headerSeconds(h, "X-RateLimit-Reset-After")
		}
		if !ok {
			wait = time.Second
			log.Warn().Str("route", ep.Endpoint.Route).Msg("Discord answered 429 without a usable Retry-After; waiting one second")
		}
		until := now.Add(wait)
		// The request itself is retried by disgo: whatever the scope, its
		// bucket waits.
		b.remaining, b.reset = 0, until
		global := strings.EqualFold(h.Get("X-RateLimit-Global"), "true") || h.Get("X-RateLimit-Scope") == "global"
		cloudflare := h.Get("Via") == ""
		switch {
		case cloudflare:
			l.mu.Lock()
			if until.After(l.cloudflare) {
				l.cloudflare = until
			}
			l.mu.Unlock()
			log.Warn().Dur("retry_after", wait).Msg("Cloudflare refused a request (429 without Via); holding every request")
		case global:
			l.mu.Lock()
			if until.After(l.global) {
				l.global = until
			}
			l.mu.Unlock()
			log.Warn().Dur("retry_after", wait).
				Msg("Discord's global rate limit reached; holding requests other than interaction responses")
		default:
			log.Warn().Str("route", ep.Endpoint.Route).Str("scope", h.Get("X-RateLimit-Scope")).Dur("retry_after", wait).
				Msg("Discord rate limit reached on a route")
		}
		return nil
	}
	if v := h.Get("X-RateLimit-Remaining"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			log.Warn().Str("route", ep.Endpoint.Route).Str("remaining", v).Msg("malformed X-RateLimit-Remaining ignored")
		} else {
			b.remaining = n
		}
	}
	if wait, ok := headerSeconds(h, "X-RateLimit-Reset-After"); ok {
		b.reset = now.Add(wait)
	}
	return nil
}

// headerSeconds reads header name as a number of seconds (integer or
// fractional, as Discord sends them); ok is false when it is absent,
// malformed, negative or absurd (over a day).
func headerSeconds(h http.Header, name string) (time.Duration, bool) {
	v := h.Get(name)
	if v == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 86400 {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

// Discord's global REST limit: GlobalLimit requests per GlobalWindow per
// bot token, whatever process sends them. Requests on an interaction
// token (the callback, the original response, followups) are not bound
// by it.
const (
	GlobalLimit  = 50
	GlobalWindow = time.Second
)

// GlobalShare returns how many requests the global limit binds one of
// processes sharing a bot token may send per GlobalWindow: GlobalLimit
// divided among them, rounded down, at least 1.
func GlobalShare(processes int) int {
	return max(GlobalLimit/max(processes, 1), 1)
}

// shareSpan is how long a request counts against the process's share:
// GlobalWindow and a tenth more, for the network's jitter (a request let
// through here reaches Discord a little later, by a delay that varies,
// so that requests spaced by GlobalWindow here may arrive closer).
const shareSpan = GlobalWindow + GlobalWindow/10

// setShare has the limiter keep its requests bound by the global limit
// within GlobalShare(processes()), read at each request: processes
// returns how many processes share the token now. Call it before the
// first request.
func (l *restLimiter) setShare(processes func() int) { l.processes = processes }

// takeShare lets a request bound by the global limit go at now if the
// process's share allows it, recording it; otherwise it returns when the
// oldest request in the way stops counting. Without a share function
// every request goes.
func (l *restLimiter) takeShare(now time.Time) (time.Time, bool) {
	if l.processes == nil {
		return time.Time{}, true
	}
	share := GlobalShare(l.processes())
	l.mu.Lock()
	defer l.mu.Unlock()
	i := 0
	for i < len(l.sent) && !l.sent[i].Add(shareSpan).After(now) {
		i++
	}
	l.sent = l.sent[i:]
	if len(l.sent) >= share {
		// The share may have shrunk below what the window holds: wait
		// until no more than share-1 remain.
		return l.sent[len(l.sent)-share].Add(shareSpan), false
	}
	l.sent = append(l.sent, now)
	return time.Time{}, true
}
