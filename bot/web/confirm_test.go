package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/web"
	"github.com/pinbot/pinbot/bot/web/webtest"
)

// TestHijackAttempt: mallory runs /link and sends her address to ann,
// whose browser is signed in to Pinterest as @alice. Ann approves on
// Pinterest, and the page she lands on names mallory. Whatever ann does
// short of pressing confirm, and whatever mallory does, nothing is
// stored.
func TestHijackAttempt(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", "alice")
	cb := e.callbackURL(t, mallory) // mallory's /link, opened by ann

	victim := e.browser()
	p := e.confirmPage(t, victim, cb)
	want := "Only continue if you are Mallory (@mallory) on Discord and you ran /link yourself. " +
		"If someone sent you this link, stop here and press Cancel"
	if !strings.HasPrefix(p.Message, want) || !strings.Contains(p.Body, "ID "+mallory) {
		t.Fatalf("the page ann sees: %q; want it to name mallory: %q", p.Message, want)
	}
	e.nothingLinked(t, mallory, "1001")

	// Mallory gets hold of the page's address and even its form, and
	// posts it from her own browser: another browser, refused, and the
	// link is spent.
	attacker := e.browser()
	if got := e.open(t, attacker, p.URL); got.Status != http.StatusForbidden || !strings.Contains(got.Message, "another one") {
		t.Errorf("mallory opening the page: %d %q; want 403", got.Status, got.Message)
	}
	if got := e.submit(t, attacker, p, webtest.Confirm); got.Status != http.StatusForbidden {
		t.Errorf("mallory posting the form: %d %q; want 403", got.Status, got.Message)
	}
	e.nothingLinked(t, mallory, "1001")
	if got := e.submit(t, victim, p, webtest.Confirm); got.Status != http.StatusConflict || !strings.Contains(got.Message, "canceled") {
		t.Errorf("confirming after mallory's attempt: %d %q; want 409, canceled", got.Status, got.Message)
	}
	e.nothingLinked(t, mallory, "1001")

	// Ann, reading the warning, presses Cancel on another attempt.
	p = e.confirmPage(t, victim, e.callbackURL(t, mallory))
	if got := e.submit(t, victim, p, webtest.Cancel); got.Status != http.StatusOK || !strings.Contains(got.Message, "You canceled: nothing was linked") {
		t.Errorf("cancel: %d %q", got.Status, got.Message)
	}
	if got := e.submit(t, victim, p, webtest.Confirm); got.Status != http.StatusConflict {
		t.Errorf("confirm after cancel: %d %q; want 409", got.Status, got.Message)
	}
	e.nothingLinked(t, mallory, "1001")

	// Ann leaves a third attempt alone: it expires, and is forgotten.
	p = e.confirmPage(t, victim, e.callbackURL(t, mallory))
	e.clk.Advance(web.DefaultConfirmTTL + time.Second)
	if got := e.submit(t, victim, p, webtest.Confirm); got.Status != http.StatusBadRequest || !strings.Contains(got.Message, "expired") {
		t.Errorf("confirm after expiry: %d %q; want 400, expired", got.Status, got.Message)
	}
	e.nothingLinked(t, mallory, "1001")
}

// TestHijackAttemptWithSignIn: with sign-in required, the victim cannot
// confirm by mistake: the page asks to sign in with Discord first, and
// signing in as herself refuses the link, naming both users.
func TestHijackAttemptWithSignIn(t *testing.T) {
	e := newEnvWith(t, envOptions{signIn: true})
	e.srv.AddAccount("1001", "alice")
	victim := e.browser()
	p := e.confirmPage(t, victim, e.callbackURL(t, mallory))
	if p.CanConfirm || p.SignInURL == "" || !strings.HasPrefix(p.SignInURL, e.dc.OAuth2AuthorizeURL()+"?") {
		t.Fatalf("confirmation page: can confirm %t, sign-in %q; want only the sign-in", p.CanConfirm, p.SignInURL)
	}
	// A confirmation posted before signing in (not from the page, which
	// has no such button) is refused, and spends the link.
	if got := e.submit(t, victim, p, webtest.Confirm); got.Status != http.StatusForbidden || !strings.Contains(got.Message, "sign in with Discord") {
		t.Errorf("confirm before signing in: %d %q; want 403", got.Status, got.Message)
	}
	e.nothingLinked(t, mallory, "1001")

	p = e.confirmPage(t, victim, e.callbackURL(t, mallory))
	if err := e.dc.SetOAuth2User(snowflake.MustParse(u1)); err != nil { // ann signs in as herself
		t.Fatal(err)
	}
	got := e.open(t, victim, p.SignInURL)
	want := "You signed in to Discord as Ann (@ann, ID " + u1 + "), but /link was run by Mallory (@mallory, ID " + mallory + "). Nothing was linked"
	if got.Status != http.StatusForbidden || !strings.HasPrefix(got.Message, want) {
		t.Fatalf("sign-in as ann: %d %q; want 403 with %q", got.Status, got.Message, want)
	}
	wantHeaders(t, "sign-in refusal", got.Header)
	if got := e.submit(t, victim, p, webtest.Confirm); got.Status != http.StatusConflict {
		t.Errorf("confirm after the refusal: %d %q; want 409", got.Status, got.Message)
	}
	e.nothingLinked(t, mallory, "1001")
	e.nothingLinked(t, u1, "1001")
}

