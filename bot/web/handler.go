package web

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
)

// Paths the Handler serves.
const (
	// CallbackPath is the OAuth redirect path; the redirect URL registered
	// with Pinterest is the bot's public URL followed by it.
	CallbackPath = "/oauth/callback"
	// HealthPath answers 200 while the process serves HTTP: a liveness
	// check. Whether the program can do its work is the readiness check's
	// to say (internal/app, /readyz).
	HealthPath = "/healthz"
)

// DefaultCallbackTimeout bounds the work of one callback when
// Config.CallbackTimeout is 0.
const DefaultCallbackTimeout = 30 * time.Second

// Settings Handler.Server gives the http.Server.
const (
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout = 5 * time.Second
	// ReadTimeout bounds reading a whole request; the handler only serves
	// GET requests, which have no body.
	ReadTimeout = 10 * time.Second
	// WriteMargin is added to the callback timeout to get the server's
	// WriteTimeout, so that a callback that times out can still send its
	// page.
	WriteMargin = 15 * time.Second
	// IdleTimeout bounds an idle keep-alive connection.
	IdleTimeout = 60 * time.Second
	// MaxHeaderBytes bounds the request line and headers.
	MaxHeaderBytes = 16 << 10
)

// maxQueryLen bounds the callback's query string; Pinterest's code and
// the state together take about a hundred bytes.
const maxQueryLen = 4 << 10

// Config configures a Handler.
type Config struct {
	// Links stores states, accounts and tokens. Required.
	Links *links.Store
	// Pinterest exchanges codes and reads the user account. Its
	// RedirectURL must point at CallbackPath on this listener. Required.
	Pinterest *pinterest.Client
	// Now is the clock states are checked against; default time.Now.
	Now func() time.Time
	// Log receives a line per callback, tagged component=web; never
	// tokens, codes or whole states.
	Log zerolog.Logger
	// OnLinked, when not nil, is called after an account was linked, with
	// the Discord user and the stored account, on the request's goroutine
	// before the page is sent: it should only hand the news on (for
	// example to a channel), not block.
	OnLinked func(userID string, acct links.Account)
	// CallbackTimeout bounds one callback's calls to Pinterest; 0 means
	// DefaultCallbackTimeout.
	CallbackTimeout time.Duration
}

// Validate reports the first problem with c, naming the field.
func (c Config) Validate() error {
	switch {
	case c.Links == nil:
		return errors.New("web: Config.Links is nil")
	case c.Pinterest == nil:
		return errors.New("web: Config.Pinterest is nil")
	case c.CallbackTimeout < 0:
		return fmt.Errorf("web: Config.CallbackTimeout %v is negative", c.CallbackTimeout)
	}
	return nil
}

// Handler serves the OAuth callback and the health check; see the package
// documentation. A Handler is safe for simultaneous use by multiple
// goroutines.
type Handler struct {
	links    *links.Store
	pin      *pinterest.Client
	now      func() time.Time
	log      zerolog.Logger
	onLinked func(string, links.Account)
	timeout  time.Duration
}

var _ http.Handler = (*Handler)(nil)

// New returns a Handler for cfg, after validating it.
func New(cfg Config) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h := &Handler{
		links:    cfg.Links,
		pin:      cfg.Pinterest,
		now:      cfg.Now,
		log:      cfg.Log.With().Str("component", "web").Logger(),
		onLinked: cfg.OnLinked,
		timeout:  cfg.CallbackTimeout,
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.timeout == 0 {
		h.timeout = DefaultCallbackTimeout
	}
	return h, nil
}

// Server returns an http.Server for h listening on addr, with the
// timeouts and header limit listed in the package documentation. The
// caller starts and shuts it down.
func (h *Handler) Server(addr string) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      h.timeout + WriteMargin,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
}

// ServeHTTP routes GET CallbackPath and GET HealthPath; other paths get
// 404 and other methods 405.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var serve func(http.ResponseWriter, *http.Request)
	switch r.URL.Path {
	case CallbackPath:
		serve = h.callback
	case HealthPath:
		serve = h.health
	default:
		writePage(w, http.StatusNotFound, pageNotFound)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writePage(w, http.StatusMethodNotAllowed, pageMethod)
		return
	}
	serve(w, r)
}

// health answers 200 "ok": the process lives. A store that fails makes
// the program not ready, not dead: restarting it would not help.
func (h *Handler) health(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte("ok\n"))
}
