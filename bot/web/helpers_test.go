package web_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/discorduser"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/bot/web"
	"github.com/pinbot/pinbot/bot/web/webtest"
	"github.com/pinbot/pinbot/internal/logtest"
)

// t0 is the start of every test's clock.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// The Discord users of the tests: ann and bea, and mallory, who sends
// others her /link address.
const (
	u1      = "300000000000000001" // @ann, "Ann"
	u2      = "300000000000000002" // @bea
	mallory = "300000000000000666" // @mallory, "Mallory"
)

// pngBytes is a 1×1 PNG, the picture the image server sends.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
	"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// linkedEvent is one OnLinked call.
type linkedEvent struct {
	user string
	acct links.Account
	req  links.Request
}

// refusedEvent is one OnRefused call.
type refusedEvent struct {
	req     links.Request
	missing []string
}

// env is the handler behind an httptest server, wired to the Pinterest
// and Discord stand-ins, an image server standing for their CDNs and an
// in-memory store, all logging into one buffer and sharing one manual
// clock.
type env struct {
	clk *pinteresttest.Clock
	srv *pinteresttest.Server
	pin *pinterest.Client
	dc  *discordtest.Server
	// discord reads Discord users (and signs in, with envOptions.signIn).
	discord *discorduser.Client
	img     *httptest.Server
	store   links.Store
	h       *web.Handler
	// serving is the handler the server sends requests to: h, or a new
	// one after restart.
	serving atomic.Pointer[web.Handler]
	cfg     web.Config
	ts      *httptest.Server
	logs    *logtest.Buffer

	mu      sync.Mutex
	linked  []linkedEvent
	refusal []refusedEvent
}

// envOptions adjust an env.
type envOptions struct {
	// pinterest, when not nil, adjusts the Pinterest client's Config.
	pinterest func(*pinterest.Config)
	// signIn requires the browser to sign in with Discord.
	signIn bool
	// web, when not nil, adjusts the handler's Config.
	web func(*web.Config)
	// prefix is the path under which a proxy serves the listener, such
	// as "/pinbot"; "" serves it at the root.
	prefix string
}

// newEnv builds an env; mod, when not nil, adjusts the Pinterest client's
// Config.
func newEnv(t *testing.T, mod func(*pinterest.Config)) *env {
	t.Helper()
	return newEnvWith(t, envOptions{pinterest: mod})
}

func newEnvWith(t *testing.T, o envOptions) *env {
	t.Helper()
	e := &env{clk: pinteresttest.NewClock(t0), logs: &logtest.Buffer{}}
	log := zerolog.New(e.logs).Level(zerolog.TraceLevel)
	e.srv = pinteresttest.NewServer(pinteresttest.WithClock(e.clk.Now))
	t.Cleanup(e.srv.Close)

	e.dc = discordtest.NewServer(discordtest.WithClock(e.clk.Now))
	t.Cleanup(e.dc.Close)
	g, err := e.dc.AddGuild(discordtest.Guild{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []discordtest.Member{
		{UserID: snowflake.MustParse(u1), Username: "ann", GlobalName: "Ann"},
		{UserID: snowflake.MustParse(u2), Username: "bea"},
		{UserID: snowflake.MustParse(mallory), Username: "mallory", GlobalName: "Mallory"},
	} {
		m.GuildID = g.ID
		if _, err := e.dc.AddMember(m); err != nil {
			t.Fatal(err)
		}
	}
	// The image server stands for Discord's CDN and Pinterest's image
	// host: it sends a PNG for every address but /broken/.
	e.img = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/broken/") {
			_, _ = w.Write([]byte("<html>not a picture</html>"))
			return
		}
		_, _ = w.Write(pngBytes)
	}))
	t.Cleanup(e.img.Close)

	// The handler is set before the first request is sent. A proxy
	// serving the listener under o.prefix strips it.
	e.ts = httptest.NewServer(http.StripPrefix(o.prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { e.serving.Load().ServeHTTP(w, r) })))
	t.Cleanup(e.ts.Close)

	cfg := pinterest.Config{
		ClientID:       e.srv.ClientID(),
		ClientSecret:   e.srv.ClientSecret(),
		RedirectURL:    e.ts.URL + o.prefix + web.CallbackPath,
		APIBase:        e.srv.APIBase(),
		AuthURL:        e.srv.AuthURL(),
		RequestTimeout: 10 * time.Second,
		Logger:         log,
		Now:            e.clk.Now,
	}
	if o.pinterest != nil {
		o.pinterest(&cfg)
	}
	if e.pin, err = pinterest.New(cfg); err != nil {
		t.Fatal(err)
	}
	dcfg := discorduser.Config{Token: e.dc.Token(), APIURL: e.dc.APIURL(), CDNURL: e.img.URL}
	if o.signIn {
		dcfg.ClientSecret = e.dc.OAuth2ClientSecret()
		dcfg.AuthorizeURL = e.dc.OAuth2AuthorizeURL()
		dcfg.RedirectURL = e.ts.URL + o.prefix + web.DiscordCallbackPath
		e.dc.AddOAuth2Redirect(dcfg.RedirectURL)
	}
	if e.discord, err = discorduser.New(dcfg); err != nil {
		t.Fatal(err)
	}
	if e.store, err = badgerlinks.Open("", badgerlinks.Options{InMemory: true}, log); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.store.Close(); err != nil && !errors.Is(err, links.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	wcfg := web.Config{
		Links:         e.store,
		Pinterest:     e.pin,
		Discord:       e.discord,
		AvatarSources: []string{e.img.URL + "/"},
		Now:           e.clk.Now,
		Log:           log,
		OnLinked: func(req links.Request, acct links.Account) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.linked = append(e.linked, linkedEvent{req.User, acct, req})
		},
		OnRefused: func(req links.Request, missing []string) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.refusal = append(e.refusal, refusedEvent{req, missing})
		},
	}
	if o.web != nil {
		o.web(&wcfg)
	}
	e.h, err = web.New(wcfg)
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = wcfg
	e.serving.Store(e.h)
	return e
}

