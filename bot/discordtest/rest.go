package discordtest

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Routes of the REST API the stand-in serves, in the "METHOD /path" form
// Inject and WaitRequests take. Path parameters are named as in disgo's
// rest package, so a disgo Endpoint's Method and Route make a valid route.
const (
	RouteGetGateway          = "GET /gateway"
	RouteGetGatewayBot       = "GET /gateway/bot"
	RouteGetCurrentUser      = "GET /users/@me"
	RouteGetUser             = "GET /users/{user.id}"
	RouteGetBotApplication   = "GET /oauth2/applications/@me"
	RouteGetCurrentApp       = "GET /applications/@me"
	RouteGetGlobalCommands   = "GET /applications/{application.id}/commands"
	RouteSetGlobalCommands   = "PUT /applications/{application.id}/commands"
	RouteCreateGlobalCommand = "POST /applications/{application.id}/commands"
	RouteGetGuildCommands    = "GET /applications/{application.id}/guilds/{guild.id}/commands"
	RouteSetGuildCommands    = "PUT /applications/{application.id}/guilds/{guild.id}/commands"
	RouteCreateGuildCommand  = "POST /applications/{application.id}/guilds/{guild.id}/commands"
	RouteInteractionCallback = "POST /interactions/{interaction.id}/{interaction.token}/callback"
	RouteGetOriginal         = "GET /webhooks/{application.id}/{interaction.token}/messages/@original"
	RouteEditOriginal        = "PATCH /webhooks/{application.id}/{interaction.token}/messages/@original"
	RouteDeleteOriginal      = "DELETE /webhooks/{application.id}/{interaction.token}/messages/@original"
	RouteCreateFollowup      = "POST /webhooks/{application.id}/{interaction.token}"
	RouteGetFollowup         = "GET /webhooks/{application.id}/{interaction.token}/messages/{message.id}"
	RouteEditFollowup        = "PATCH /webhooks/{application.id}/{interaction.token}/messages/{message.id}"
	RouteDeleteFollowup      = "DELETE /webhooks/{application.id}/{interaction.token}/messages/{message.id}"
	RouteGetChannel          = "GET /channels/{channel.id}"
	RouteGetMessage          = "GET /channels/{channel.id}/messages/{message.id}"
	RouteCreateMessage       = "POST /channels/{channel.id}/messages"
	RouteGetGuild            = "GET /guilds/{guild.id}"
	RouteGetGuildChannels    = "GET /guilds/{guild.id}/channels"
	RouteGetRoles            = "GET /guilds/{guild.id}/roles"
	RouteGetMember           = "GET /guilds/{guild.id}/members/{user.id}"

	// RouteAny matches every request.
	RouteAny = "*"
)

const (
	// majorParameters are the path parameters that split a route into rate
	// limit buckets, as disgo names them.
	majorParameters = "guild.id:channel.id:webhook.id:interaction.token"
	// maxRequestBody bounds request bodies (Discord's upload limit is lower).
	maxRequestBody            = 26 << 20
	defaultRateLimitedMessage = "You are being rate limited."
)

// Fault makes the stand-in misbehave on a request. See Server.Inject.
type Fault struct {
	// Status is the HTTP status to answer with instead of handling the
	// request: 429, 403, 404, 5xx... Zero handles the request normally
	// (after Delay and Hold).
	Status int
	// Code and Message override the Discord error JSON. By default: 403
	// Missing Access (50001), 404 "404: Not Found" (0), 429 "You are being
	// rate limited.", otherwise "<status>: <status text>" (0).
	Code    int
	Message string
	// RetryAfter is the wait a 429 asks for: retry_after in the body (in
	// seconds, fractional) and X-RateLimit-Reset-After. The Retry-After
	// header is whole seconds, rounded up, as Discord sends it; disgo
	// v0.19.6 reads only that header, so any positive RetryAfter makes it
	// wait at least a second, and zero not at all.
	RetryAfter time.Duration
	// Global makes a 429 global: X-RateLimit-Global and scope "global".
	Global bool
	// Scope is the X-RateLimit-Scope of a non-global 429: "user" (default)
	// or "shared".
	Scope string
	// Delay holds the request this long, in real time, before handling it.
	Delay time.Duration
	// Hold, when not nil, holds the request until it is closed.
	Hold <-chan struct{}
	// AfterHandling moves Delay and Hold after the request took effect: the
	// interaction is acknowledged, say, but the client hears of it late.
	AfterHandling bool
}