// TestSignInLinks: the user who ran /link signs in with Discord and
// confirms.
func TestSignInLinks(t *testing.T) {
	e := newEnvWith(t, envOptions{signIn: true})
	e.srv.AddAccount("1001", "alice")
	if err := e.dc.SetOAuth2User(snowflake.MustParse(u1)); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	p := e.confirmPage(t, b, e.callbackURL(t, u1))
	signIn := p.SignInURL
	p = e.open(t, b, signIn)
	if p.Status != http.StatusOK || p.Title != "Confirm the link" || !p.CanConfirm || p.SignInURL != "" ||
		!strings.Contains(p.Body, "You signed in with Discord as Ann (@ann): the account that ran /link.") {
		t.Fatalf("after signing in: %d %q, can confirm %t:\n%s", p.Status, p.Title, p.CanConfirm, p.Body)
	}
	if len(p.Redirects) != 2 || !strings.Contains(p.Redirects[0], web.DiscordCallbackPath+"?") {
		t.Fatalf("redirects %v; want from Discord's page to the sign-in callback, then to the confirmation page", p.Redirects)
	}
	e.nothingLinked(t, u1, "1001")
	// The sign-in's state works once.
	if again := e.open(t, b, p.Redirects[0]); again.Status != http.StatusBadRequest || !strings.Contains(again.Message, "sign-in is not valid") {
		t.Errorf("sign-in replayed: %d %q", again.Status, again.Message)
	}
	done := e.submit(t, b, p, webtest.Confirm)
	if done.Status != http.StatusOK || !strings.Contains(done.Message, linkedText) {
		t.Fatalf("confirm: %d %q", done.Status, done.Message)
	}
	if ev := e.events(); len(ev) != 1 || ev[0].user != u1 {
		t.Errorf("OnLinked calls %+v", ev)
	}
}

// TestSignInDeclinedOrFailing: a sign-in declined on Discord's page ends
// the link; one whose code Discord refuses, or that meets Discord down,
// leaves it waiting, to sign in again.
func TestSignInDeclinedOrFailing(t *testing.T) {
	e := newEnvWith(t, envOptions{signIn: true})
	e.srv.AddAccount("1001", "alice")
	if err := e.dc.SetOAuth2User(snowflake.MustParse(u1)); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	p := e.confirmPage(t, b, e.callbackURL(t, u1))

	if err := e.dc.Inject(discordtest.RouteOAuth2Token, 1, discordtest.Fault{Status: http.StatusServiceUnavailable}); err != nil {
		t.Fatal(err)
	}
	if got := e.open(t, b, p.SignInURL); got.Status != http.StatusBadGateway || !strings.Contains(got.Message, "Discord did not answer the sign-in") {
		t.Errorf("token endpoint down: %d %q", got.Status, got.Message)
	}
	p = e.open(t, b, p.URL) // back to the confirmation page: a new sign-in
	if err := e.dc.Inject(discordtest.RouteOAuth2Token, 1, discordtest.Fault{Status: http.StatusBadRequest}); err != nil {
		t.Fatal(err)
	}
	if got := e.open(t, b, p.SignInURL); got.Status != http.StatusBadGateway && got.Status != http.StatusBadRequest {
		t.Errorf("token endpoint refusing: %d %q", got.Status, got.Message)
	}
	p = e.open(t, b, p.URL)
	if p.Title != "Confirm the link" || p.SignInURL == "" {
		t.Fatalf("the link no longer waits: %d %q", p.Status, p.Message)
	}
	e.dc.DenyOAuth2()
	if got := e.open(t, b, p.SignInURL); got.Status != http.StatusOK || !strings.Contains(got.Message, "You did not sign in with Discord") {
		t.Errorf("declined: %d %q", got.Status, got.Message)
	}
	if got := e.submit(t, b, p, webtest.Confirm); got.Status != http.StatusConflict {
		t.Errorf("confirm after declining: %d %q; want 409", got.Status, got.Message)
	}
	e.nothingLinked(t, u1, "1001")
}

