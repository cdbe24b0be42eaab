package web

import (
	"context"
	"github.com/pinbot/pinbot/internal/logctx"

	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/discorduser"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
)

// Paths the Handler serves.
const (
	// CallbackPath is the OAuth redirect path; the redirect URL registered
	// with Pinterest is the bot's public URL followed by it.
	CallbackPath = "/oauth/callback"
	// ConfirmPath shows a link waiting for confirmation (GET) and
	// confirms or cancels it (POST).
	ConfirmPath = "/oauth/confirm"
	// DiscordCallbackPath is where Discord sends the browser back after
	// signing in; the redirect registered with the Discord application is
	// the bot's public URL followed by it.
	DiscordCallbackPath = "/oauth/discord"
	// HealthPath answers 200 while the process serves HTTP: a liveness
	// check. Whether the program can do its work is the readiness check's
	// to say (internal/app, /readyz).
	HealthPath = "/healthz"
)

// DefaultCallbackTimeout bounds the work of one callback when
// Config.CallbackTimeout is 0.
const DefaultCallbackTimeout = 30 * time.Second

// DefaultConfirmTTL is how long a link waits for confirmation when
// Config.ConfirmTTL is 0.
const DefaultConfirmTTL = 5 * time.Minute

// DefaultAvatarSources are where the confirmation page's pictures are
// fetched from when Config.AvatarSources is nil: Discord's and
// Pinterest's image hosts.
var DefaultAvatarSources = []string{discorduser.DefaultCDNURL + "/", "https://i.pinimg.com/"}

// Settings Handler.Server gives the http.Server.
const (
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout = 5 * time.Second
	// ReadTimeout bounds reading a whole request; the only bodies are
	// the confirmation form's few hundred bytes.
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

// maxFormBytes bounds the confirmation form's body: two secrets and a
// word.
const maxFormBytes = 4 << 10

// Config configures a Handler.
type Config struct {
	// Links stores states, accounts and tokens. Required.
	Links links.Store
	// Pinterest exchanges codes and reads the user account. Its
	// RedirectURL must point at CallbackPath on this listener. Required.
	Pinterest *pinterest.Client
	// Discord reads the Discord user who ran /link, whom the confirmation
	// page names. When its sign-in is enabled (it has a client secret,
	// and its RedirectURL points at DiscordCallbackPath on this
	// listener), the browser must also sign in with Discord as that user
	// before it may confirm. Required.
	Discord *discorduser.Client
	// PublicURL is this listener's public address, such as
	// https://pinbot.example. With https, the browser's cookie is Secure
	// (and named with the __Host- prefix), and the confirmation form is
	// accepted from that origin. Optional.
	PublicURL string
	// ConfirmTTL is how long a link waits for the browser to confirm it;
	// 0 means DefaultConfirmTTL.
	ConfirmTTL time.Duration
	// AvatarSources are the address prefixes the confirmation page's
	// pictures (the Discord avatar, the Pinterest profile image) may be
	// fetched from, by the handler, to be shown as data: URLs; a picture
	// elsewhere is not shown. Each should end with "/". nil means
	// DefaultAvatarSources; an empty slice shows no pictures.
	AvatarSources []string
	// HTTPClient fetches the pictures; default a client that follows no
	// redirect.
	HTTPClient *http.Client
	// Now is the clock states are checked against; default time.Now.
	Now func() time.Time
	// Log receives a line per callback, tagged component=web; never
	// tokens, codes or whole states.
	Log zerolog.Logger
	// OnLinked, when not nil, is called after an account was linked (on
	// the confirming POST), with the /link request it answers (its User
	// is the Discord user it was linked to) and the stored account, so
	// that the user is told which account was linked. OnRefused, when not
	// nil, is called when the callback refuses a grant that lacks scopes
	// pinbot needs, with the request and the scopes missing. Both are
	// called on the request's goroutine before the page is sent: they
	// should only hand the news on (for example to a goroutine), not
	// block.
	OnLinked  func(req links.Request, acct links.Account)
	OnRefused func(req links.Request, missing []string)
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
	case c.Discord == nil:
		return errors.New("web: Config.Discord is nil")
	case c.CallbackTimeout < 0:
		return fmt.Errorf("web: Config.CallbackTimeout %v is negative", c.CallbackTimeout)
	case c.ConfirmTTL < 0:
		return fmt.Errorf("web: Config.ConfirmTTL %v is negative", c.ConfirmTTL)
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("web: Config.PublicURL %q is not an absolute http(s) URL", c.PublicURL)
		}
	}
	return nil
}

