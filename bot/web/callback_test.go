package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/bot/web"
	"github.com/pinbot/pinbot/bot/web/webtest"
)

const linkedText = "Linked Pinterest account alice to the Discord account Ann (@ann) that asked for this link with /link."

// TestCallbackLinksAccount is the happy path: the callback shows the
// confirmation page and stores nothing; the confirm button stores the
// link, once.
func TestCallbackLinksAccount(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1", Name: "Cats"})
	e.srv.SetProfileImage("1001", e.img.URL+"/pinterest/1001.png")
	cb := e.callbackURL(t, u1)

	b := e.browser()
	p := e.confirmPage(t, b, cb)
	wantWarning := "Only continue if you are Ann (@ann) on Discord and you ran /link yourself."
	if !strings.HasPrefix(p.Message, wantWarning) || !p.CanConfirm || p.SignInURL != "" {
		t.Fatalf("confirmation page: message %q, can confirm %t, sign-in %q; want the warning %q and the confirm button",
			p.Message, p.CanConfirm, p.SignInURL, wantWarning)
	}
	for _, want := range []string{"<strong>Ann</strong><br>@ann", "ID " + u1, "<strong>@alice</strong>", "Pins go to its board Cats",
		"Link @alice to Ann"} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("the confirmation page lacks %q:\n%s", want, p.Body)
		}
	}
	// Both pictures are inline, fetched by the handler: the page loads
	// nothing.
	if n := strings.Count(p.Body, `<img src="data:image/png;base64,`); n != 2 {
		t.Errorf("%d inline pictures, want the avatar and the profile image:\n%s", n, p.Body)
	}
	for _, bad := range []string{"http://", "https://", "<script"} {
		if strings.Contains(p.Body, bad) {
			t.Errorf("the confirmation page holds %q:\n%s", bad, p.Body)
		}
	}
	wantHeaders(t, "confirmation page", p.Header)
	// The code left the address bar with the redirect.
	if strings.Contains(p.URL, "code=") || !strings.Contains(p.URL, web.ConfirmPath+"?link=") {
		t.Errorf("confirmation page at %s", p.URL)
	}
	e.nothingLinked(t, u1, "1001")
	// Opening the page again shows it again, and stores nothing.
	if again := e.open(t, b, p.URL); again.Title != "Confirm the link" || again.Form.Get("csrf") != p.Form.Get("csrf") {
		t.Fatalf("reload: %d %q", again.Status, again.Title)
	}
	e.nothingLinked(t, u1, "1001")

	done := e.submit(t, b, p, webtest.Confirm)
	if done.Status != http.StatusOK || !strings.Contains(done.Message, linkedText) {
		t.Fatalf("confirm: %d %q; want 200 with %q", done.Status, done.Message, linkedText)
	}
	wantHeaders(t, "linked page", done.Header)

	u, err := e.store.User(ctx, u1)
	if err != nil || u.Active != "1001" || len(u.Accounts) != 1 {
		t.Fatalf("User(u1) = %+v, %v; want 1001 linked and active", u, err)
	}
	if a, err := e.store.Account(ctx, "1001"); err != nil || a.Username != "alice" {
		t.Fatalf("Account(1001) = %+v, %v", a, err)
	}
	tok, err := e.store.Token(ctx, "1001")
	if err != nil || tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Fatalf("stored token: %v (access %t, refresh %t)", err, tok != nil && tok.AccessToken != "", tok != nil && tok.RefreshToken != "")
	}
	// The stored token works at Pinterest, and was never refreshed.
	if n := e.tokenRequests(); n != 1 {
		t.Errorf("%d token requests, want the one exchange", n)
	}
	sess, err := pinterest.NewSession(tok, links.Saver(e.store, "1001"))
	if err != nil {
		t.Fatal(err)
	}
	if pa, err := e.pin.UserAccount(ctx, sess); err != nil || pa.ID != "1001" {
		t.Fatalf("UserAccount with the stored token = %+v, %v", pa, err)
	}
	// Its only board became its default board.
	want := links.Account{ID: "1001", Username: "alice", DefaultBoard: "b1", DefaultBoardName: "Cats"}
	if ev := e.events(); len(ev) != 1 || ev[0].user != u1 || ev[0].acct != want {
		t.Fatalf("OnLinked calls = %+v; want one for u1 and %+v", ev, want)
	}

	// A second POST of the same form stores nothing more.
	if again := e.submit(t, b, p, webtest.Confirm); again.Status != http.StatusConflict || !strings.Contains(again.Message, "confirmed already") {
		t.Errorf("second POST: %d %q; want 409 saying it was confirmed already", again.Status, again.Message)
	}
	// Replaying the same callback is refused before Pinterest is asked.
	before := e.tokenRequests()
	status, body, _ := e.get(t, cb)
	if status != http.StatusBadRequest || !strings.Contains(body, "already used") {
		t.Fatalf("replay: %d %q; want 400 saying the link was already used", status, body)
	}
	if n := e.tokenRequests(); n != before {
		t.Errorf("replay made %d token requests", n-before)
	}
	if ev := e.events(); len(ev) != 1 {
		t.Errorf("replay called OnLinked: %+v", ev)
	}
}