// TestConfirmRefusals: every way a POST can differ from the page's form
// gets a page saying so, and stores nothing; those that reach the link
// spend it, so that the right form afterwards is refused too.
func TestConfirmRefusals(t *testing.T) {
	tests := []struct {
		name string
		// post sends the forged request; p is the genuine page.
		post func(t *testing.T, e *env, b *webtest.Browser, p webtest.Page) webtest.Page
		code int
		msg  string
		// spends reports whether the link is canceled by it.
		spends bool
	}{
		{"missing token", func(t *testing.T, e *env, b *webtest.Browser, p webtest.Page) webtest.Page {
			return post(t, b, p, url.Values{"link": {p.Form.Get("link")}, "action": {"confirm"}})
		}, http.StatusForbidden, "security token is missing or wrong", true},
		{"wrong token", func(t *testing.T, e *env, b *webtest.Browser, p webtest.Page) webtest.Page {
			return post(t, b, p, url.Values{"link": {p.Form.Get("link")}, "csrf": {strings.Repeat("A", 43)}, "action": {"confirm"}})
		}, http.StatusForbidden, "security token is missing or wrong", true},
		{"token of another link", func(t *testing.T, e *env, b *webtest.Browser, p webtest.Page) webtest.Page {
			other := e.confirmPage(t, b, e.callbackURL(t, u1))
			return post(t, b, p, url.Values{"link": {p.Form.Get("link")}, "csrf": {other.Form.Get("csrf")}, "action": {"confirm"}})
		}, http.StatusForbidden, "security token is missing or wrong", true},
		{"unknown link", func(t *testing.T, e *env, b *webtest.Browser, p webtest.Page) webtest.Page {
			return post(t, b, p, url.Values{"link": {"nope"}, "csrf": p.Form["csrf"], "action": {"confirm"}})
		}, http.StatusBadRequest, "expired or the bot restarted: run /link again in Discord", false},
		{"no cookie", func(t *testing.T, e *env, b *webtest.Browser, p webtest.Page) webtest.Page {
			return post(t, webtest.NewBrowser(nil), p, withAction(p.Form, "confirm"))
		}, http.StatusForbidden, "another one", true},
		{"unknown action", func(t *testing.T, e *env, b *webtest.Browser, p webtest.Page) webtest.Page {
			return post(t, b, p, withAction(p.Form, "link"))
		}, http.StatusBadRequest, "security token", true},
		{"expired", func(t *testing.T, e *env, b *webtest.Browser, p webtest.Page) webtest.Page {
			e.clk.Advance(web.DefaultConfirmTTL + time.Millisecond)
			return e.submit(t, b, p, webtest.Confirm)
		}, http.StatusBadRequest, "expired", true},
		{"GET with the form", func(t *testing.T, e *env, b *webtest.Browser, p webtest.Page) webtest.Page {
			return e.open(t, b, p.FormAction+"?"+withAction(p.Form, "confirm").Encode())
		}, http.StatusBadRequest, "never by opening an address", false},
		{"cross-site", func(t *testing.T, e *env, b *webtest.Browser, p webtest.Page) webtest.Page {
			req := formRequest(t, p, withAction(p.Form, "confirm"))
			req.Header.Set("Sec-Fetch-Site", "cross-site")
			return do(t, b, req)
		}, http.StatusForbidden, "did not come from the confirmation page", false},
		{"not a form", func(t *testing.T, e *env, b *webtest.Browser, p webtest.Page) webtest.Page {
			req := formRequest(t, p, withAction(p.Form, "confirm"))
			req.Header.Set("Content-Type", "text/plain")
			return do(t, b, req)
		}, http.StatusBadRequest, "did not come from the confirmation page", false},
		{"huge form", func(t *testing.T, e *env, b *webtest.Browser, p webtest.Page) webtest.Page {
			f := withAction(p.Form, "confirm")
			f.Set("pad", strings.Repeat("x", 5000))
			return post(t, b, p, f)
		}, http.StatusBadRequest, "did not come from the confirmation page", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.srv.AddAccount("1001", "alice")
			b := e.browser()
			p := e.confirmPage(t, b, e.callbackURL(t, u1))
			got := tt.post(t, e, b, p)
			if got.Status != tt.code || !strings.Contains(got.Message, tt.msg) {
				t.Errorf("%d %q; want %d with %q", got.Status, got.Message, tt.code, tt.msg)
			}
			wantHeaders(t, tt.name, got.Header)
			e.nothingLinked(t, u1, "1001")
			after := e.submit(t, b, p, webtest.Confirm)
			switch {
			case tt.name == "expired":
				if after.Status != http.StatusBadRequest {
					t.Errorf("the genuine form after expiry: %d %q", after.Status, after.Message)
				}
				e.nothingLinked(t, u1, "1001")
			case tt.spends:
				if after.Status != http.StatusConflict || !strings.Contains(after.Message, "canceled") {
					t.Errorf("the genuine form afterwards: %d %q; want 409, canceled", after.Status, after.Message)
				}
				e.nothingLinked(t, u1, "1001")
			default:
				if after.Status != http.StatusOK || after.Title != "Linked" {
					t.Errorf("the genuine form afterwards: %d %q; want it linked", after.Status, after.Message)
				}
			}
		})
	}
}

