package discordtest_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// oauthEnv is a stand-in with a guild and two members, and an OAuth2
// client configured as an application would be.
type oauthEnv struct {
	s            *discordtest.Server
	alice, bob   discordtest.Member
	conf         *oauth2.Config
	redirectURI  string
	noRedirectCl *http.Client
}

func newOAuthEnv(t *testing.T) *oauthEnv {
	t.Helper()
	s := newServer(t)
	g, err := s.AddGuild(discordtest.Guild{})
	if err != nil {
		t.Fatal(err)
	}
	e := &oauthEnv{s: s, redirectURI: "https://pinbot.example/oauth/discord"}
	if e.alice, err = s.AddMember(discordtest.Member{GuildID: g.ID, Username: "alice", GlobalName: "Alice A."}); err != nil {
		t.Fatal(err)
	}
	if e.bob, err = s.AddMember(discordtest.Member{GuildID: g.ID, Username: "bob"}); err != nil {
		t.Fatal(err)
	}
	s.AddOAuth2Redirect(e.redirectURI)
	e.conf = &oauth2.Config{
		ClientID:     s.OAuth2ClientID(),
		ClientSecret: s.OAuth2ClientSecret(),
		RedirectURL:  e.redirectURI,
		Scopes:       []string{"identify"},
		Endpoint: oauth2.Endpoint{
			AuthURL:   s.OAuth2AuthorizeURL(),
			TokenURL:  s.APIURL() + "/oauth2/token",
			AuthStyle: oauth2.AuthStyleInHeader,
		},
	}
	e.noRedirectCl = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return e
}

// authorize opens the authorization page at u and returns the redirect's
// query, failing unless the page redirected to the registered URI.
func (e *oauthEnv) authorize(t *testing.T, u string) url.Values {
	t.Helper()
	resp, err := e.noRedirectCl.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), e.redirectURI+"?") {
		t.Fatalf("authorization page: %d, Location %q; want a redirect to %s", resp.StatusCode, resp.Header.Get("Location"), e.redirectURI)
	}
	return loc.Query()
}

// me sends GET /users/@me with authorization and returns the status and
// the decoded body.
func (e *oauthEnv) me(t *testing.T, authorization string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.s.APIURL()+"/users/@me", nil)
	req.Header.Set("Authorization", authorization)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

