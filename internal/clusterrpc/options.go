package clusterrpc

import (
	"crypto/tls"
	"net/http"
	"time"

	"github.com/rs/zerolog"
)

// Defaults of the options.
const (
	// DefaultMaxBody bounds a request's body and an answer's, in bytes.
	DefaultMaxBody = 1 << 20
	// DefaultWindow is how far a request's timestamp may be from the
	// server's clock, either way: it covers the members' clock offsets
	// (held within a second or so) and a request's time in flight.
	DefaultWindow = 30 * time.Second
	// DefaultReplayLimit bounds the nonces a server remembers (a few
	// dozen bytes each): enough for thousands of calls a second within
	// DefaultWindow.
	DefaultReplayLimit = 100_000
	// DefaultMaxTimeout bounds how long a handler runs when its caller
	// set no deadline, or a longer one.
	DefaultMaxTimeout = time.Minute
	// DialTimeout bounds a client's connection attempt.
	DialTimeout = 5 * time.Second
)

// Settings of a Server's http.Server and of a Client's connections.
const (
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout = 5 * time.Second
	// ReadTimeout bounds reading a whole request, DefaultMaxBody at most.
	ReadTimeout = 10 * time.Second
	// WriteMargin is added to the longest a handler may run to get the
	// server's WriteTimeout, so that a handler cut off at its deadline
	// still sends its answer.
	WriteMargin = 10 * time.Second
	// IdleTimeout is how long a server keeps a connection that carries
	// no call; a client closes it after half as long.
	IdleTimeout = 5 * time.Minute
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes = 16 << 10
	// PingInterval is how long a connection may stay silent before
	// either end sends an HTTP/2 PING, and PingTimeout how long it then
	// waits for the answer before it drops the connection: a peer that
	// vanished without closing it is noticed within their sum.
	PingInterval = 15 * time.Second
	PingTimeout  = 5 * time.Second
)

// Option configures a Server or a Client; each says which it applies to,
// and the other ignores it.
type Option func(*options)

type options struct {
	tls         *tls.Config
	maxBody     int
	window      time.Duration
	replayLimit int
	maxTimeout  time.Duration
	observer    Observer
	log         *zerolog.Logger
	wrap        func(http.RoundTripper) http.RoundTripper
}

func buildOptions(opts []Option) options {
	o := options{
		maxBody:     DefaultMaxBody,
		window:      DefaultWindow,
		replayLimit: DefaultReplayLimit,
		maxTimeout:  DefaultMaxTimeout,
		observer:    NopObserver{},
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithTLS (Server and Client) speaks HTTP/2 over TLS with cfg instead of
// HTTP/2 in the clear: a Server's cfg needs its certificate, a Client's
// trusts its peers'. The MACs are checked all the same.
func WithTLS(cfg *tls.Config) Option { return func(o *options) { o.tls = cfg } }

// WithMaxBody (Server and Client) bounds a request's body and an
// answer's, in bytes; default DefaultMaxBody. A Client refuses to send a
// larger body (ErrNotSent); a Server refuses to read one, and replaces a
// larger answer with an error (CodeAnswerTooLarge). Members should agree
// on it: a server's refusal of a body it did not read cannot be
// authenticated, so the caller learns ErrOutcomeUnknown.
func WithMaxBody(n int) Option { return func(o *options) { o.maxBody = n } }

// WithWindow (Server) sets how far a request's timestamp may be from the
// server's clock, either way; default DefaultWindow. The server remembers
// nonces that long, and refuses older requests.
func WithWindow(d time.Duration) Option { return func(o *options) { o.window = d } }

// WithReplayLimit (Server) bounds the nonces remembered; default
// DefaultReplayLimit. Beyond it the oldest are forgotten and requests as
// old as they are refused as stale.
func WithReplayLimit(n int) Option { return func(o *options) { o.replayLimit = n } }

// WithMaxTimeout (Server) bounds how long a handler runs; default
// DefaultMaxTimeout. A caller's shorter deadline ends it sooner.
func WithMaxTimeout(d time.Duration) Option { return func(o *options) { o.maxTimeout = d } }

// WithObserver (Server and Client) reports calls, refusals and clock
// offsets to obs.
func WithObserver(obs Observer) Option { return func(o *options) { o.observer = obs } }

// WithLog (Client) logs answers that failed authentication to log, tagged
// component=clusterrpc. A Server takes its logger as an argument.
func WithLog(log zerolog.Logger) Option { return func(o *options) { o.log = &log } }

// WrapTransport (Client) passes every request through wrap(rt), where rt
// is the client's HTTP/2 transport: for metrics, or for tests that
// record, replay or tamper with requests.
func WrapTransport(wrap func(rt http.RoundTripper) http.RoundTripper) Option {
	return func(o *options) { o.wrap = wrap }
}

// Outcomes of a call, as Observer is told them.
const (
	// OutcomeOK: the handler answered.
	OutcomeOK = "ok"
	// OutcomeError: the handler returned an error.
	OutcomeError = "error"
	// OutcomeRefused: the handler refused (Refuse), or the method is
	// unknown: not run.
	OutcomeRefused = "refused"
	// OutcomeNotSent: the call never left (Client only).
	OutcomeNotSent = "not_sent"
	// OutcomeUnknown: the handler may have run (Client only).
	OutcomeUnknown = "unknown"
)

// Observer is told of calls for metrics. Its methods are called on the
// calls' goroutines: they must be cheap and must not block. Labels come
// from short fixed lists, except method, which comes from the methods a
// program registers.
type Observer interface {
	// Called reports a Client's call: its method, outcome
	// (OutcomeOK, OutcomeError, OutcomeRefused, OutcomeNotSent or
	// OutcomeUnknown) and how long it took.
	Called(method, outcome string, took time.Duration)
	// Served reports a request a Server passed to its handler (or
	// answered itself, for a ping): its method, outcome (OutcomeOK,
	// OutcomeError or OutcomeRefused) and how long the server took.
	Served(method, outcome string, took time.Duration)
	// Refused reports a request a Server refused before any handler, with
	// the reason (a Reason constant).
	Refused(reason string)
	// Measured reports a Client's new measure of a peer's clock offset.
	Measured(peer string, o Offset)
}

// NopObserver ignores everything; embed it to implement part of
// Observer.
type NopObserver struct{}

func (NopObserver) Called(string, string, time.Duration) {}
func (NopObserver) Served(string, string, time.Duration) {}
func (NopObserver) Refused(string)                       {}
func (NopObserver) Measured(string, Offset)              {}

var _ Observer = NopObserver{}