// Handler serves the OAuth callback and the health check; see the package
// documentation. A Handler is safe for simultaneous use by multiple
// goroutines.
type Handler struct {
	links     links.Store
	pin       *pinterest.Client
	discord   *discorduser.Client
	now       func() time.Time
	log       zerolog.Logger
	onLinked  func(links.Request, links.Account)
	onRefused func(links.Request, []string)
	timeout   time.Duration

	pending    *pendingLinks
	confirmTTL time.Duration
	// signIn requires the browser to sign in with Discord.
	signIn bool
	// cookie is the name of the browser's cookie; secure marks it
	// Secure.
	cookie string
	secure bool
	// origins checks that a POST comes from the bot's own pages.
	origins *http.CrossOriginProtection
	pictures
}

var _ http.Handler = (*Handler)(nil)

// New returns a Handler for cfg, after validating it.
func New(cfg Config) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h := &Handler{
		links:      cfg.Links,
		pin:        cfg.Pinterest,
		discord:    cfg.Discord,
		now:        cfg.Now,
		log:        cfg.Log.With().Str("component", "web").Logger(),
		onLinked:   cfg.OnLinked,
		onRefused:  cfg.OnRefused,
		timeout:    cfg.CallbackTimeout,
		pending:    newPendingLinks(),
		confirmTTL: cfg.ConfirmTTL,
		signIn:     cfg.Discord.SignInEnabled(),
		cookie:     cookieName,
		origins:    http.NewCrossOriginProtection(),
		pictures:   newPictures(cfg.AvatarSources, cfg.HTTPClient),
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.timeout == 0 {
		h.timeout = DefaultCallbackTimeout
	}
	if h.confirmTTL == 0 {
		h.confirmTTL = DefaultConfirmTTL
	}
	if cfg.PublicURL != "" {
		u, _ := url.Parse(cfg.PublicURL)
		if u.Scheme == "https" {
			h.cookie, h.secure = secureCookieName, true
		}
		if err := h.origins.AddTrustedOrigin(u.Scheme + "://" + u.Host); err != nil {
			return nil, fmt.Errorf("web: Config.PublicURL: %w", err)
		}
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

// ServeHTTP routes GET CallbackPath, GET and POST ConfirmPath, GET
// DiscordCallbackPath and GET HealthPath; other paths get 404 and other
// methods 405.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var serve map[string]func(http.ResponseWriter, *http.Request)
	switch r.URL.Path {
	case CallbackPath:
		serve = map[string]func(http.ResponseWriter, *http.Request){http.MethodGet: h.callback}
	case ConfirmPath:
		serve = map[string]func(http.ResponseWriter, *http.Request){http.MethodGet: h.showConfirm, http.MethodPost: h.confirm}
	case DiscordCallbackPath:
		serve = map[string]func(http.ResponseWriter, *http.Request){http.MethodGet: h.discordCallback}
	case HealthPath:
		serve = map[string]func(http.ResponseWriter, *http.Request){http.MethodGet: h.health}
	default:
		writePage(w, http.StatusNotFound, pageNotFound)
		return
	}
	f, ok := serve[r.Method]
	if !ok {
		allow, p := http.MethodGet, pageMethod
		if _, post := serve[http.MethodPost]; post {
			allow = http.MethodGet + ", " + http.MethodPost
			p.Message = strings.Replace(p.Message, "GET", "GET and POST", 1)
		}
		w.Header().Set("Allow", allow)
		writePage(w, http.StatusMethodNotAllowed, p)
		return
	}
	f(w, r)
}

// health answers 200 "ok": the process lives. A store that fails makes
// the program not ready, not dead: restarting it would not help.
func (h *Handler) health(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte("ok\n"))
}

// logger is the Handler's logger tagged with the IDs ctx carries: the
// request's ID (see edge.RequestIDs).
func (h *Handler) logger(ctx context.Context) *zerolog.Logger {
	return logctx.Logger(ctx, h.log)
}
