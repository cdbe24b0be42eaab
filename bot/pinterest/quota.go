package pinterest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// opToken names requests to the token endpoint in the app's pauses: a
// refresh and a code exchange count alike.
const opToken = "POST /oauth/token"

// pause is how long Pinterest said it would refuse a kind of request.
type pause struct {
	until time.Time
	spam  bool // set by a spam block's 429
}

// pauses hold, per kind of request (its method and path, as Pinterest
// counts each endpoint under a category of its own), the instant until
// which Pinterest said it would refuse it: a 429, or an answer whose
// x-ratelimit-remaining was 0. Each Session has its own (Pinterest's
// limits are per user and app) and the Client has the app's. The zero
// value is ready; pauses are safe for simultaneous use.
type pauses struct {
	mu sync.Mutex
	m  map[string]pause
}

// set pauses op until p.until, unless a longer pause is in force.
func (ps *pauses) set(op string, p pause) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m == nil {
		ps.m = make(map[string]pause)
	}
	if cur, ok := ps.m[op]; !ok || p.until.After(cur.until) {
		ps.m[op] = p
	}
}

// get returns op's pause in force at now, forgetting one that has ended.
func (ps *pauses) get(op string, now time.Time) (pause, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.m[op]
	if !ok {
		return pause{}, false
	}
	if !p.until.After(now) {
		delete(ps.m, op)
		return pause{}, false
	}
	return p, true
}

// pausesOf returns the pauses a request on s counts against: the
// account's, or the app's when Config.AppRateLimits is set or there is
// no account (token requests).
func (c *Client) pausesOf(s *Session) *pauses {
	if s == nil || c.cfg.AppRateLimits {
		return &c.appPauses
	}
	return &s.pauses
}

// observe reads the rate-limit headers of an answer to op that was not a
// 429: when x-ratelimit-remaining says no request is left, op is paused
// until the reset they announce (see resetAt; RateLimitWait when they
// announce none), so that the next one is held back before Pinterest
// refuses it.
func (c *Client) observe(ctx context.Context, ps *pauses, op string, h http.Header) {
	v := strings.TrimSpace(h.Get("X-Ratelimit-Remaining"))
	if v == "" {
		return
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || n >= 1 {
		return
	}
	now := c.cfg.Now()
	until := resetAt(h, now, c.cfg.RateLimitWait)
	ps.set(op, pause{until: until})
	c.logger(ctx).Info().Str("op", op).Str("limit", h.Get("X-Ratelimit-Limit")).Time("reset_at", until).
		Msg("pinterest rate limit spent; holding requests back until its reset")
}

// admit holds back a request for op while Pinterest said it would refuse
// it. A request that is safe to repeat (canWait) waits the pause out
// when it ends within Retry.MaxWait; any other fails at once with a
// *RateLimitError whose Preempted is set, having sent nothing.
func (c *Client) admit(ctx context.Context, ps *pauses, op string, canWait bool) error {
	now := c.cfg.Now()
	p, ok := ps.get(op, now)
	if !ok {
		return nil
	}
	wait := p.until.Sub(now)
	if canWait && wait <= c.cfg.Retry.MaxWait {
		c.logger(ctx).Debug().Str("op", op).Dur("wait", wait).Msg("pinterest request waits for its rate limit's reset")
		if err := c.cfg.Retry.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("pinterest: %s: waiting for Pinterest's rate limit to reset: %w", op, err)
		}
		return nil
	}
	c.logger(ctx).Debug().Str("op", op).Time("reset_at", p.until).Msg("pinterest request held back: rate limit spent")
	return &RateLimitError{ResetAt: p.until, Wait: wait, Spam: p.spam, Preempted: true, op: op}
}

// headerSinkKey is the context key of a headerSink.
type headerSinkKey struct{}

// headerSink receives the headers of the answer to a request whose
// context carries it: token requests, whose answers the oauth2 package
// does not hand back.
type headerSink struct {
	mu sync.Mutex
	h  http.Header
}

func (s *headerSink) header() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h
}

// sinkTransport hands every answer's headers to the headerSink in its
// request's context, if any.
type sinkTransport struct{ base http.RoundTripper }

func (t *sinkTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		if s, ok := req.Context().Value(headerSinkKey{}).(*headerSink); ok {
			s.mu.Lock()
			s.h = resp.Header.Clone()
			s.mu.Unlock()
		}
	}
	return resp, err
}