// TestDoublePost: two POSTs of the form at once (a double click) store
// the link once; the other is told it was confirmed already.
func TestDoublePost(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", "alice")
	b := e.browser()
	p := e.confirmPage(t, b, e.callbackURL(t, u1))
	var wg sync.WaitGroup
	pages := make([]webtest.Page, 2)
	for i := range pages {
		wg.Go(func() {
			req := formRequest(t, p, withAction(p.Form, "confirm"))
			resp, err := b.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			pages[i] = webtest.Page{Status: resp.StatusCode}
		})
	}
	wg.Wait()
	codes := map[int]int{}
	for _, pg := range pages {
		codes[pg.Status]++
	}
	if codes[http.StatusOK] != 1 || codes[http.StatusConflict] != 1 {
		t.Errorf("statuses %v; want one 200 and one 409", codes)
	}
	if ev := e.events(); len(ev) != 1 {
		t.Errorf("OnLinked calls %+v; want one", ev)
	}
	if n := e.tokenRequests(); n != 1 {
		t.Errorf("%d token requests; want the one exchange", n)
	}
}

// TestPendingBounds: a user's links waiting beyond three drop the
// oldest; the confirmation TTL is configurable.
func TestPendingBounds(t *testing.T) {
	e := newEnvWith(t, envOptions{web: func(c *web.Config) { c.ConfirmTTL = time.Minute }})
	e.srv.AddAccount("1001", "alice")
	b := e.browser()
	var ps []webtest.Page
	for range 4 {
		ps = append(ps, e.confirmPage(t, b, e.callbackURL(t, u1)))
		e.clk.Advance(time.Second)
	}
	if got := e.submit(t, b, ps[0], webtest.Confirm); got.Status != http.StatusBadRequest {
		t.Errorf("the oldest of four: %d %q; want it dropped", got.Status, got.Message)
	}
	if !strings.Contains(ps[3].Body, "(in a minute)") {
		t.Errorf("the page does not say it expires in a minute:\n%s", ps[3].Body)
	}
	e.clk.Advance(time.Minute)
	if got := e.submit(t, b, ps[3], webtest.Confirm); got.Status != http.StatusBadRequest || !strings.Contains(got.Message, "expired") {
		t.Errorf("after the configured TTL: %d %q", got.Status, got.Message)
	}
	e.nothingLinked(t, u1, "1001")
}