// Request is a REST request the stand-in received.
type Request struct {
	// Method and Path are the request's, Path relative to APIURL.
	Method, Path string
	// Query is the raw query string.
	Query string
	// Route is the route that matched, such as RouteGetMessage, or empty.
	Route string
	// Status is the HTTP status answered, 0 while the request is being
	// handled or held.
	Status int
	// Code is the Discord error code of an error answer.
	Code int
	// At is when the request arrived, on the server's clock.
	At time.Time
	// Injected reports whether a Fault answered the request.
	Injected bool
}

// restState is the REST bookkeeping, guarded by Server.mu.
type restState struct {
	faults   []*faultRule
	buckets  map[string]*bucketState
	requests []Request
}

func newRestState() restState {
	return restState{buckets: map[string]*bucketState{}}
}

type faultRule struct {
	pattern   routePattern
	remaining int
	fault     Fault
}

type bucketState struct {
	resetAt time.Time
	used    int
}

// routePattern is a parsed "METHOD /path" route. A {name} or * segment
// matches any one segment, a final ** any rest; "*" alone matches all.
type routePattern struct {
	raw    string
	method string
	segs   []string
	any    bool
}

func parseRoute(raw string) (routePattern, error) {
	if strings.TrimSpace(raw) == RouteAny {
		return routePattern{raw: raw, any: true}, nil
	}
	method, path, ok := strings.Cut(strings.TrimSpace(raw), " ")
	if !ok || !strings.HasPrefix(path, "/") {
		return routePattern{}, fmt.Errorf("%w: route %q is not \"METHOD /path\"", ErrInvalid, raw)
	}
	return routePattern{raw: raw, method: strings.ToUpper(method), segs: splitPath(path)}, nil
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func isParam(seg string) bool {
	return seg == "*" || (strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}"))
}

// match reports whether a request matches, and the named parameters.
func (p routePattern) match(method string, segs []string) (map[string]string, bool) {
	if p.any {
		return nil, true
	}
	if p.method != "*" && p.method != method {
		return nil, false
	}
	params := map[string]string{}
	for i, ps := range p.segs {
		if ps == "**" && i == len(p.segs)-1 {
			return params, true
		}
		if i >= len(segs) {
			return nil, false
		}
		switch {
		case isParam(ps):
			if segs[i] == "" {
				return nil, false
			}
			params[strings.Trim(ps, "{}")] = segs[i]
		case ps != segs[i]:
			return nil, false
		}
	}
	return params, len(segs) == len(p.segs)
}

// Inject makes the next n requests matching route misbehave as f says.
// route is "METHOD /path" relative to APIURL, where {name} and * match any
// one segment (so RouteEditFollowup also matches @original) and a final **
// the rest, or "*" for every request; the Route* constants name the routes
// the stand-in serves. Rules apply in the order
// they were injected; a request consumes one use of the first rule it
// matches.
func (s *Server) Inject(route string, n int, f Fault) error {
	p, err := parseRoute(route)
	if err != nil {
		return err
	}
	if n < 1 {
		return fmt.Errorf("%w: Inject(n=%d)", ErrInvalid, n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rest.faults = append(s.rest.faults, &faultRule{pattern: p, remaining: n, fault: f})
	return nil
}

// Requests returns every REST request received, in order of arrival.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rest.requests)
}

// WaitRequests waits until at least n requests matching route (see Inject)
// arrived, and returns them. Requests still held by a Fault have Status 0.
func (s *Server) WaitRequests(ctx context.Context, route string, n int) ([]Request, error) {
	p, err := parseRoute(route)
	if err != nil {
		return nil, err
	}
	var out []Request
	err = s.waitFor(ctx, func() bool {
		out = out[:0]
		for _, rq := range s.rest.requests {
			if _, ok := p.match(rq.Method, splitPath(rq.Path)); ok {
				out = append(out, rq)
			}
		}
		return len(out) >= n
	})
	return slices.Clone(out), err
}

// takeFaultLocked consumes a use of the first fault rule matching a
// request. The caller holds s.mu.
func (s *Server) takeFaultLocked(method string, segs []string) *Fault {
	for i, rule := range s.rest.faults {
		if _, ok := rule.pattern.match(method, segs); !ok {
			continue
		}
		f := rule.fault
		rule.remaining--
		if rule.remaining == 0 {
			s.rest.faults = slices.Delete(s.rest.faults, i, i+1)
		}
		return &f
	}
	return nil
}

// restRequest is a request being handled.
type restRequest struct {
	r      *http.Request
	params map[string]string
	body   []byte
	query  url.Values
	now    time.Time
}

// restResponse is a handler's answer.
type restResponse struct {
	status int
	body   any
}

func okJSON(body any) restResponse  { return restResponse{status: http.StatusOK, body: body} }
func noContent() restResponse       { return restResponse{status: http.StatusNoContent} }
func created(body any) restResponse { return restResponse{status: http.StatusCreated, body: body} }
func apiErr(status, code int, msg string) restResponse {
	return restResponse{status: status, body: apiError{Message: msg, Code: code}}
}

// code returns the Discord error code of an error answer.
func (r restResponse) code() int {
	if e, ok := r.body.(apiError); ok {
		return e.Code
	}
	return 0
}

type handlerFunc func(s *Server, rq *restRequest) restResponse

type route struct {
	pattern routePattern
	botAuth bool
	handle  handlerFunc
}

// routes lists the REST API in matching order: literal segments before
// parameters that would also match them.
var routes = buildRoutes()

func buildRoutes() []route {
	table := []struct {
		route   string
		botAuth bool
		handle  handlerFunc
	}{
		{RouteGetGateway, false, (*Server).handleGetGateway},
		{RouteGetGatewayBot, true, (*Server).handleGetGatewayBot},
		{RouteGetCurrentUser, true, (*Server).handleGetCurrentUser},
		{RouteGetUser, true, (*Server).handleGetUser},
		{RouteGetBotApplication, true, (*Server).handleGetApplication},
		{RouteGetCurrentApp, true, (*Server).handleGetApplication},
		{RouteGetGlobalCommands, true, (*Server).handleGetCommands},
		{RouteSetGlobalCommands, true, (*Server).handleSetCommands},
		{RouteCreateGlobalCommand, true, (*Server).handleCreateCommand},
		{RouteGetGuildCommands, true, (*Server).handleGetCommands},
		{RouteSetGuildCommands, true, (*Server).handleSetCommands},
		{RouteCreateGuildCommand, true, (*Server).handleCreateCommand},
		{RouteInteractionCallback, false, (*Server).handleCallback},
		{RouteGetOriginal, false, (*Server).handleGetOriginal},
		{RouteEditOriginal, false, (*Server).handleEditOriginal},
		{RouteDeleteOriginal, false, (*Server).handleDeleteOriginal},
		{RouteCreateFollowup, false, (*Server).handleCreateFollowup},
		{RouteGetFollowup, false, (*Server).handleGetFollowup},
		{RouteEditFollowup, false, (*Server).handleEditFollowup},
		{RouteDeleteFollowup, false, (*Server).handleDeleteFollowup},
		{RouteGetChannel, true, (*Server).handleGetChannel},
		{RouteGetMessage, true, (*Server).handleGetMessage},
		{RouteCreateMessage, true, (*Server).handleCreateMessage},
		{RouteGetGuild, true, (*Server).handleGetGuild},
		{RouteGetGuildChannels, true, (*Server).handleGetGuildChannels},
		{RouteGetRoles, true, (*Server).handleGetRoles},
		{RouteGetMember, true, (*Server).handleGetMember},
		{RouteCreateDM, true, (*Server).handleCreateDM},
		{RouteOAuth2Token, false, (*Server).handleOAuth2Token},
	}
	out := make([]route, 0, len(table))
	for _, t := range table {
		p, err := parseRoute(t.route)
		if err != nil {
			continue
		}
		out = append(out, route{pattern: p, botAuth: t.botAuth, handle: t.handle})
	}
	return out
}

// findRoute returns the route serving a request, its parameters, and
// whether the path exists under another method.
func findRoute(method string, segs []string) (*route, map[string]string, bool) {
	pathExists := false
	for i := range routes {
		rt := &routes[i]
		if params, ok := rt.pattern.match(method, segs); ok {
			return rt, params, true
		}
		alt := rt.pattern
		alt.method = "*"
		if _, ok := alt.match(method, segs); ok {
			pathExists = true
		}
	}
	return nil, nil, pathExists
}

// serveREST answers a REST request: route, authenticate, apply any
// injected fault, handle, and send the rate limit headers.
func (s *Server) serveREST(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, apiPrefix)
	segs := splitPath(path)
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Message: "400: Bad Request"}, nil)
		return
	}

	rt, params, pathExists := findRoute(r.Method, segs)
	s.mu.Lock()
	rec := Request{Method: r.Method, Path: path, Query: r.URL.RawQuery, At: s.cfg.clock()}
	var fault *Fault
	if rt != nil {
		rec.Route = rt.pattern.raw
		fault = s.takeFaultLocked(r.Method, segs)
	}
	idx := len(s.rest.requests)
	s.rest.requests = append(s.rest.requests, rec)
	s.notifyLocked()
	s.mu.Unlock()

	switch {
	case rt == nil && pathExists:
		s.finishREST(w, idx, restResponse{status: http.StatusMethodNotAllowed, body: apiError{Message: "405: Method Not Allowed"}}, nil, false)
		return
	case rt == nil:
		s.finishREST(w, idx, apiErr(http.StatusNotFound, 0, "404: Not Found"), nil, false)
		return
	case rt.botAuth && !s.authorized(rt, r):
		s.finishREST(w, idx, apiErr(http.StatusUnauthorized, 0, "401: Unauthorized"), nil, false)
		return
	}

	if fault != nil && !fault.AfterHandling && !s.pause(r.Context(), fault) {
		abort(w)
		return
	}
	if fault != nil && fault.Status != 0 {
		s.mu.Lock()
		rs, h := s.faultResponseLocked(rt, params, fault, s.cfg.clock())
		s.mu.Unlock()
		s.finishREST(w, idx, rs, h, true)
		return
	}

	s.mu.Lock()
	now := s.cfg.clock()
	if rs, h, limited := s.globalLimitLocked(rt, r, now); limited {
		s.mu.Unlock()
		s.finishREST(w, idx, rs, h, false)
		return
	}
	if rs, h, limited := s.channelLimitLocked(rt, params, now); limited {
		s.mu.Unlock()
		s.finishREST(w, idx, rs, h, false)
		return
	}
	rq := &restRequest{r: r, params: params, body: body, query: r.URL.Query(), now: now}
	rs := rt.handle(s, rq)
	h := s.rateLimitHeadersLocked(rt, params, now)
	s.channelLimitHeadersLocked(rt, params, now, h)
	s.notifyLocked()
	s.mu.Unlock()

	if fault != nil && fault.AfterHandling && !s.pause(r.Context(), fault) {
		abort(w)
		return
	}
	s.finishREST(w, idx, rs, h, false)
}

