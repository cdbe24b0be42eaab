package discordtest

import (
	"net/http"
	"strings"
	"time"
)

// Discord's global REST limit: 50 requests per second per bot token,
// across every connection and process using it (developers docs,
// topics/rate-limits, "Global Rate Limit"). Pass them to
// WithGlobalRateLimit.
const (
	GlobalLimit  = 50
	GlobalWindow = time.Second
)

// WithGlobalRateLimit makes the stand-in enforce Discord's global limit:
// a request authorized by a bot token ("Bot …") that finds limit
// requests of that token within the window before it (on the server's
// clock), whatever connection they came on, is answered Discord's global
// 429: {"message": "You are being rate limited.", "retry_after": the wait
// until the oldest of them stops counting, "global": true}, Retry-After
// (whole seconds, rounded up), X-RateLimit-Global: true and
// X-RateLimit-Scope: global, without bucket headers. Requests on an
// interaction token (the callback and the interaction webhooks) are
// exempt, as Discord exempts them, and so are requests without a bot
// token. Every request it lets through counts, whatever its answer;
// injected faults and its own 429s do not. Like WithChannelRateLimit's,
// the limit is a sliding log. GlobalRateLimited counts its 429s. Off by
// default (limit 0).
func WithGlobalRateLimit(limit int, window time.Duration) Option {
	return func(c *config) {
		c.globalLimit = limit
		c.globalWindow = window
	}
}

// globalLimitState is the requests counted per bot token (sliding logs,
// oldest first) and the 429s given, guarded by Server.mu.
type globalLimitState struct {
	logs    map[string][]time.Time
	refused int
}

// GlobalRateLimited returns how many requests the global limit of
// WithGlobalRateLimit refused with a 429 (injected faults not counted).
func (s *Server) GlobalRateLimited() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.glog.refused
}

// globalLimitLocked counts a request against its bot token's global
// limit, or returns the global 429 that refuses it. The caller holds
// s.mu.
func (s *Server) globalLimitLocked(rt *route, r *http.Request, now time.Time) (restResponse, http.Header, bool) {
	limit, window := s.cfg.globalLimit, s.cfg.globalWindow
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bot ")
	if limit < 1 || window <= 0 || !ok || strings.Contains(rt.pattern.raw, "{interaction.token}") {
		return restResponse{}, nil, false
	}
	if s.glog.logs == nil {
		s.glog.logs = make(map[string][]time.Time)
	}
	log := s.glog.logs[token]
	i := 0
	for i < len(log) && !log[i].Add(window).After(now) {
		i++
	}
	log = log[i:]
	if len(log) >= limit {
		s.glog.logs[token] = log
		s.glog.refused++
		wait := log[len(log)-limit].Add(window).Sub(now)
		rs, h := s.faultResponseLocked(rt, nil, &Fault{Status: http.StatusTooManyRequests, RetryAfter: wait, Global: true}, now)
		return rs, h, true
	}
	s.glog.logs[token] = append(log, now)
	return restResponse{}, nil, false
}