// restart replaces the handler by a new one on the same stores, as a
// restart of the program does: the links waiting for confirmation, kept
// in memory, are gone.
func (e *env) restart(t *testing.T) {
	t.Helper()
	h, err := web.New(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.serving.Store(h)
}

// callbackURL starts a link for user as /link would: a new state, then
// Pinterest's authorization page, which redirects to the callback. It
// returns that callback address without visiting it.
func (e *env) callbackURL(t *testing.T, user string) string {
	t.Helper()
	return e.callbackURLFor(t, links.Request{User: user, At: e.clk.Now()})
}

// callbackURLFor is callbackURL for a /link request with an interaction
// token and a time.
func (e *env) callbackURLFor(t *testing.T, req links.Request) string {
	t.Helper()
	state, err := e.store.NewLinkState(context.Background(), req, e.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := e.srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(e.pin.AuthCodeURL(state))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || loc == "" {
		t.Fatalf("authorization page: status %d, Location %q", resp.StatusCode, loc)
	}
	u, err := url.Parse(loc)
	if err != nil || u.Query().Get("state") != state || u.Query().Get("code") == "" {
		t.Fatalf("authorization page redirected to %q", loc)
	}
	return loc
}

// get sends GET u and returns the status, the body and the headers.
func (e *env) get(t *testing.T, u string) (int, string, http.Header) {
	t.Helper()
	return e.do(t, http.MethodGet, u)
}

func (e *env) do(t *testing.T, method, u string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// events returns the OnLinked calls so far.
func (e *env) events() []linkedEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]linkedEvent(nil), e.linked...)
}

// refusals returns the OnRefused calls so far.
func (e *env) refusals() []refusedEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]refusedEvent(nil), e.refusal...)
}

// tokenRequests counts the requests to Pinterest's token endpoint.
func (e *env) tokenRequests() int { return e.srv.Count(http.MethodPost, pinteresttest.PathToken) }

// nothingLinked fails the test if user has an account or account has a
// token.
func (e *env) nothingLinked(t *testing.T, user, account string) {
	t.Helper()
	ctx := context.Background()
	u, err := e.store.User(ctx, user)
	if err != nil || u.Active != "" || len(u.Accounts) != 0 {
		t.Errorf("user %s = %+v, %v; want nothing linked", user, u, err)
	}
	if _, err := e.store.Token(ctx, account); !errors.Is(err, links.ErrNoToken) {
		t.Errorf("Token(%s) = %v, want ErrNoToken", account, err)
	}
	if ev := e.events(); len(ev) != 0 {
		t.Errorf("OnLinked called: %+v", ev)
	}
}

// browser returns a new browser, with its own cookies.
func (e *env) browser() *webtest.Browser { return webtest.NewBrowser(e.ts.Client()) }

// open opens u in b and returns the page it ends on.
func (e *env) open(t *testing.T, b *webtest.Browser, u string) webtest.Page {
	t.Helper()
	p, err := b.Get(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// submit presses button on p's confirmation form in b.
func (e *env) submit(t *testing.T, b *webtest.Browser, p webtest.Page, button string) webtest.Page {
	t.Helper()
	got, err := b.Submit(context.Background(), p, button)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// confirmPage opens the callback address cb in b and checks that it
// leads to the confirmation page.
func (e *env) confirmPage(t *testing.T, b *webtest.Browser, cb string) webtest.Page {
	t.Helper()
	p := e.open(t, b, cb)
	if p.Status != http.StatusOK || p.Title != "Confirm the link" || p.FormAction == "" {
		t.Fatalf("callback: %d %q %q; want the confirmation page", p.Status, p.Title, p.Message)
	}
	return p
}

// link runs a whole link for user as a person does: /link's address,
// Pinterest's approval, the confirmation page and its confirm button. It
// returns the last page.
func (e *env) link(t *testing.T, user string) webtest.Page {
	t.Helper()
	b := e.browser()
	p := e.confirmPage(t, b, e.callbackURL(t, user))
	return e.submit(t, b, p, webtest.Confirm)
}
