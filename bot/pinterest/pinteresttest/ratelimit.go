package pinteresttest

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// RateLimit is a limit the Server enforces and announces, as Pinterest
// does: every answer to the API and the token endpoint carries
// X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (whole
// seconds until the window ends, rounded up), and a request over the
// limit is answered 429 with CodeRateLimited and Retry-After, without
// running the endpoint.
//
// Windows are fixed: a key's window starts with its first request and
// lasts Window on the Server's clock; a refused request does not count.
type RateLimit struct {
	// Limit is how many requests a key may make in a window; at least 1.
	Limit int
	// Window is the window's length; at least a millisecond.
	Window time.Duration
	// PerApp counts every request together, as Pinterest's Trial access
	// does (so many requests a day per app). Otherwise each account
	// counts apart per endpoint (method and path), as Standard access's
	// per-user categories do, and the token endpoint, which carries no
	// user, counts for the app. Every board's pin listing counts as one
	// endpoint, PathBoardPins.
	PerApp bool
}

// WithRateLimit makes the Server enforce rl; see RateLimit. It panics if
// rl.Limit < 1 or rl.Window < 1ms, as a test set up wrong.
func WithRateLimit(rl RateLimit) Option {
	if rl.Limit < 1 || rl.Window < time.Millisecond {
		panic("pinteresttest: WithRateLimit: Limit must be at least 1 and Window at least 1ms")
	}
	return func(s *Server) { s.limit = &rl }
}

// SetRateLimit replaces the limit the Server enforces, or removes it
// (nil); counts start afresh.
func (s *Server) SetRateLimit(rl *RateLimit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rl != nil {
		c := *rl
		rl = &c
	}
	s.limit = rl
	s.quotas = nil
}

// quotaKey is what a request counts against.
type quotaKey struct {
	account string // "" for the app
	op      string // method and path; "" for every request
}

// quotaWindow is one key's current window.
type quotaWindow struct {
	start time.Time
	used  int
}

// takeQuotaLocked counts r against its key under the Server's limit and
// returns the rate-limit headers of its answer, and whether it is
// refused. With no limit set it returns nil, false.
func (s *Server) takeQuotaLocked(r *http.Request) (http.Header, bool) {
	rl := s.limit
	if rl == nil || r.URL.Path == PathAuthorize {
		return nil, false
	}
	key := quotaKey{}
	if !rl.PerApp {
		key.op = r.Method + " " + endpoint(r.URL.Path)
		if r.URL.Path != PathToken {
			key.account = s.bearerAccountLocked(r)
		}
	}
	if s.quotas == nil {
		s.quotas = make(map[quotaKey]*quotaWindow)
	}
	now := s.now()
	w := s.quotas[key]
	if w == nil || !now.Before(w.start.Add(rl.Window)) {
		w = &quotaWindow{start: now}
		s.quotas[key] = w
	}
	refused := w.used >= rl.Limit
	if !refused {
		w.used++
	}
	reset := int64(math.Ceil(w.start.Add(rl.Window).Sub(now).Seconds()))
	h := http.Header{}
	h.Set("X-Ratelimit-Limit", strconv.Itoa(rl.Limit))
	h.Set("X-Ratelimit-Remaining", strconv.Itoa(rl.Limit-w.used))
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(reset, 10))
	if refused {
		h.Set("Retry-After", strconv.FormatInt(reset, 10))
	}
	return h, refused
}

// rateLimitedResult is the answer to a request over the limit.
func rateLimitedResult() result {
	return errorResult(http.StatusTooManyRequests, CodeRateLimited,
		"This request exceeded a rate limit. This can happen if the client exceeds one of the published rate limits within a short time window.")
}