// wantHeaders checks the headers every page carries.
func wantHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	for k, want := range map[string]string{
		"Content-Type":           "text/html; charset=utf-8",
		"Cache-Control":          "no-store",
		"Referrer-Policy":        "no-referrer",
		"X-Frame-Options":        "DENY",
		"X-Content-Type-Options": "nosniff",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: header %s = %q, want %q", what, k, got, want)
		}
	}
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "img-src data:", "style-src 'sha256-", "form-action 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: Content-Security-Policy %q lacks %q", what, csp, want)
		}
	}
}

// TestCallbackDefaultBoard checks the default board a link leaves, and
// what the page says about it: an account with exactly one board gets it
// as its default, one with several (or whose boards could not be listed)
// gets none and the page says to choose in /settings, and a default
// chosen before is kept.
func TestCallbackDefaultBoard(t *testing.T) {
	const (
		onlyBoard = "Pins go to its board Cats; choose another default board with /settings in Discord."
		choose    = "Before you pin, choose the board pins go to with /settings in Discord (or name one with the board: option of /pin)."
	)
	cats, travel := pinteresttest.Board{ID: "b1", Name: "Cats"}, pinteresttest.Board{ID: "b2", Name: "Travel"}
	tests := []struct {
		name   string
		boards []pinteresttest.Board
		// before, when not nil, runs before the callback.
		before           func(t *testing.T, e *env)
		wantID, wantName string
		wantPage         string
	}{
		{name: "one board", boards: []pinteresttest.Board{cats}, wantID: "b1", wantName: "Cats", wantPage: onlyBoard},
		{name: "two boards", boards: []pinteresttest.Board{cats, travel}, wantPage: choose},
		{name: "no board", wantPage: choose},
		{name: "boards not listed", boards: []pinteresttest.Board{cats}, before: func(t *testing.T, e *env) {
			e.srv.Inject(pinteresttest.Fault{Method: http.MethodGet, Path: pinteresttest.PathBoards, Status: http.StatusBadRequest, Code: 1, Message: "bad"})
		}, wantPage: choose},
		{name: "default kept", boards: []pinteresttest.Board{cats}, before: func(t *testing.T, e *env) {
			acct := links.Account{ID: "1001", Username: "alice", DefaultBoard: "b9", DefaultBoardName: "Old"}
			if err := e.store.Link(context.Background(), u1, acct, &oauth2.Token{AccessToken: "a", RefreshToken: "r"}); err != nil {
				t.Fatal(err)
			}
		}, wantID: "b9", wantName: "Old", wantPage: "Pins go to its board Old; choose another default board with /settings in Discord."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.srv.AddAccount("1001", "alice", tt.boards...)
			cb := e.callbackURL(t, u1)
			if tt.before != nil {
				tt.before(t, e)
			}
			b := e.browser()
			cp := e.confirmPage(t, b, cb)
			if !strings.Contains(cp.Body, tt.wantPage) {
				t.Errorf("the confirmation page does not say %q:\n%s", tt.wantPage, cp.Body)
			}
			p := e.submit(t, b, cp, webtest.Confirm)
			if p.Status != http.StatusOK || !strings.Contains(p.Message, linkedText+" "+tt.wantPage+" You can close this tab") {
				t.Fatalf("confirm: %d %q; want 200 with %q", p.Status, p.Message, tt.wantPage)
			}
			a, err := e.store.Account(context.Background(), "1001")
			if err != nil || a.DefaultBoard != tt.wantID || a.DefaultBoardName != tt.wantName {
				t.Errorf("Account(1001) = %+v, %v; want default board %q (%q)", a, err, tt.wantID, tt.wantName)
			}
		})
	}
}

