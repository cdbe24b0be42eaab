package clusterrpc

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Handler runs one method's calls: from is the caller's member id, body
// the request's. Its ctx ends when the caller's deadline passes, when the
// caller gives up, or after the server's longest timeout. Its error
// reaches the caller as a *RemoteError (see NewError and Refuse).
type Handler func(ctx context.Context, from string, body []byte) ([]byte, error)

// Server answers the calls of a cluster's members; see the package
// documentation. Register every method with Handle before Serve. A Server
// is safe for simultaneous use.
type Server struct {
	key         []byte
	self        string
	incarnation string
	clock       Clock
	log         zerolog.Logger
	refusalLog  zerolog.Logger
	opts        options
	replay      *replayCache
	srv         *http.Server

	mu       sync.RWMutex
	handlers map[string]Handler
	serving  bool
}

// NewServer returns a Server for member self, authenticating calls with
// key (at least MinKeySize bytes, shared by every member) and stamping
// answers with clock (nil: SystemClock). Refused requests are logged to
// log, tagged component=clusterrpc.
func NewServer(key []byte, self string, clock Clock, log zerolog.Logger, opts ...Option) (*Server, error) {
	if err := checkCommon(key, self); err != nil {
		return nil, err
	}
	o := buildOptions(opts)
	switch {
	case o.maxBody < 1:
		return nil, errors.New("clusterrpc: WithMaxBody: not positive")
	case o.window < time.Millisecond:
		return nil, errors.New("clusterrpc: WithWindow: shorter than 1ms")
	case o.replayLimit < 1:
		return nil, errors.New("clusterrpc: WithReplayLimit: not positive")
	case o.maxTimeout <= 0:
		return nil, errors.New("clusterrpc: WithMaxTimeout: not positive")
	case o.tls != nil && len(o.tls.Certificates) == 0 && o.tls.GetCertificate == nil && o.tls.GetConfigForClient == nil:
		return nil, errors.New("clusterrpc: WithTLS: the server's config has no certificate")
	}
	if clock == nil {
		clock = SystemClock{}
	}
	var inc [incarnationSize]byte
	_, _ = rand.Read(inc[:]) // never fails: crypto/rand crashes the program instead
	log = log.With().Str("component", "clusterrpc").Str("member", self).Logger()
	s := &Server{
		key:         macKey(key),
		self:        self,
		incarnation: b64.EncodeToString(inc[:]),
		clock:       clock,
		log:         log,
		// A flood of bad requests is logged a few lines a second; every
		// one is counted by the Observer.
		refusalLog: log.Sample(&zerolog.BurstSampler{Burst: 20, Period: time.Second}),
		opts:       o,
		replay:     newReplayCache(o.window, o.replayLimit),
		handlers:   make(map[string]Handler),
	}
	protocols := new(http.Protocols)
	if o.tls != nil {
		protocols.SetHTTP2(true)
	} else {
		protocols.SetUnencryptedHTTP2(true)
	}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		Protocols:         protocols,
		TLSConfig:         o.tls,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      o.maxTimeout + WriteMargin,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          stdLogger(log),
		// Drops a connection whose client vanished without closing it,
		// which ends its handlers' contexts.
		HTTP2: &http.HTTP2Config{SendPingTimeout: PingInterval, PingTimeout: PingTimeout},
	}
	return s, nil
}

// checkCommon checks the arguments a Server and a Client share.
func checkCommon(key []byte, self string) error {
	if len(key) < MinKeySize {
		return fmt.Errorf("clusterrpc: key of %d bytes: at least %d are needed", len(key), MinKeySize)
	}
	if !validID(self) {
		return fmt.Errorf("clusterrpc: member id %q: 1 to %d printable ASCII characters without spaces", self, maxIDLen)
	}
	return nil
}

// stdLogger bridges net/http's error log (TLS handshakes, broken
// connections) to log at debug level.
func stdLogger(l zerolog.Logger) *log.Logger {
	return log.New(debugWriter{l}, "", 0)
}

type debugWriter struct{ l zerolog.Logger }

func (w debugWriter) Write(p []byte) (int, error) {
	w.l.Debug().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}