// TestConfirmPictures: pictures that are not pictures, or not from the
// allowed sources, are left out; the page still works.
func TestConfirmPictures(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", "alice")
	e.srv.SetProfileImage("1001", e.img.URL+"/broken/1001.png")
	p := e.confirmPage(t, e.browser(), e.callbackURL(t, u1))
	if n := strings.Count(p.Body, `<img src="data:image/png;base64,`); n != 1 {
		t.Errorf("%d pictures; want the avatar only", n)
	}
	e.srv.SetProfileImage("1001", "https://evil.example/x.png")
	p = e.confirmPage(t, e.browser(), e.callbackURL(t, u1))
	if n := strings.Count(p.Body, "<img "); n != 1 || strings.Contains(p.Body, "evil.example") {
		t.Errorf("a picture from elsewhere: %d pictures:\n%s", n, p.Body)
	}
}

// TestCallbackDiscordFails: Discord unable to say who ran /link stops the
// callback before the code is exchanged.
func TestCallbackDiscordFails(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", "alice")
	if err := e.dc.Inject(discordtest.RouteGetUser, 1, discordtest.Fault{Status: http.StatusBadGateway}); err != nil {
		t.Fatal(err)
	}
	status, body, _ := e.get(t, e.callbackURL(t, u1))
	if status != http.StatusBadGateway || !strings.Contains(body, "Discord did not answer") {
		t.Errorf("%d %q", status, body)
	}
	if n := e.tokenRequests(); n != 0 {
		t.Errorf("%d token requests; want none", n)
	}
	e.nothingLinked(t, u1, "1001")
}

func withAction(form url.Values, action string) url.Values {
	f := url.Values{}
	for k, vs := range form {
		f[k] = vs
	}
	f.Set("action", action)
	return f
}

// formRequest is the POST of form to p's form action, as the page's form
// sends it.
func formRequest(t *testing.T, p webtest.Page, form url.Values) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, p.FormAction, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}

func post(t *testing.T, b *webtest.Browser, p webtest.Page, form url.Values) webtest.Page {
	t.Helper()
	got, err := b.PostForm(context.Background(), p.FormAction, form)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func do(t *testing.T, b *webtest.Browser, req *http.Request) webtest.Page {
	t.Helper()
	got, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestUnderAPathPrefix: behind a proxy that serves the listener under a
// path of its own, the flow's redirects and form stay under it.
func TestUnderAPathPrefix(t *testing.T) {
	e := newEnvWith(t, envOptions{signIn: true, prefix: "/pinbot"})
	e.srv.AddAccount("1001", "alice")
	if err := e.dc.SetOAuth2User(snowflake.MustParse(u1)); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	p := e.confirmPage(t, b, e.callbackURL(t, u1))
	if !strings.HasPrefix(p.URL, e.ts.URL+"/pinbot"+web.ConfirmPath+"?") || p.FormAction != e.ts.URL+"/pinbot"+web.ConfirmPath {
		t.Fatalf("confirmation page at %s, form to %s; want both under /pinbot", p.URL, p.FormAction)
	}
	if p = e.open(t, b, p.SignInURL); !p.CanConfirm || !strings.HasPrefix(p.URL, e.ts.URL+"/pinbot"+web.ConfirmPath+"?") {
		t.Fatalf("after signing in: %d %q at %s", p.Status, p.Message, p.URL)
	}
	if done := e.submit(t, b, p, webtest.Confirm); done.Title != "Linked" {
		t.Fatalf("confirm: %d %q", done.Status, done.Message)
	}
}

// TestConfirmAfterRestart: a link waiting for confirmation is kept in
// memory only. After a restart, its page and its form answer that the
// request expired or the bot restarted and that /link must be run again,
// and nothing is stored; a new /link then links.
func TestConfirmAfterRestart(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", "alice")
	b := e.browser()
	p := e.confirmPage(t, b, e.callbackURL(t, u1))
	e.restart(t)
	const want = "This link request expired or the bot restarted: run /link again in Discord."
	for name, got := range map[string]webtest.Page{
		"page": e.open(t, b, p.URL),
		"form": e.submit(t, b, p, webtest.Confirm),
	} {
		if got.Status != http.StatusBadRequest || got.Title != "Link request expired" || !strings.Contains(got.Message, want) {
			t.Errorf("%s after a restart: %d %q %q", name, got.Status, got.Title, got.Message)
		}
	}
	e.nothingLinked(t, u1, "1001")
	if done := e.link(t, u1); done.Title != "Linked" {
		t.Fatalf("a new /link after the restart: %d %q", done.Status, done.Message)
	}
}