func TestCallbackRejectsStates(t *testing.T) {
	forged := strings.Repeat("A", links.StateLen)
	tests := []struct {
		name string
		// url returns the callback address to visit.
		url  func(t *testing.T, e *env) string
		msg  string
		code int
	}{
		{"expired", func(t *testing.T, e *env) string {
			cb := e.callbackURL(t, u1)
			e.clk.Advance(links.DefaultStateTTL + time.Millisecond)
			return cb
		}, "expired", http.StatusBadRequest},
		{"forged", func(t *testing.T, e *env) string {
			cb := e.callbackURL(t, u1) // a real code, a state never issued
			return withQuery(t, cb, "state", forged)
		}, "did not come from pinbot", http.StatusBadRequest},
		{"malformed", func(t *testing.T, e *env) string {
			return withQuery(t, e.callbackURL(t, u1), "state", "<x>")
		}, "did not come from pinbot", http.StatusBadRequest},
		{"no state", func(t *testing.T, e *env) string {
			return withQuery(t, e.callbackURL(t, u1), "state", "")
		}, "missing", http.StatusBadRequest},
		{"no code", func(t *testing.T, e *env) string {
			return withQuery(t, e.callbackURL(t, u1), "code", "")
		}, "missing", http.StatusBadRequest},
		{"huge query", func(t *testing.T, e *env) string {
			return withQuery(t, e.callbackURL(t, u1), "pad", strings.Repeat("p", 5000))
		}, "missing", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.srv.AddAccount("1001", "alice")
			u := tt.url(t, e)
			status, body, _ := e.get(t, u)
			if status != tt.code || !strings.Contains(body, tt.msg) || !strings.Contains(body, "/link") {
				t.Errorf("%d %q; want %d mentioning %q and /link", status, body, tt.code, tt.msg)
			}
			if n := e.tokenRequests(); n != 0 {
				t.Errorf("%d token requests; want none", n)
			}
			e.nothingLinked(t, u1, "1001")
		})
	}
}

func TestCallbackDeclined(t *testing.T) {
	tests := []struct {
		oauthErr string
		code     int
		msg      string
	}{
		{"access_denied", http.StatusOK, "You did not allow pinbot"},
		{"temporarily_unavailable", http.StatusBadGateway, "Pinterest did not answer; run /link again"},
		{"invalid_scope", http.StatusBadRequest, "Pinterest refused the link request (invalid_scope)"},
		{"<b>bold</b>", http.StatusBadRequest, "Pinterest refused the link request. Nothing was linked."},
	}
	for _, tt := range tests {
		t.Run(tt.oauthErr, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, nil)
			state, err := e.store.NewState(ctx, u1, t0)
			if err != nil {
				t.Fatal(err)
			}
			q := url.Values{"error": {tt.oauthErr}, "error_description": {"The user denied"}, "state": {state}}
			status, body, _ := e.get(t, e.ts.URL+web.CallbackPath+"?"+q.Encode())
			if status != tt.code || !strings.Contains(body, tt.msg) {
				t.Errorf("%d %q; want %d with %q", status, body, tt.code, tt.msg)
			}
			if n := e.tokenRequests(); n != 0 {
				t.Errorf("%d token requests; want none", n)
			}
			// The state is used up.
			if _, err := e.store.ConsumeState(ctx, state, t0); !errors.Is(err, links.ErrStateInvalid) {
				t.Errorf("state after decline: %v, want ErrStateInvalid", err)
			}
			e.nothingLinked(t, u1, "1001")
		})
	}
}

