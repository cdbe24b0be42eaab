package pinterest_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// authorize follows the authorization page to its redirect and returns the
// code, checking the state came back.
func authorize(t *testing.T, e *env, state string) string {
	t.Helper()
	hc := e.srv.Client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Get(e.c.AuthCodeURL(state))
	if err != nil {
		t.Fatalf("GET authorize: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize status = %d, want 302", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatalf("Location: %v", err)
	}
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != redirectURL {
		t.Errorf("redirected to %q, want %q", got, redirectURL)
	}
	if got := loc.Query().Get("state"); got != state {
		t.Errorf("state = %q, want %q", got, state)
	}
	return loc.Query().Get("code")
}

func TestAuthCodeURL(t *testing.T) {
	e := newEnv(t, nil)
	u, err := url.Parse(e.c.AuthCodeURL("st4te"))
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Scheme + "://" + u.Host + u.Path; got != e.srv.AuthURL() {
		t.Errorf("page = %q, want %q", got, e.srv.AuthURL())
	}
	q := u.Query()
	for k, want := range map[string]string{
		"client_id":     e.srv.ClientID(),
		"redirect_uri":  redirectURL,
		"response_type": "code",
		"scope":         "boards:read,boards:write,pins:read,pins:write,user_accounts:read",
		"state":         "st4te",
	} {
		if got := q.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

func TestExchange(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", "alice", boards(1)...)

	code := authorize(t, e, "s1")
	tok, err := e.c.Exchange(ctx, code)
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	if tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Fatalf("Exchange gave token without access or refresh token")
	}
	if want := t0.Add(30 * 24 * time.Hour); !tok.Expiry.Equal(want) {
		t.Errorf("Expiry = %v, want %v (expires_in on the Client's clock)", tok.Expiry, want)
	}
	s, err := pinterest.NewSession(tok, (&tokenStore{}).save)
	if err != nil {
		t.Fatal(err)
	}
	acct, err := e.c.UserAccount(ctx, s)
	if err != nil {
		t.Fatalf("UserAccount: %v", err)
	}
	if acct.ID != "1001" || acct.Username != "alice" {
		t.Errorf("UserAccount = %+v, want id 1001 username alice", acct)
	}

	// A code works once.
	_, err = e.c.Exchange(ctx, code)
	if !errors.Is(err, pinterest.ErrReauthRequired) {
		t.Errorf("second Exchange error = %v, want ErrReauthRequired", err)
	}
	var ae *pinterest.APIError
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != 283 || ae.RequestID == "" {
		t.Errorf("second Exchange APIError = %+v, want 400 code 283 with rid", ae)
	}
}

// TestExchangeRefusesMissingScopes: a grant lacking scopes the Client
// asked for is refused, naming them, and its token is not handed over;
// the default scopes are those of the operations the bot calls, and a
// grant with them can pin.
func TestExchangeRefusesMissingScopes(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", "alice", boards(1)...)
	e.srv.SetGrantedScopes([]string{pinterest.ScopeBoardsRead, pinterest.ScopePinsWrite, pinterest.ScopeUserAccountsRead})

	tok, err := e.c.Exchange(ctx, authorize(t, e, "s1"))
	var se *pinterest.ScopeError
	if tok != nil || !errors.Is(err, pinterest.ErrScopesMissing) || !errors.As(err, &se) {
		t.Fatalf("Exchange gave a token: %t, error %v; want no token and ErrScopesMissing", tok != nil, err)
	}
	if strings.Join(se.Missing, ",") != "boards:write,pins:read" || strings.Join(se.Granted, ",") != "boards:read,pins:write,user_accounts:read" {
		t.Errorf("missing %q, granted %q", se.Missing, se.Granted)
	}
	if errors.Is(err, pinterest.ErrReauthRequired) || errors.Is(err, pinterest.ErrUnavailable) {
		t.Errorf("%v matches another error", err)
	}

	e.srv.SetGrantedScopes(nil)
	tok, err = e.c.Exchange(ctx, authorize(t, e, "s2"))
	if err != nil {
		t.Fatalf("Exchange with every scope: %v", err)
	}
	if got, said := pinterest.GrantedScopes(tok); !said || !slices.Equal(got, pinterest.RequiredScopes()) {
		t.Errorf("GrantedScopes = %q, %t; want %q", got, said, pinterest.RequiredScopes())
	}
	s, err := pinterest.NewSession(tok, (&tokenStore{}).save)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CreatePin(ctx, s, pinterest.PinRequest{BoardID: boards(1)[0].ID, ImageURL: "https://img.example/a.png"}); err != nil {
		t.Errorf("CreatePin with the default scopes: %v", err)
	}
}

// TestOldScopesNeedRelink: an account linked when pinbot asked for fewer
// scopes (pins:write, boards:read, user_accounts:read) gets Pinterest's
// 401 code 3 on POST /pins: the client ends with ErrReauthRequired, so
// the bot asks its user to run /link again, and nothing is made.
func TestOldScopesNeedRelink(t *testing.T) {
	ctx := t.Context()
	old := []string{pinterest.ScopePinsWrite, pinterest.ScopeBoardsRead, pinterest.ScopeUserAccountsRead}
	e := newEnv(t, func(c *pinterest.Config) { c.Scopes = old })
	e.srv.AddAccount("1001", "alice", boards(1)...)
	tok, err := e.c.Exchange(ctx, authorize(t, e, "s1"))
	if err != nil {
		t.Fatalf("Exchange under the old scopes: %v", err)
	}
	s, err := pinterest.NewSession(tok, (&tokenStore{}).save)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.c.CreatePin(ctx, s, pinterest.PinRequest{BoardID: boards(1)[0].ID, ImageURL: "https://img.example/a.png"})
	if !errors.Is(err, pinterest.ErrReauthRequired) || errors.Is(err, pinterest.ErrOutcomeUnknown) {
		t.Fatalf("CreatePin with the old scopes: %v; want ErrReauthRequired", err)
	}
	if pins := e.srv.PinsFor("1001"); len(pins) != 0 {
		t.Fatalf("%d pins made", len(pins))
	}
}

// TestGrantedScopes reads the token answer's scope field, which Pinterest
// writes comma-separated and RFC 6749 space-separated; an answer without
// one grants what was asked.
func TestGrantedScopes(t *testing.T) {
	for _, tt := range []struct {
		extra map[string]any
		want  []string
		said  bool
	}{
		{map[string]any{"scope": "boards:read,pins:write"}, []string{"boards:read", "pins:write"}, true},
		{map[string]any{"scope": "boards:read pins:write  pins:write"}, []string{"boards:read", "pins:write"}, true},
		{map[string]any{"scope": ""}, []string{}, true},
		{map[string]any{}, nil, false},
		{map[string]any{"scope": 7}, nil, false},
	} {
		tok := (&oauth2.Token{AccessToken: "a"}).WithExtra(tt.extra)
		if got, said := pinterest.GrantedScopes(tok); !slices.Equal(got, tt.want) || said != tt.said || (tt.said && got == nil) {
			t.Errorf("GrantedScopes(%v) = %q, %t; want %q, %t", tt.extra, got, said, tt.want, tt.said)
		}
	}
}

func TestExchangeBadClientSecret(t *testing.T) {
	e := newEnv(t, func(c *pinterest.Config) { c.ClientSecret = "wrong" })
	cred := e.srv.AddAccount("1001", "alice")
	_, err := e.c.Exchange(t.Context(), cred.Code)
	var ae *pinterest.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
		t.Fatalf("Exchange error = %v, want APIError 401", err)
	}
	if errors.Is(err, pinterest.ErrReauthRequired) {
		t.Errorf("bad client credentials must not read as ErrReauthRequired")
	}
}

func TestRefreshRotatesAndSavesBeforeUse(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	cred, s, st := e.account(t, "1001", boards(1)...)
	var apiCallsAtSave int
	st.onSave = func(*oauth2.Token) { apiCallsAtSave = e.srv.Count(http.MethodGet, pinteresttest.PathUserAccount) }

	e.clk.Advance(31 * 24 * time.Hour) // the access token has expired
	if _, err := e.c.UserAccount(ctx, s); err != nil {
		t.Fatalf("UserAccount: %v", err)
	}
	_, saved := st.snapshot()
	if len(saved) != 1 {
		t.Fatalf("saved %d tokens, want 1", len(saved))
	}
	if apiCallsAtSave != 0 {
		t.Errorf("%d API requests before the rotated token was saved, want 0", apiCallsAtSave)
	}
	nt := saved[0]
	if nt.RefreshToken == "" || nt.RefreshToken == cred.RefreshToken {
		t.Errorf("saved refresh token did not rotate")
	}
	if nt.AccessToken == cred.AccessToken {
		t.Errorf("saved access token is the expired one")
	}
	if want := e.clk.Now().Add(30 * 24 * time.Hour); !nt.Expiry.Equal(want) {
		t.Errorf("saved Expiry = %v, want %v", nt.Expiry, want)
	}
	if got := s.Token(); got.RefreshToken != nt.RefreshToken || got.AccessToken != nt.AccessToken {
		t.Errorf("Session.Token() is not the saved token")
	}
	wantCount(t, e.srv, http.MethodPost, pinteresttest.PathToken, 1)
	wantCount(t, e.srv, http.MethodGet, pinteresttest.PathUserAccount, 1)

	// The next request uses the new token without refreshing.
	if _, err := e.c.UserAccount(ctx, s); err != nil {
		t.Fatalf("second UserAccount: %v", err)
	}
	wantCount(t, e.srv, http.MethodPost, pinteresttest.PathToken, 1)
}

func TestReusedRefreshTokenNeedsReauth(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	cred, s, _ := e.account(t, "1001")
	e.clk.Advance(31 * 24 * time.Hour)
	if _, err := e.c.UserAccount(ctx, s); err != nil {
		t.Fatalf("UserAccount: %v", err)
	}

	// A session still holding the pre-rotation token, as after a lost save.
	stale, err := pinterest.NewSession(cred.Token(), (&tokenStore{}).save)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.c.UserAccount(ctx, stale)
	if !errors.Is(err, pinterest.ErrReauthRequired) {
		t.Fatalf("UserAccount with reused refresh token: err = %v, want ErrReauthRequired", err)
	}
	if !stale.ReauthRequired() {
		t.Errorf("ReauthRequired() = false after an invalid grant")
	}
	wantCount(t, e.srv, http.MethodPost, pinteresttest.PathToken, 2)

	// The verdict sticks: no further token requests.
	if _, err := e.c.CreatePin(ctx, stale, pinReq); !errors.Is(err, pinterest.ErrReauthRequired) {
		t.Errorf("CreatePin after invalid grant: err = %v, want ErrReauthRequired", err)
	}
	wantCount(t, e.srv, http.MethodPost, pinteresttest.PathToken, 2)
	wantCount(t, e.srv, http.MethodPost, pinteresttest.PathPins, 0)
}

func TestFailedSaveStopsRequest(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	cred, s, st := e.account(t, "1001", boards(1)...)
	errDisk := errors.New("disk full")
	st.setFail(errDisk)
	e.clk.Advance(31 * 24 * time.Hour)

	_, err := e.c.CreatePin(ctx, s, pinReq)
	if !errors.Is(err, errDisk) {
		t.Fatalf("CreatePin error = %v, want the saver's error", err)
	}
	if errors.Is(err, pinterest.ErrOutcomeUnknown) {
		t.Errorf("nothing was sent, yet the error says the outcome is unknown")
	}
	wantCount(t, e.srv, http.MethodPost, pinteresttest.PathToken, 1)
	wantCount(t, e.srv, http.MethodPost, pinteresttest.PathPins, 0)
	if got := s.Token().RefreshToken; got != cred.RefreshToken {
		t.Errorf("Session.Token() moved to an unsaved token")
	}

	// Once saving works, the token kept aside is saved; no second refresh.
	st.setFail(nil)
	if _, err := e.c.CreatePin(ctx, s, pinReq); err != nil {
		t.Fatalf("CreatePin after save recovered: %v", err)
	}
	attempts, saved := st.snapshot()
	if attempts != 2 || len(saved) != 1 {
		t.Errorf("save attempts = %d, saved = %d; want 2 and 1", attempts, len(saved))
	}
	wantCount(t, e.srv, http.MethodPost, pinteresttest.PathToken, 1)
	wantCount(t, e.srv, http.MethodPost, pinteresttest.PathPins, 1)
	if got := s.Token().RefreshToken; got != saved[0].RefreshToken {
		t.Errorf("Session.Token() is not the saved token")
	}
}

func TestUnauthorizedRefreshesAndRetriesOnce(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		path      string
		faults    int
		wantErr   error
		wantCalls int
	}{
		{"GET recovers", http.MethodGet, pinteresttest.PathUserAccount, 1, nil, 2},
		{"GET still 401", http.MethodGet, pinteresttest.PathUserAccount, 2, pinterest.ErrReauthRequired, 2},
		{"POST recovers", http.MethodPost, pinteresttest.PathPins, 1, nil, 2},
		{"POST still 401", http.MethodPost, pinteresttest.PathPins, 2, pinterest.ErrReauthRequired, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			e := newEnv(t, nil)
			_, s, st := e.account(t, "1001", boards(1)...)
			f := pinteresttest.ExpiredToken(tt.path)
			f.Times = tt.faults
			e.srv.Inject(f)

			var err error
			if tt.method == http.MethodPost {
				_, err = e.c.CreatePin(ctx, s, pinReq)
			} else {
				_, err = e.c.UserAccount(ctx, s)
			}
			if tt.wantErr == nil && err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			wantCount(t, e.srv, tt.method, tt.path, tt.wantCalls)
			wantCount(t, e.srv, http.MethodPost, pinteresttest.PathToken, 1)
			if _, saved := st.snapshot(); len(saved) != 1 {
				t.Errorf("saved %d tokens, want 1", len(saved))
			}
		})
	}
}

