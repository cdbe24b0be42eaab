package pinterest_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/logtest"
)

// t0 is the start of every test's clock.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

const redirectURL = "https://bot.example/oauth/callback"

// env is a Client wired to a stand-in server, sharing a manual clock
// (its breaker on the clock's monotonic time, unless a test replaces
// Config.Breaker whole).
// The Client's waits before a retry move the clock instead of sleeping,
// and are recorded; its random draws are half their bound.
type env struct {
	clk  *pinteresttest.Clock
	srv  *pinteresttest.Server
	c    *pinterest.Client
	logs *logtest.Buffer

	mu     sync.Mutex
	waited []time.Duration
}

// sleep is the Client's Retry.Sleep: it records d and moves the clock.
func (e *env) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	e.waited = append(e.waited, d)
	e.mu.Unlock()
	e.clk.Advance(d)
	return nil
}

// waits returns the waits taken so far.
func (e *env) waits() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]time.Duration(nil), e.waited...)
}

// newEnv starts a stand-in server and a Client for it; mod, when not nil,
// adjusts the Client's Config. opts configure the server.
func newEnv(t *testing.T, mod func(*pinterest.Config), opts ...pinteresttest.Option) *env {
	t.Helper()
	clk := pinteresttest.NewClock(t0)
	srv := pinteresttest.NewServer(append([]pinteresttest.Option{pinteresttest.WithClock(clk.Now)}, opts...)...)
	t.Cleanup(srv.Close)
	logs := &logtest.Buffer{}
	e := &env{clk: clk, srv: srv, logs: logs}
	cfg := pinterest.Config{
		ClientID:       srv.ClientID(),
		ClientSecret:   srv.ClientSecret(),
		RedirectURL:    redirectURL,
		APIBase:        srv.APIBase(),
		AuthURL:        srv.AuthURL(),
		RequestTimeout: 10 * time.Second,
		Logger:         zerolog.New(logs).Level(zerolog.DebugLevel),
		Now:            clk.Now,
		Breaker:        pinterest.BreakerConfig{Elapsed: clk.Elapsed},
		Retry: pinterest.RetryConfig{
			Sleep: e.sleep,
			Rand:  func(n int64) int64 { return n / 2 },
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := pinterest.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.c = c
	return e
}

// boards returns n boards with ids b1…bn.
func boards(n int) []pinteresttest.Board {
	out := make([]pinteresttest.Board, n)
	for i := range out {
		id := "b" + strconv.Itoa(i+1)
		out[i] = pinteresttest.Board{ID: id, Name: "Board " + id}
	}
	return out
}

// account adds an account with the given boards and returns its
// credentials and a Session saving into a new tokenStore.
func (e *env) account(t *testing.T, id string, bs ...pinteresttest.Board) (pinteresttest.Credentials, *pinterest.Session, *tokenStore) {
	t.Helper()
	cred := e.srv.AddAccount(id, "user"+id, bs...)
	st := &tokenStore{}
	s, err := pinterest.NewSession(cred.Token(), st.save)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	return cred, s, st
}

// tokenStore is a TokenSaver double.
type tokenStore struct {
	mu       sync.Mutex
	attempts int
	saved    []*oauth2.Token
	fail     error
	onSave   func(*oauth2.Token)
}

func (s *tokenStore) save(_ context.Context, tok *oauth2.Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if s.onSave != nil {
		s.onSave(tok)
	}
	if s.fail != nil {
		return s.fail
	}
	s.saved = append(s.saved, tok)
	return nil
}

func (s *tokenStore) setFail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

func (s *tokenStore) snapshot() (attempts int, saved []*oauth2.Token) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts, append([]*oauth2.Token(nil), s.saved...)
}

// wantCount checks how many requests with method and path the server saw.
func wantCount(t *testing.T, srv *pinteresttest.Server, method, path string, want int) {
	t.Helper()
	if got := srv.Count(method, path); got != want {
		t.Errorf("server saw %d %s %s requests, want %d", got, method, path, want)
	}
}

var pinReq = pinterest.PinRequest{
	BoardID:     "b1",
	ImageURL:    "https://cdn.example/cat.png",
	Link:        "https://discord.example/channels/1/2/3",
	Title:       "A cat",
	AltText:     "A grey cat asleep",
	Description: "Pinned from Discord",
}