func TestCallbackPinterestFails(t *testing.T) {
	tests := []struct {
		name  string
		fault pinteresttest.Fault
		mod   func(*pinterest.Config)
		code  int
		msg   string
	}{
		{"exchange 503", withTimes(pinteresttest.ServerError(pinteresttest.PathToken, 503), -1), nil,
			http.StatusBadGateway, "Pinterest did not answer; run /link again"},
		{"exchange 500 once", pinteresttest.ServerError(pinteresttest.PathToken, 500), nil,
			http.StatusBadGateway, "Pinterest did not answer; run /link again"},
		{"exchange rate limited", pinteresttest.RateLimited(pinteresttest.PathToken, "60"), nil,
			http.StatusBadGateway, "Pinterest did not answer; run /link again"},
		{"exchange timeout", pinteresttest.Hang(pinteresttest.PathToken),
			func(c *pinterest.Config) { c.RequestTimeout = 200 * time.Millisecond },
			http.StatusBadGateway, "Pinterest did not answer; run /link again"},
		{"user account 500", withTimes(pinteresttest.ServerError(pinteresttest.PathUserAccount, 500), -1), nil,
			http.StatusBadGateway, "Pinterest did not answer; run /link again"},
		{"code rejected", pinteresttest.Fault{Path: pinteresttest.PathToken, Status: 400,
			Code: pinteresttest.CodeInvalidGrant, Message: "The authorization grant is invalid"}, nil,
			http.StatusBadRequest, "Pinterest did not accept this authorization"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.mod)
			e.srv.AddAccount("1001", "alice")
			cb := e.callbackURL(t, u1)
			e.srv.Inject(tt.fault)
			status, body, _ := e.get(t, cb)
			if status != tt.code || !strings.Contains(body, tt.msg) {
				t.Errorf("%d %q; want %d with %q", status, body, tt.code, tt.msg)
			}
			e.nothingLinked(t, u1, "1001")
			if tt.fault.Status != 0 && !webLogged(e.logs.String(), `"rid":"9`) {
				t.Errorf("the handler did not log x-pinterest-rid:\n%s", e.logs)
			}
		})
	}
}

func TestCallbackUnknownCode(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", "alice")
	cb := withQuery(t, e.callbackURL(t, u1), "code", "not-a-code")
	status, body, _ := e.get(t, cb)
	if status != http.StatusBadRequest || !strings.Contains(body, "Pinterest did not accept") {
		t.Errorf("%d %q; want 400 saying Pinterest did not accept it", status, body)
	}
	e.nothingLinked(t, u1, "1001")
}

func TestCallbackEscapesUsername(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", `<script>alert("x")</script>&co`)
	b := e.browser()
	p := e.confirmPage(t, b, e.callbackURL(t, u1))
	done := e.submit(t, b, p, webtest.Confirm)
	if done.Status != http.StatusOK {
		t.Fatalf("status %d: %s", done.Status, done.Body)
	}
	for _, body := range []string{p.Body, done.Body} {
		if strings.Contains(body, "<script>") || !strings.Contains(body, "&lt;script&gt;") || !strings.Contains(body, "&amp;co") {
			t.Errorf("username not escaped: %s", body)
		}
	}
}