func TestConcurrentRequestsRefreshOnce(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	_, s, st := e.account(t, "1001", boards(1)...)
	e.clk.Advance(31 * 24 * time.Hour)

	const n = 8
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, err := e.c.UserAccount(ctx, s)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("UserAccount: %v", err)
		}
	}
	wantCount(t, e.srv, http.MethodPost, pinteresttest.PathToken, 1)
	if attempts, _ := st.snapshot(); attempts != 1 {
		t.Errorf("save attempts = %d, want 1", attempts)
	}
}

func TestRefreshWaitRespectsContext(t *testing.T) {
	e := newEnv(t, nil)
	_, s, _ := e.account(t, "1001")
	e.clk.Advance(31 * 24 * time.Hour)
	arrived := make(chan struct{}, 1)
	e.srv.Inject(pinteresttest.Fault{Path: pinteresttest.PathToken, Hang: true, Arrived: arrived})

	first := make(chan error, 1)
	ctx1, cancel1 := context.WithCancel(t.Context())
	defer cancel1()
	go func() {
		_, err := e.c.UserAccount(ctx1, s)
		first <- err
	}()
	<-arrived // the first request holds the refresh slot

	// A second request waits for the slot until its context ends.
	ctx2, cancel2 := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel2()
	if _, err := e.c.UserAccount(ctx2, s); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting request: err = %v, want context.DeadlineExceeded", err)
	}
	cancel1()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("refreshing request: err = %v, want context.Canceled", err)
	}
}

