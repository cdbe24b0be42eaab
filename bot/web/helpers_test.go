package web_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/bot/web"
)

// t0 is the start of every test's clock.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of loggers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// linkedEvent is one OnLinked call.
type linkedEvent struct {
	user string
	acct links.Account
}

// env is the handler behind an httptest server, wired to the Pinterest
// stand-in and an in-memory store, all logging into one buffer and
// sharing one manual clock.
type env struct {
	clk   *pinteresttest.Clock
	srv   *pinteresttest.Server
	pin   *pinterest.Client
	store *links.Store
	h     *web.Handler
	ts    *httptest.Server
	logs  *syncBuffer

	mu     sync.Mutex
	linked []linkedEvent
}

// newEnv builds an env; mod, when not nil, adjusts the Pinterest client's
// Config.
func newEnv(t *testing.T, mod func(*pinterest.Config)) *env {
	t.Helper()
	e := &env{clk: pinteresttest.NewClock(t0), logs: &syncBuffer{}}
	log := zerolog.New(e.logs).Level(zerolog.TraceLevel)
	e.srv = pinteresttest.NewServer(pinteresttest.WithClock(e.clk.Now))
	t.Cleanup(e.srv.Close)

	// The handler is set before the first request is sent.
	var h http.Handler
	e.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(e.ts.Close)

	cfg := pinterest.Config{
		ClientID:       e.srv.ClientID(),
		ClientSecret:   e.srv.ClientSecret(),
		RedirectURL:    e.ts.URL + web.CallbackPath,
		APIBase:        e.srv.APIBase(),
		AuthURL:        e.srv.AuthURL(),
		RequestTimeout: 10 * time.Second,
		Logger:         log,
		Now:            e.clk.Now,
	}
	if mod != nil {
		mod(&cfg)
	}
	var err error
	if e.pin, err = pinterest.New(cfg); err != nil {
		t.Fatal(err)
	}
	if e.store, err = links.Open("", links.Options{InMemory: true}, log); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.store.Close(); err != nil && !errors.Is(err, links.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	e.h, err = web.New(web.Config{
		Links:     e.store,
		Pinterest: e.pin,
		Now:       e.clk.Now,
		Log:       log,
		OnLinked: func(user string, acct links.Account) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.linked = append(e.linked, linkedEvent{user, acct})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h = e.h
	return e
}

// callbackURL starts a link for user as /link would: a new state, then
// Pinterest's authorization page, which redirects to the callback. It
// returns that callback address without visiting it.
func (e *env) callbackURL(t *testing.T, user string) string {
	t.Helper()
	state, err := e.store.NewState(context.Background(), user, e.clk.Now())
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
