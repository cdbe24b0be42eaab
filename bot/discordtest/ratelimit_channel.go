package discordtest

import (
	"net/http"
	"strconv"
	"time"
)

// Discord's per-channel message rate, as commonly observed in the
// X-RateLimit headers of POST /channels/{id}/messages (Discord documents
// that the limit exists, not its numbers): 5 messages per 5 seconds per
// channel. Pass them to WithChannelRateLimit.
const (
	ChannelMessageLimit  = 5
	ChannelMessageWindow = 5 * time.Second
)

// WithChannelRateLimit makes the stand-in enforce a per-channel message
// limit on POST /channels/{id}/messages, guild and DM channels alike: a
// request that finds limit requests in the channel within the window
// before it (on the server's clock) is answered 429, as Discord answers
// a route's limit: retry_after (the wait until the oldest of them stops
// counting), Retry-After, X-RateLimit-Limit, -Remaining 0, -Reset,
// -Reset-After, -Bucket and -Scope "user". Every request answered
// otherwise counts, refusals (403, 404) included; injected faults do not.
// The limit is a sliding log: a request at T counts in [T, T+window), so
// any span of window holds at most limit of them, which is what any
// alignment of Discord's own windows allows at most. Answers of the route
// carry the channel's limit in their X-RateLimit headers. Off by default
// (limit 0): the stand-in then only reports its advisory limits (see
// WithRateLimit).
func WithChannelRateLimit(limit int, window time.Duration) Option {
	return func(c *config) {
		c.channelLimit = limit
		c.channelWindow = window
	}
}

// channelLimitState is the requests counted per channel (sliding logs,
// oldest first), guarded by Server.mu; made on first use.
type channelLimitState map[string][]time.Time

// channelLogLocked returns the live log of the channel a request to rt
// names, pruned at now, and false when no channel limit applies to it.
// The caller holds s.mu.
func (s *Server) channelLogLocked(rt *route, params map[string]string, now time.Time) ([]time.Time, string, bool) {
	if s.cfg.channelLimit < 1 || s.cfg.channelWindow <= 0 || rt.pattern.raw != RouteCreateMessage {
		return nil, "", false
	}
	if s.chlog == nil {
		s.chlog = channelLimitState{}
	}
	key := params["channel.id"]
	log := s.chlog[key]
	i := 0
	for i < len(log) && !log[i].Add(s.cfg.channelWindow).After(now) {
		i++
	}
	log = log[i:]
	if len(log) == 0 {
		delete(s.chlog, key)
		log = nil
	} else {
		s.chlog[key] = log
	}
	return log, key, true
}

// channelLimitLocked counts a request against its channel's limit, or
// returns the 429 that refuses it. The caller holds s.mu.
func (s *Server) channelLimitLocked(rt *route, params map[string]string, now time.Time) (restResponse, http.Header, bool) {
	log, key, ok := s.channelLogLocked(rt, params, now)
	if !ok {
		return restResponse{}, nil, false
	}
	if len(log) >= s.cfg.channelLimit {
		wait := log[len(log)-s.cfg.channelLimit].Add(s.cfg.channelWindow).Sub(now)
		rs, h := s.faultResponseLocked(rt, params, &Fault{Status: http.StatusTooManyRequests, RetryAfter: wait}, now)
		h.Set("X-RateLimit-Limit", strconv.Itoa(s.cfg.channelLimit))
		return rs, h, true
	}
	s.chlog[key] = append(log, now)
	return restResponse{}, nil, false
}

// channelLimitHeadersLocked sets h to the channel limit's state after a
// request it counted. The caller holds s.mu.
func (s *Server) channelLimitHeadersLocked(rt *route, params map[string]string, now time.Time, h http.Header) {
	log, _, ok := s.channelLogLocked(rt, params, now)
	if !ok || len(log) == 0 {
		return
	}
	reset := log[0].Add(s.cfg.channelWindow)
	h.Set("X-RateLimit-Limit", strconv.Itoa(s.cfg.channelLimit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(s.cfg.channelLimit-len(log), 0)))
	h.Set("X-RateLimit-Reset", formatSeconds(float64(reset.UnixMilli())/1000))
	h.Set("X-RateLimit-Reset-After", formatSeconds(reset.Sub(now).Seconds()))
}
