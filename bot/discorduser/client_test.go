package discorduser_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/discorduser"
)

const redirect = "https://pinbot.example/oauth/discord"

// env is the Discord stand-in with two members, and a Client with
// sign-in.
type env struct {
	dc         *discordtest.Server
	alice, bob discordtest.Member
	c          *discorduser.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dc := discordtest.NewServer()
	t.Cleanup(dc.Close)
	g, err := dc.AddGuild(discordtest.Guild{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{dc: dc}
	if e.alice, err = dc.AddMember(discordtest.Member{GuildID: g.ID, Username: "alice", GlobalName: "Alice"}); err != nil {
		t.Fatal(err)
	}
	if e.bob, err = dc.AddMember(discordtest.Member{GuildID: g.ID, Username: "bob"}); err != nil {
		t.Fatal(err)
	}
	dc.AddOAuth2Redirect(redirect)
	e.c, err = discorduser.New(discorduser.Config{
		Token:        dc.Token(),
		APIURL:       dc.APIURL(),
		ClientSecret: dc.OAuth2ClientSecret(),
		AuthorizeURL: dc.OAuth2AuthorizeURL(),
		RedirectURL:  redirect,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// code opens the authorization page at the Client's address, signed in
// as user, and returns the code it redirects with.
func (e *env) code(t *testing.T, state string) string {
	t.Helper()
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Get(e.c.AuthCodeURL(state))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || loc.Query().Get("state") != state {
		t.Fatalf("authorization page: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code")
}

func TestUser(t *testing.T) {
	e := newEnv(t)
	u, err := e.c.User(t.Context(), e.alice.UserID.String())
	want := discorduser.User{ID: e.alice.UserID.String(), Username: "alice", GlobalName: "Alice"}
	if err != nil || u != want {
		t.Fatalf("User(alice) = %+v, %v; want %+v", u, err, want)
	}
	if u.Name() != "Alice" {
		t.Errorf("Name = %q", u.Name())
	}
	if u, _ := e.c.User(t.Context(), e.bob.UserID.String()); u.Name() != "bob" {
		t.Errorf("bob's Name = %q, want the username", u.Name())
	}
	reqs, err := e.dc.WaitRequests(t.Context(), discordtest.RouteGetUser, 1)
	if err != nil || reqs[0].Status != http.StatusOK {
		t.Fatalf("requests %+v, %v", reqs, err)
	}

	for _, id := range []string{"424242", "../gateway", ""} {
		if _, err := e.c.User(t.Context(), id); !errors.Is(err, discorduser.ErrUnknownUser) {
			t.Errorf("User(%q) = %v, want ErrUnknownUser", id, err)
		}
	}
	for _, f := range []discordtest.Fault{{Status: 502}, {Status: 429, RetryAfter: time.Second}} {
		if err := e.dc.Inject(discordtest.RouteGetUser, 1, f); err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.User(t.Context(), e.alice.UserID.String()); !errors.Is(err, discorduser.ErrUnavailable) {
			t.Errorf("User with %d injected = %v, want ErrUnavailable", f.Status, err)
		}
	}
	bad, err := discorduser.New(discorduser.Config{Token: "not-the-token", APIURL: e.dc.APIURL()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.User(t.Context(), e.alice.UserID.String())
	if err == nil || errors.Is(err, discorduser.ErrUnknownUser) || strings.Contains(err.Error(), "not-the-token") {
		t.Errorf("User with a wrong token = %v; want a 401 error without the token", err)
	}
}

func TestSignIn(t *testing.T) {
	e := newEnv(t)
	if !e.c.SignInEnabled() {
		t.Fatal("sign-in disabled")
	}
	u := e.c.AuthCodeURL("st")
	q, _ := url.Parse(u)
	if !strings.HasPrefix(u, e.dc.OAuth2AuthorizeURL()+"?") || q.Query().Get("scope") != "identify" ||
		q.Query().Get("client_id") != e.dc.OAuth2ClientID() || q.Query().Get("redirect_uri") != redirect {
		t.Fatalf("AuthCodeURL = %s", u)
	}
	if err := e.dc.SetOAuth2User(e.bob.UserID); err != nil {
		t.Fatal(err)
	}
	code := e.code(t, "st")
	me, err := e.c.SignIn(t.Context(), code)
	if err != nil || me.ID != e.bob.UserID.String() || me.Username != "bob" {
		t.Fatalf("SignIn = %+v, %v; want bob", me, err)
	}
	if _, err := e.c.SignIn(t.Context(), code); !errors.Is(err, discorduser.ErrCodeRejected) {
		t.Errorf("SignIn with a used code = %v, want ErrCodeRejected", err)
	}
	if err := e.dc.Inject(discordtest.RouteOAuth2Token, 1, discordtest.Fault{Status: 503}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.SignIn(t.Context(), e.code(t, "s")); !errors.Is(err, discorduser.ErrUnavailable) {
		t.Errorf("SignIn with the token endpoint down = %v, want ErrUnavailable", err)
	}
	if err := e.dc.Inject(discordtest.RouteGetCurrentUser, 1, discordtest.Fault{Status: 500}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.SignIn(t.Context(), e.code(t, "s")); !errors.Is(err, discorduser.ErrUnavailable) {
		t.Errorf("SignIn with /users/@me down = %v, want ErrUnavailable", err)
	}

	wrong, err := discorduser.New(discorduser.Config{Token: e.dc.Token(), APIURL: e.dc.APIURL(),
		ClientSecret: "wrong-secret", AuthorizeURL: e.dc.OAuth2AuthorizeURL(), RedirectURL: redirect})
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrong.SignIn(t.Context(), e.code(t, "s"))
	if err == nil || errors.Is(err, discorduser.ErrCodeRejected) || strings.Contains(err.Error(), "wrong-secret") ||
		!strings.Contains(err.Error(), "client id and secret") {
		t.Errorf("SignIn with a wrong secret = %v", err)
	}

	readOnly, err := discorduser.New(discorduser.Config{Token: e.dc.Token(), APIURL: e.dc.APIURL()})
	if err != nil {
		t.Fatal(err)
	}
	if readOnly.SignInEnabled() || readOnly.AuthCodeURL("s") != "" {
		t.Error("sign-in enabled without a secret")
	}
	if _, err := readOnly.SignIn(t.Context(), "c"); !errors.Is(err, discorduser.ErrSignInDisabled) {
		t.Errorf("SignIn without a secret = %v", err)
	}
}

func TestAvatarURL(t *testing.T) {
	c, err := discorduser.New(discorduser.Config{Token: "x"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		u    discorduser.User
		want string
	}{
		{discorduser.User{ID: "80351110224678912", Avatar: "8342729096ea3675442027381ff50dfe"},
			"https://cdn.discordapp.com/avatars/80351110224678912/8342729096ea3675442027381ff50dfe.png?size=128"},
		{discorduser.User{ID: "80351110224678912", Avatar: "a_8342729096ea3675442027381ff50dfe"},
			"https://cdn.discordapp.com/avatars/80351110224678912/a_8342729096ea3675442027381ff50dfe.png?size=128"},
		// (80351110224678912 >> 22) % 6 = 5
		{discorduser.User{ID: "80351110224678912"}, "https://cdn.discordapp.com/embed/avatars/5.png"},
		{discorduser.User{ID: "80351110224678912", Avatar: "../../x"}, "https://cdn.discordapp.com/embed/avatars/5.png"},
		{discorduser.User{ID: "nope"}, ""},
	}
	for _, tt := range tests {
		if got := c.AvatarURL(tt.u); got != tt.want {
			t.Errorf("AvatarURL(%+v) = %q, want %q", tt.u, got, tt.want)
		}
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		cfg discorduser.Config
		msg string
	}{
		{discorduser.Config{}, "Config.Token"},
		{discorduser.Config{Token: "x", APIURL: "discord.com"}, "Config.APIURL"},
		{discorduser.Config{Token: "x", ClientSecret: "sekrit", RedirectURL: redirect}, "Config.ClientID"},
		{discorduser.Config{Token: "x", ClientID: "1", ClientSecret: "sekrit"}, "Config.RedirectURL"},
		{discorduser.Config{Token: "x", RequestTimeout: -1}, "Config.RequestTimeout"},
	}
	for _, tt := range tests {
		if _, err := discorduser.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.msg) ||
			strings.Contains(err.Error(), "sekrit") {
			t.Errorf("New(%+v) = %v, want an error naming %s", tt.cfg, err, tt.msg)
		}
	}
}