func TestCallbackSecondUserSameAccount(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", "alice")
	for _, user := range []string{u1, u2} {
		if p := e.link(t, user); p.Status != http.StatusOK || p.Title != "Linked" {
			t.Fatalf("%s: %d %s", user, p.Status, p.Message)
		}
	}
	for _, user := range []string{u1, u2} {
		u, err := e.store.User(ctx, user)
		if err != nil || u.Active != "1001" {
			t.Errorf("User(%s) = %+v, %v; want 1001 active", user, u, err)
		}
	}
	// The second link's token replaced the first one and works.
	tok, err := e.store.Token(ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := pinterest.NewSession(tok, links.Saver(e.store, "1001"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.pin.UserAccount(ctx, sess); err != nil {
		t.Errorf("UserAccount with the latest token: %v", err)
	}
}

func TestCallbackTooManyAccounts(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", "alice")
	for i := range links.MaxAccountsPerUser {
		id := "x" + strings.Repeat("1", i+1)
		if err := e.store.Link(ctx, u1, links.Account{ID: id}, e.srv.AddAccount(id, "n").Token()); err != nil {
			t.Fatal(err)
		}
	}
	p := e.link(t, u1)
	if p.Status != http.StatusConflict || !strings.Contains(p.Message, "/unlink") {
		t.Errorf("%d %q; want 409 suggesting /unlink", p.Status, p.Message)
	}
	if _, err := e.store.Token(ctx, "1001"); !errors.Is(err, links.ErrNoToken) {
		t.Errorf("Token(1001) = %v, want ErrNoToken", err)
	}
}

// TestLogsHoldNoSecrets runs a successful link, a replay, a failed one and
// a refresh, all logging at trace level into one buffer, and searches the
// logs for every token, code and state involved.
func TestLogsHoldNoSecrets(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", "alice")
	var secrets []string
	codeAndState := func(cb string) {
		u, err := url.Parse(cb)
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, u.Query().Get("code"), u.Query().Get("state"))
	}

	good := e.callbackURL(t, u1)
	codeAndState(good)
	b := e.browser()
	p := e.confirmPage(t, b, good)
	secrets = append(secrets, p.Form.Get("link"), p.Form.Get("csrf"))
	for _, c := range b.Client().Jar.Cookies(mustParse(t, e.ts.URL)) {
		secrets = append(secrets, c.Value)
	}
	if done := e.submit(t, b, p, webtest.Confirm); done.Status != http.StatusOK {
		t.Fatalf("confirm: %d %s", done.Status, done.Message)
	}
	e.submit(t, b, p, webtest.Confirm) // a second POST
	e.get(t, good)                     // replay
	tok, err := e.store.Token(ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, tok.AccessToken, tok.RefreshToken)

	bad := e.callbackURL(t, u2)
	codeAndState(bad)
	e.srv.Inject(pinteresttest.ServerError(pinteresttest.PathToken, 502))
	if status, _, _ := e.get(t, bad); status != http.StatusBadGateway {
		t.Fatalf("failed exchange: status %d", status)
	}

	// A refresh through the store's saver logs too.
	e.srv.ExpireAccessTokens("1001")
	sess, err := pinterest.NewSession(tok, links.Saver(e.store, "1001"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.pin.UserAccount(ctx, sess); err != nil {
		t.Fatal(err)
	}
	rotated, err := e.store.Token(ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, rotated.AccessToken, rotated.RefreshToken)

	logs := e.logs.String()
	if !webLogged(logs, "pinterest account linked") || !webLogged(logs, `"rid":"9`) {
		t.Fatalf("the logs lack the expected lines:\n%s", logs)
	}
	for _, s := range secrets {
		if s == "" {
			t.Fatal("empty secret")
		}
		if strings.Contains(logs, s) {
			t.Errorf("secret %.8s… found in the logs", s)
		}
	}
}

// webLogged reports whether a log line of the handler (component web)
// contains s.
func webLogged(logs, s string) bool {
	for line := range strings.Lines(logs) {
		if strings.Contains(line, `"component":"web"`) && strings.Contains(line, s) {
			return true
		}
	}
	return false
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func withQuery(t *testing.T, raw, key, value string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if value == "" {
		q.Del(key)
	} else {
		q.Set(key, value)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func withTimes(f pinteresttest.Fault, n int) pinteresttest.Fault {
	f.Times = n
	return f
}