func TestRefreshFailuresOtherThanInvalidGrant(t *testing.T) {
	tests := []struct {
		name  string
		fault pinteresttest.Fault
		want  error
	}{
		{"rate limited", pinteresttest.RateLimited(pinteresttest.PathToken, "60"), pinterest.ErrRateLimited},
		{"server error", pinteresttest.ServerError(pinteresttest.PathToken, 503), pinterest.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			e := newEnv(t, nil)
			_, s, _ := e.account(t, "1001", boards(1)...)
			e.clk.Advance(31 * 24 * time.Hour)
			e.srv.Inject(tt.fault)
			_, err := e.c.CreatePin(ctx, s, pinReq)
			if !errors.Is(err, tt.want) || errors.Is(err, pinterest.ErrReauthRequired) || errors.Is(err, pinterest.ErrOutcomeUnknown) {
				t.Fatalf("err = %v, want %v only", err, tt.want)
			}
			wantCount(t, e.srv, http.MethodPost, pinteresttest.PathPins, 0)
			if s.ReauthRequired() {
				t.Errorf("session marked for reauthorization")
			}
			if errors.Is(err, pinterest.ErrRateLimited) {
				// Until the reset, the next try is held back unsent.
				before := e.srv.Count(http.MethodPost, pinteresttest.PathToken)
				var rl *pinterest.RateLimitError
				if _, err := e.c.CreatePin(ctx, s, pinReq); !errors.As(err, &rl) || !rl.Preempted || rl.Wait != time.Minute {
					t.Fatalf("try before the reset: err = %v, want a Preempted RateLimitError waiting 1m", err)
				}
				wantCount(t, e.srv, http.MethodPost, pinteresttest.PathToken, before)
				e.clk.Advance(time.Minute)
			}
			// The refresh token was not consumed; the next try works.
			if _, err := e.c.CreatePin(ctx, s, pinReq); err != nil {
				t.Errorf("retry: %v", err)
			}
		})
	}
}