// finishREST records the answer to request idx and writes it.
func (s *Server) finishREST(w http.ResponseWriter, idx int, rs restResponse, h http.Header, injected bool) {
	s.mu.Lock()
	rec := &s.rest.requests[idx]
	rec.Status, rec.Code, rec.Injected = rs.status, rs.code(), injected
	s.cfg.logger.Debug().Str("method", rec.Method).Str("path", rec.Path).Int("status", rec.Status).Msg("rest request")
	s.notifyLocked()
	s.mu.Unlock()
	writeJSON(w, rs.status, rs.body, h)
}

// abort drops a request's connection without an answer, as a server going
// down does.
func abort(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
		}
	}
}

// pause waits out a fault's Delay and Hold. It reports false if the client
// went away or the server closed meanwhile.
func (s *Server) pause(ctx context.Context, f *Fault) bool {
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		case <-s.done:
			return false
		}
	}
	if f.Hold != nil {
		select {
		case <-f.Hold:
		case <-ctx.Done():
			return false
		case <-s.done:
			return false
		}
	}
	return true
}

// faultResponseLocked builds the answer and headers of an injected error.
// The caller holds s.mu.
func (s *Server) faultResponseLocked(rt *route, params map[string]string, f *Fault, now time.Time) (restResponse, http.Header) {
	if f.Status != http.StatusTooManyRequests {
		h := s.rateLimitHeadersLocked(rt, params, now)
		code, msg := f.Code, f.Message
		if msg == "" {
			switch f.Status {
			case http.StatusForbidden:
				if code == 0 {
					code = 50001
				}
				msg = "Missing Access"
			default:
				msg = fmt.Sprintf("%d: %s", f.Status, http.StatusText(f.Status))
			}
		}
		return apiErr(f.Status, code, msg), h
	}

	retry := f.RetryAfter.Seconds()
	h := http.Header{}
	h.Set("Via", "1.1 google")
	h.Set("Retry-After", strconv.FormatInt(int64(math.Ceil(retry)), 10))
	scope := f.Scope
	if scope == "" {
		scope = "user"
	}
	if f.Global {
		// Discord's global 429 has no per-route bucket headers, only
		// Retry-After, X-RateLimit-Global and X-RateLimit-Scope
		// (developers docs, topics/rate-limits, "Example Global Rate
		// Limit Response").
		h.Set("X-RateLimit-Global", "true")
		scope = "global"
	} else {
		h.Set("X-RateLimit-Limit", strconv.Itoa(s.cfg.rateLimit))
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Reset", formatSeconds(float64(now.Add(f.RetryAfter).UnixMilli())/1000))
		h.Set("X-RateLimit-Reset-After", formatSeconds(retry))
		h.Set("X-RateLimit-Bucket", bucketHash(rt))
	}
	h.Set("X-RateLimit-Scope", scope)
	msg := f.Message
	if msg == "" {
		msg = defaultRateLimitedMessage
	}
	body := struct {
		Message    string  `json:"message"`
		RetryAfter float64 `json:"retry_after"`
		Global     bool    `json:"global"`
		Code       int     `json:"code,omitempty"`
	}{Message: msg, RetryAfter: math.Round(retry*1000) / 1000, Global: f.Global, Code: f.Code}
	return restResponse{status: http.StatusTooManyRequests, body: body}, h
}

