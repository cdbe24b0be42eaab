package metrics

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The upstreams the bot talks to over HTTP: the values of the upstream
// label.
const (
	Pinterest = "pinterest"
	Discord   = "discord"
)

// The values of pinbot_upstream_requests_total's class label: the status
// class of the answer, 429 on its own, and error for a request that got
// no answer (a failed dial, a timeout, a broken connection).
var classes = [...]string{"2xx", "3xx", "4xx", "429", "5xx", "error"}

const (
	class2xx = iota
	class3xx
	class4xx
	class429
	class5xx
	classError
)

// maxRoutes bounds the routes counted per upstream: routes beyond it are
// counted as "other". The bot calls about a dozen.
const maxRoutes = 64

// Buckets of the upstream histograms: a request may take up to its 30 s
// timeout; a 429 may ask to wait from a second to an hour.
var (
	requestBuckets    = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
	retryAfterBuckets = []float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600}
)

func (m *Metrics) initUpstream() {
	m.upstreamRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_upstream_requests_total",
		Help: "HTTP requests to Pinterest and Discord by route (a template: IDs and tokens replaced) and class of answer (2xx, 3xx, 4xx, 429, 5xx, or error when none came).",
	}, []string{"upstream", "route", "class"})
	m.upstreamDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pinbot_upstream_request_duration_seconds",
		Help:    "Time from sending an HTTP request to Pinterest or Discord to its answer's headers (or its failure).",
		Buckets: requestBuckets,
	}, []string{"upstream", "route"})
	m.retryAfter = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pinbot_upstream_retry_after_seconds",
		Help:    "Waits asked for by 429 answers (Retry-After, or the rate limit's reset).",
		Buckets: retryAfterBuckets,
	}, []string{"upstream"})
	m.reg.MustRegister(m.upstreamRequests, m.upstreamDuration, m.retryAfter)
}

// RetryWait reads the wait a 429 answer asks for from its headers,
// received at now; ok is false when they name none.
type RetryWait func(h http.Header, now time.Time) (wait time.Duration, ok bool)

// Transport returns base (http.DefaultTransport if nil) wrapped so that
// every request through it is counted in pinbot_upstream_requests_total
// and timed in pinbot_upstream_request_duration_seconds under upstream
// (Pinterest or Discord) and the request's route, and every 429 answer's
// wait, read by wait (DiscordRetryWait if nil), is observed in
// pinbot_upstream_retry_after_seconds. The route is the method and the
// path with every ID and token replaced (see Route).
func (m *Metrics) Transport(upstream string, base http.RoundTripper, wait RetryWait) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if wait == nil {
		wait = DiscordRetryWait
	}
	return &transport{
		base:     base,
		m:        m,
		upstream: upstream,
		wait:     wait,
		retry:    m.retryAfter.WithLabelValues(upstream),
		routes:   make(map[string]*routeMetrics),
	}
}

// transport counts and times the requests of one upstream.
type transport struct {
	base     http.RoundTripper
	m        *Metrics
	upstream string
	wait     RetryWait
	retry    prometheus.Observer

	mu     sync.RWMutex
	routes map[string]*routeMetrics
}

// routeMetrics are one route's resolved collectors.
type routeMetrics struct {
	requests [len(classes)]prometheus.Counter
	duration prometheus.Observer
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.base.RoundTrip(req)
	took := time.Since(start)
	rm := t.route(Route(req.Method, req.URL.Path))
	rm.duration.Observe(took.Seconds())
	if err != nil {
		rm.requests[classError].Inc()
		return resp, err
	}
	rm.requests[classOf(resp.StatusCode)].Inc()
	if resp.StatusCode == http.StatusTooManyRequests {
		if w, ok := t.wait(resp.Header, time.Now()); ok {
			t.retry.Observe(w.Seconds())
		}
	}
	return resp, nil
}

// route returns the collectors of route, resolving them on its first
// request; past maxRoutes routes, those of "other".
func (t *transport) route(route string) *routeMetrics {
	t.mu.RLock()
	rm, ok := t.routes[route]
	t.mu.RUnlock()
	if ok {
		return rm
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if rm, ok := t.routes[route]; ok {
		return rm
	}
	if len(t.routes) >= maxRoutes {
		route = other
		if rm, ok := t.routes[route]; ok {
			return rm
		}
	}
	rm = &routeMetrics{duration: t.m.upstreamDuration.WithLabelValues(t.upstream, route)}
	for i, c := range classes {
		rm.requests[i] = t.m.upstreamRequests.WithLabelValues(t.upstream, route, c)
	}
	t.routes[route] = rm
	return rm
}

// classOf returns the class of an answer's status code.
func classOf(status int) int {
	switch {
	case status == http.StatusTooManyRequests:
		return class429
	case status >= 500:
		return class5xx
	case status >= 400:
		return class4xx
	case status >= 300:
		return class3xx
	}
	return class2xx
}

// Route returns the route template of a request: the method, a space and
// the path, without Discord's "/api/v<n>" prefix, every ID (all digits)
// replaced by {id}, the token after /interactions/{id}/ and /webhooks/{id}/
// by {token}, and any other segment that is not a plain word (lowercase
// letters, "_", "-", an optional leading "@", or a version such as "v5")
// by {param}. So "POST /v5/pins" and "GET /channels/{id}/messages/{id}".
func Route(method, path string) string {
	var segs []string
	if p := strings.Trim(path, "/"); p != "" {
		segs = strings.Split(p, "/")
	}
	if len(segs) >= 2 && segs[0] == "api" && isVersion(segs[1]) {
		segs = segs[2:]
	}
	var b strings.Builder
	b.WriteString(method)
	b.WriteByte(' ')
	if len(segs) == 0 {
		b.WriteByte('/')
	}
	for i, s := range segs {
		b.WriteByte('/')
		switch {
		case i >= 2 && (segs[i-2] == "interactions" || segs[i-2] == "webhooks"):
			b.WriteString("{token}")
		case s != "" && strings.Trim(s, "0123456789") == "":
			b.WriteString("{id}")
		case isVersion(s) || isWord(s):
			b.WriteString(s)
		default:
			b.WriteString("{param}")
		}
	}
	return b.String()
}

// isVersion reports whether s is an API version such as "v5" or "v10".
func isVersion(s string) bool {
	return len(s) >= 2 && s[0] == 'v' && strings.Trim(s[1:], "0123456789") == ""
}

// isWord reports whether s is a plain word of a route: lowercase letters,
// "_" and "-", with an optional leading "@" (Discord's @me, @original).
func isWord(s string) bool {
	s = strings.TrimPrefix(s, "@")
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// DiscordRetryWait reads a 429's wait as Discord sends it: Retry-After
// (seconds, possibly fractional, or an HTTP date), else
// X-RateLimit-Reset-After (seconds).
func DiscordRetryWait(h http.Header, now time.Time) (time.Duration, bool) {
	if d, ok := seconds(h.Get("Retry-After")); ok {
		return d, true
	}
	if t, err := http.ParseTime(h.Get("Retry-After")); err == nil && t.After(now) {
		return t.Sub(now), true
	}
	return seconds(h.Get("X-RateLimit-Reset-After"))
}

// seconds parses a non-negative, finite number of seconds.
func seconds(v string) (time.Duration, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) || f > 1e9 {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}