// TestOAuth2CodeFlow runs the authorization code flow with
// golang.org/x/oauth2 as a real application would, and reads the
// signed-in user with the access token.
func TestOAuth2CodeFlow(t *testing.T) {
	e := newOAuthEnv(t)
	if err := e.s.SetOAuth2User(e.alice.UserID); err != nil {
		t.Fatal(err)
	}
	q := e.authorize(t, e.conf.AuthCodeURL("st8"))
	if q.Get("state") != "st8" || q.Get("code") == "" {
		t.Fatalf("redirect query %v, want the state and a code", q)
	}
	tok, err := e.conf.Exchange(t.Context(), q.Get("code"))
	if err != nil {
		t.Fatal(err)
	}
	if tok.TokenType != "Bearer" || tok.AccessToken == "" || tok.RefreshToken == "" || tok.Extra("scope") != "identify" ||
		tok.ExpiresIn != int64(discordtest.OAuth2TokenLifetime.Seconds()) {
		t.Fatalf("token %+v scope %v", tok, tok.Extra("scope"))
	}
	status, body := e.me(t, "Bearer "+tok.AccessToken)
	if status != http.StatusOK || body["id"] != e.alice.UserID.String() || body["username"] != "alice" ||
		body["global_name"] != "Alice A." || body["discriminator"] != "0" {
		t.Fatalf("GET /users/@me: %d %v; want alice", status, body)
	}
	if _, ok := body["avatar"]; !ok {
		t.Errorf("GET /users/@me has no avatar field: %v", body)
	}
	// The bot token still reads the bot.
	if status, body := e.me(t, "Bot "+e.s.Token()); status != http.StatusOK || body["id"] != e.s.BotUserID().String() {
		t.Errorf("GET /users/@me with the bot token: %d %v", status, body)
	}
	// A Bearer token is for /users/@me only.
	req, _ := http.NewRequest(http.MethodGet, e.s.APIURL()+"/users/"+e.bob.UserID.String(), nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /users/{id} with a Bearer token: %v %v; want 401", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}
	// The refresh token rotates.
	next, err := e.conf.TokenSource(t.Context(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil || next.AccessToken == tok.AccessToken {
		t.Fatalf("refresh: %+v, %v", next, err)
	}
	if _, err := e.conf.TokenSource(t.Context(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err == nil {
		t.Error("a refresh token worked twice")
	}

	// Another user signed in gets their own identity.
	if err := e.s.SetOAuth2User(e.bob.UserID); err != nil {
		t.Fatal(err)
	}
	tok, err = e.conf.Exchange(t.Context(), e.authorize(t, e.conf.AuthCodeURL("x")).Get("code"))
	if err != nil {
		t.Fatal(err)
	}
	if _, body := e.me(t, "Bearer "+tok.AccessToken); body["id"] != e.bob.UserID.String() {
		t.Errorf("GET /users/@me = %v, want bob", body)
	}
	if n := e.s.OAuth2Approvals(); n != 2 {
		t.Errorf("OAuth2Approvals = %d, want 2", n)
	}
}

// TestOAuth2Refusals: what Discord refuses, in Discord's words.
func TestOAuth2Refusals(t *testing.T) {
	e := newOAuthEnv(t)
	if err := e.s.SetOAuth2User(e.alice.UserID); err != nil {
		t.Fatal(err)
	}
	code := func() string { return e.authorize(t, e.conf.AuthCodeURL("s")).Get("code") }

	// A code works once, and only with its redirect_uri.
	c := code()
	if _, err := e.conf.Exchange(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	wantGrantErr(t, "reused code", func() error { _, err := e.conf.Exchange(t.Context(), c); return err }, "invalid_grant")
	other := *e.conf
	other.RedirectURL = "https://pinbot.example/elsewhere"
	c = code()
	wantGrantErr(t, "other redirect_uri", func() error { _, err := other.Exchange(t.Context(), c); return err }, "invalid_grant")
	bad := *e.conf
	bad.ClientSecret = "wrong"
	c = code()
	wantGrantErr(t, "wrong secret", func() error { _, err := bad.Exchange(t.Context(), c); return err }, "invalid_client")
	// Client credentials in the form work too.
	inForm := *e.conf
	inForm.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	if _, err := inForm.Exchange(t.Context(), code()); err != nil {
		t.Errorf("credentials in the form: %v", err)
	}

	// The authorization page.
	page := func(u string) int {
		resp, err := e.noRedirectCl.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	unregistered := *e.conf
	unregistered.RedirectURL = "https://evil.example/cb"
	if st := page(unregistered.AuthCodeURL("s")); st != http.StatusBadRequest {
		t.Errorf("unregistered redirect_uri: %d, want 400", st)
	}
	unknownApp := *e.conf
	unknownApp.ClientID = "1"
	if st := page(unknownApp.AuthCodeURL("s")); st != http.StatusBadRequest {
		t.Errorf("unknown client_id: %d, want 400", st)
	}
	badScope := *e.conf
	badScope.Scopes = []string{"identify", "nonsense"}
	if q := e.authorize(t, badScope.AuthCodeURL("s")); q.Get("error") != "invalid_scope" || q.Get("state") != "s" {
		t.Errorf("unknown scope redirected with %v", q)
	}
	e.s.DenyOAuth2()
	if q := e.authorize(t, e.conf.AuthCodeURL("s")); q.Get("error") != "access_denied" || q.Get("code") != "" {
		t.Errorf("denied: redirected with %v", q)
	}

	// Without identify, /users/@me refuses the token.
	if err := e.s.SetOAuth2User(e.alice.UserID); err != nil {
		t.Fatal(err)
	}
	guilds := *e.conf
	guilds.Scopes = []string{"guilds"}
	tok, err := guilds.Exchange(t.Context(), e.authorize(t, guilds.AuthCodeURL("s")).Get("code"))
	if err != nil {
		t.Fatal(err)
	}
	if st, body := e.me(t, "Bearer "+tok.AccessToken); st != http.StatusUnauthorized || body["message"] != "401: Unauthorized" {
		t.Errorf("GET /users/@me without identify: %d %v; want 401", st, body)
	}
	if st, _ := e.me(t, "Bearer nope"); st != http.StatusUnauthorized {
		t.Errorf("GET /users/@me with an unknown token: %d, want 401", st)
	}
	if err := e.s.SetOAuth2User(123); !errors.Is(err, discordtest.ErrUnknownMember) {
		t.Errorf("SetOAuth2User(unknown) = %v", err)
	}
}

// TestOAuth2NobodySignedIn: without SetOAuth2User the page says so
// instead of approving.
func TestOAuth2NobodySignedIn(t *testing.T) {
	e := newOAuthEnv(t)
	resp, err := e.noRedirectCl.Get(e.conf.AuthCodeURL("s"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "SetOAuth2User") {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
}

// wantGrantErr checks that f fails with a token endpoint error whose
// error field is code.
func wantGrantErr(t *testing.T, name string, f func() error, code string) {
	t.Helper()
	err := f()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != code {
		t.Errorf("%s: %v; want error %q", name, err, code)
	}
}