// rateLimitHeadersLocked counts a request against its bucket and returns
// the X-RateLimit headers. The caller holds s.mu.
func (s *Server) rateLimitHeadersLocked(rt *route, params map[string]string, now time.Time) http.Header {
	key := rt.pattern.raw
	for _, name := range strings.Split(majorParameters, ":") {
		if v, ok := params[name]; ok {
			key += "+" + name + "=" + v
		}
	}
	b, ok := s.rest.buckets[key]
	if !ok {
		b = &bucketState{}
		s.rest.buckets[key] = b
	}
	if !now.Before(b.resetAt) {
		b.resetAt = now.Add(s.cfg.rateLimitWindow)
		b.used = 0
	}
	b.used++
	h := http.Header{}
	h.Set("Via", "1.1 google")
	h.Set("X-RateLimit-Limit", strconv.Itoa(s.cfg.rateLimit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(s.cfg.rateLimit-b.used, 0)))
	h.Set("X-RateLimit-Reset", formatSeconds(float64(b.resetAt.UnixMilli())/1000))
	h.Set("X-RateLimit-Reset-After", formatSeconds(b.resetAt.Sub(now).Seconds()))
	h.Set("X-RateLimit-Bucket", bucketHash(rt))
	return h
}

// bucketHash is the X-RateLimit-Bucket of a route: an opaque hash, the
// same for all major parameters, as Discord's.
func bucketHash(rt *route) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(rt.pattern.raw))
	return strconv.FormatUint(h.Sum64(), 16)
}

func formatSeconds(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// writeJSON writes a status, headers and JSON body; no body for 204.
func writeJSON(w http.ResponseWriter, status int, body any, h http.Header) {
	for k, vs := range h {
		w.Header()[k] = vs
	}
	if status == http.StatusNoContent || body == nil {
		w.WriteHeader(status)
		return
	}
	data, err := json.Marshal(body)
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"message":"500: Internal Server Error","code":0}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