// Incarnation returns the random id of this Server, which calls are bound
// to: a request made for another Server (an earlier process of the same
// member, or another member) is refused.
func (s *Server) Incarnation() string { return s.incarnation }

// Handle registers h for method: 1 to 64 letters, digits, '.', '_' or
// '-', starting with a letter or digit. It fails once Serve was called,
// so that a method unknown to a server stays unknown (a refusal as
// ErrNotSent relies on it), and for a method already registered.
func (s *Server) Handle(method string, h Handler) error {
	if !methodRE.MatchString(method) {
		return fmt.Errorf("clusterrpc: Handle(%q): invalid method name", method)
	}
	if h == nil {
		return fmt.Errorf("clusterrpc: Handle(%q): nil handler", method)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serving {
		return fmt.Errorf("clusterrpc: Handle(%q) after Serve", method)
	}
	if _, ok := s.handlers[method]; ok {
		return fmt.Errorf("clusterrpc: Handle(%q): already registered", method)
	}
	s.handlers[method] = h
	return nil
}

// Serve answers calls on l until Shutdown, then returns nil; any other
// error ends it early. It may be called for several listeners.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	s.serving = true
	s.mu.Unlock()
	var err error
	if s.opts.tls != nil {
		err = s.srv.ServeTLS(l, "", "")
	} else {
		err = s.srv.Serve(l)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting calls and waits for those in progress until
// ctx ends; then it closes every connection, which ends the handlers'
// contexts, and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	return err
}

// serveHTTP answers one request.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	recv := s.clock.Now()
	req, claimed, reason := s.readRequest(w, r)
	if reason != "" {
		s.refuse(w, r, req, recv, reason, nil)
		return
	}
	// The MAC over the request as received: the answer is bound to it.
	mac := req.mac(s.key)
	if !hmac.Equal(mac, claimed) {
		s.refuse(w, r, req, recv, ReasonBadMAC, nil)
		return
	}
	if req.method != pingMethod && req.to != s.incarnation {
		s.refuse(w, r, req, recv, ReasonWrongIncarnation, mac)
		return
	}
	if reason := s.replay.admit(recv.UnixNano(), req.time, [nonceSize]byte(req.nonce)); reason != "" {
		s.refuse(w, r, req, recv, reason, mac)
		return
	}
	var h Handler
	if req.method != pingMethod {
		s.mu.RLock()
		h = s.handlers[req.method]
		s.mu.RUnlock()
		if h == nil {
			s.refuse(w, r, req, recv, ReasonUnknownMethod, mac)
			return
		}
	}
	a := answer{status: http.StatusOK, outcome: wireOK}
	if h != nil {
		timeout := s.opts.maxTimeout
		if req.timeout > 0 && req.timeout < timeout.Microseconds() {
			timeout = time.Duration(req.timeout) * time.Microsecond
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		body, err := s.run(ctx, h, req)
		cancel()
		switch {
		case err != nil:
			var re *RemoteError
			if !errors.As(err, &re) {
				re = &RemoteError{Code: CodeInternal, Message: err.Error()}
			}
			a.outcome, a.code, a.body = wireError, re.Code, []byte(re.Message)
			if re.Refused {
				a.outcome = wireRefused
			}
			if !validID(a.code) {
				a.code = CodeInternal
			}
		default:
			a.body = body
		}
		if len(a.body) > s.opts.maxBody {
			a.outcome, a.code = wireError, CodeAnswerTooLarge
			a.body = fmt.Appendf(nil, "answer of %d bytes, over the limit of %d", len(a.body), s.opts.maxBody)
		}
	}
	send := s.send(w, &a, recv, mac)
	s.opts.observer.Served(req.method, outcomeOf(a.outcome), send.Sub(recv))
}

// outcomeOf maps a wire outcome to the Observer's.
func outcomeOf(wire string) string {
	switch wire {
	case wireError:
		return OutcomeError
	case wireRefused:
		return OutcomeRefused
	}
	return OutcomeOK
}

// run calls h, turning a panic into an error: the handler may have done
// part of its work, so its caller must not retry.
func (s *Server) run(ctx context.Context, h Handler, req *request) (body []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error().Str("method", req.method).Str("from", req.from).Interface("panic", p).Msg("handler panicked")
			body, err = nil, NewError(CodeInternal, "handler panicked")
		}
	}()
	return h(ctx, req.from, req.body)
}

// readRequest reads the request's fields, its claimed MAC and its body;
// reason is not empty when it cannot.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request) (req *request, claimed []byte, reason string) {
	req = &request{}
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, pathPrefix) {
		return req, nil, ReasonMalformed
	}
	req.method = strings.TrimPrefix(r.URL.Path, pathPrefix)
	req.from = r.Header.Get(hFrom)
	req.to = r.Header.Get(hTo)
	var errs [4]error
	req.time, errs[0] = parseInt(r.Header.Get(hTime))
	req.nonce, errs[1] = parseB64(r.Header.Get(hNonce), nonceSize)
	req.timeout, errs[2] = parseInt(r.Header.Get(hTimeout))
	claimed, errs[3] = parseB64(r.Header.Get(hMAC), 32)
	if errors.Join(errs[:]...) != nil || req.timeout < 0 || !validID(req.from) ||
		(req.method != pingMethod && !methodRE.MatchString(req.method)) || len(req.to) > 64 {
		return req, nil, ReasonMalformed
	}
	if r.ContentLength > int64(s.opts.maxBody) {
		return req, nil, ReasonTooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(s.opts.maxBody)))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return req, nil, ReasonTooLarge
		}
		return req, nil, ReasonIncomplete
	}
	req.body = body
	return req, claimed, ""
}

// statusOf is the HTTP status of a refusal.
var statusOf = map[string]int{
	ReasonMalformed:        http.StatusBadRequest,
	ReasonTooLarge:         http.StatusRequestEntityTooLarge,
	ReasonBadMAC:           http.StatusUnauthorized,
	ReasonWrongIncarnation: http.StatusUnauthorized,
	ReasonStale:            http.StatusUnauthorized,
	ReasonReplay:           http.StatusUnauthorized,
	ReasonUnknownMethod:    http.StatusNotFound,
}

// refuse counts, logs and answers a refused request. mac is the MAC of
// the request as received, when it was authenticated; otherwise the
// answer carries no MAC, since no client could check it (a client whose
// request arrived intact with the same key would have passed).
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, req *request, recv time.Time, reason string, mac []byte) {
	s.opts.observer.Refused(reason)
	ev := s.refusalLog.Warn()
	if reason == ReasonWrongIncarnation || reason == ReasonIncomplete {
		// A peer that called this member's earlier process, or went away.
		ev = s.log.Debug()
	}
	ev.Str("reason", reason).Str("remote", r.RemoteAddr).Str("from", clip(req.from)).Str("method", clip(req.method)).
		Msg("call refused")
	if reason == ReasonIncomplete {
		return
	}
	a := answer{status: statusOf[reason], outcome: wireRefused, code: reason}
	if mac == nil {
		w.Header().Set(hOutcome, a.outcome)
		w.Header().Set(hCode, a.code)
		w.WriteHeader(a.status)
		return
	}
	s.send(w, &a, recv, mac)
}

// clip shortens a string a caller chose to what a log line needs.
func clip(s string) string {
	if len(s) > maxIDLen {
		return s[:maxIDLen] + "..."
	}
	return s
}

// send writes a, stamped and MACed, and returns the instant stamped as
// its sending.
func (s *Server) send(w http.ResponseWriter, a *answer, recv time.Time, reqMAC []byte) time.Time {
	send := recv.Add(s.clock.Now().Sub(recv))
	a.from, a.incarnation = s.self, s.incarnation
	a.recv, a.send = recv.UnixNano(), send.UnixNano()
	h := w.Header()
	h.Set(hFrom, a.from)
	h.Set(hIncarnation, a.incarnation)
	h.Set(hRecv, strconv.FormatInt(a.recv, 10))
	h.Set(hSend, strconv.FormatInt(a.send, 10))
	h.Set(hOutcome, a.outcome)
	if a.code != "" {
		h.Set(hCode, a.code)
	}
	h.Set(hMAC, b64.EncodeToString(a.mac(s.key, reqMAC)))
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body) // a caller that gave up is not an error here
	return send
}
