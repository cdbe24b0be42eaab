package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/web"
	"github.com/pinbot/pinbot/internal/browsertest"
)

// browserBudget bounds each browser test.
const browserBudget = 30 * time.Second

// linkURL is the address /link gives user: Pinterest's authorization
// page (the stand-in's, which approves at once) for a new state.
func (e *env) linkURL(t *testing.T, user string) string {
	t.Helper()
	state, err := e.store.NewState(context.Background(), user, e.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	return e.pin.AuthCodeURL(state)
}

// tab opens a tab in a browser context of its own (cookies included):
// another person's browser.
func tab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	return ctx
}

// navigate opens u in ctx's tab, following redirects, and returns the
// status of the page it ends on.
func navigate(t *testing.T, ctx context.Context, u string) int {
	t.Helper()
	resp := browsertest.Run(t, ctx, chromedp.NavigateResponse(u))
	return int(resp.Status)
}

// press clicks the button matched by sel and returns the status of the
// page it leads to.
func press(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		t.Fatal(err)
	}
	return int(resp.Status)
}

// text returns the text of the element sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return browsertest.Run(t, ctx, chromedp.Text(chromedp.CSS(sel)))
}

// TestBrowserConfirmLink opens ann's /link address in headless Chromium:
// Pinterest approves and sends the browser back to the callback, which
// shows the confirmation page naming ann (name and avatar) and the
// Pinterest account (name and picture), without a console error; Confirm
// stores the link and shows the success page. Then another browser opens
// the same /link address, and the confirmation page's: both are refused,
// and nothing more is stored. Screenshots of each page are saved.
func TestBrowserConfirmLink(t *testing.T) {
	browser := browsertest.New(t, browserBudget)
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", "alice")
	e.srv.SetProfileImage("1001", e.img.URL+"/pinterest/1001.png")
	link := e.linkURL(t, u1)

	ann := tab(t, browser)
	con := browsertest.Listen(ann)
	if status := navigate(t, ann, link); status != http.StatusOK {
		t.Fatalf("opening /link's address: status %d", status)
	}
	confirmURL := browsertest.Run(t, ann, chromedp.Location())
	if !strings.Contains(confirmURL, web.ConfirmPath+"?") {
		t.Fatalf("the browser ended on %s, want the confirmation page", confirmURL)
	}
	if got := text(t, ann, "h1"); got != "Confirm the link" {
		t.Fatalf("page title %q", got)
	}
	cards := browsertest.Run(t, ann, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".card")].map(c => c.innerText)`))
	if len(cards) != 2 || !strings.Contains(cards[0], "Ann") || !strings.Contains(cards[0], "@ann") || !strings.Contains(cards[0], "ID "+u1) ||
		!strings.Contains(cards[1], "@alice") {
		t.Fatalf("the cards read %q; want Ann (@ann, ID %s), then @alice", cards, u1)
	}
	// Both pictures decoded: the 1×1 PNG the image server sends.
	pics := browsertest.Run(t, ann, chromedp.Evaluate[[]int](`[...document.querySelectorAll(".card img")].map(i => i.complete ? i.naturalWidth : -1)`))
	if len(pics) != 2 || pics[0] != 1 || pics[1] != 1 {
		t.Errorf("pictures' widths %v; want two loaded pictures", pics)
	}
	if got := text(t, ann, `button[value="confirm"]`); got != "Link @alice to Ann" {
		t.Errorf("confirm button reads %q", got)
	}
	browsertest.Screenshot(t, ann, "confirm.png")
	e.nothingLinked(t, u1, "1001")

	if status := press(t, ann, `button[value="confirm"]`); status != http.StatusOK {
		t.Fatalf("confirm: status %d", status)
	}
	if got, msg := text(t, ann, "h1"), text(t, ann, "p"); got != "Linked" || !strings.Contains(msg, "Linked Pinterest account alice to the Discord account Ann (@ann)") {
		t.Fatalf("after confirming: %q %q", got, msg)
	}
	browsertest.Screenshot(t, ann, "linked.png")
	u, err := e.store.User(context.Background(), u1)
	if err != nil || len(u.Accounts) != 1 || u.Active != "1001" {
		t.Fatalf("after confirming: user %+v, %v; want 1001 linked", u, err)
	}
	if _, err := e.store.Token(context.Background(), "1001"); err != nil {
		t.Fatalf("after confirming: token %v", err)
	}
	if errs := con.Errors(); len(errs) > 0 {
		t.Errorf("the pages wrote to the console:\n%s", strings.Join(errs, "\n"))
	}

	other := tab(t, browser)
	for _, c := range []struct {
		name, u    string
		status     int
		title, msg string
	}{
		{"the /link address", link, http.StatusBadRequest, "Link not valid", "already used"},
		{"the confirmation page", confirmURL, http.StatusForbidden, "Nothing linked", "this is another one"},
	} {
		status := navigate(t, other, c.u)
		if got, msg := text(t, other, "h1"), text(t, other, "p"); status != c.status || got != c.title || !strings.Contains(msg, c.msg) {
			t.Errorf("another browser opening %s: %d %q %q; want %d %q", c.name, status, got, msg, c.status, c.title)
		}
		if n := browsertest.Run(t, other, chromedp.Evaluate[int](`document.querySelectorAll("form").length`)); n != 0 {
			t.Errorf("another browser opening %s gets a form", c.name)
		}
	}
	browsertest.Screenshot(t, other, "other-browser.png")
	if ev := e.events(); len(ev) != 1 {
		t.Errorf("%d links stored, want the one confirmed", len(ev))
	}
}

// TestBrowserSignInAsAnother: with sign-in required, ann opens the /link
// address mallory sent her. The confirmation page names Mallory, offers
// no confirm button, only signing in with Discord; ann signs in as
// herself and is refused, naming both; nothing is stored.
func TestBrowserSignInAsAnother(t *testing.T) {
	browser := browsertest.New(t, browserBudget)
	e := newEnvWith(t, envOptions{signIn: true})
	e.srv.AddAccount("1001", "alice")
	if err := e.dc.SetOAuth2User(snowflake.MustParse(u1)); err != nil {
		t.Fatal(err)
	}

	ann := tab(t, browser)
	con := browsertest.Listen(ann)
	if status := navigate(t, ann, e.linkURL(t, mallory)); status != http.StatusOK {
		t.Fatalf("opening mallory's /link address: status %d", status)
	}
	if got, warn := text(t, ann, "h1"), text(t, ann, "p.warn"); got != "Confirm the link" || !strings.HasPrefix(warn, "Only continue if you are Mallory (@mallory)") {
		t.Fatalf("confirmation page: %q %q", got, warn)
	}
	if n := browsertest.Run(t, ann, chromedp.Evaluate[int](`document.querySelectorAll('button[value="confirm"]').length`)); n != 0 {
		t.Fatal("the page offers Confirm before signing in")
	}
	browsertest.Screenshot(t, ann, "sign-in-required.png")

	if status := press(t, ann, "a.button"); status != http.StatusForbidden {
		t.Errorf("signing in as ann: status %d, want 403", status)
	}
	want := "You signed in to Discord as Ann (@ann, ID " + u1 + "), but /link was run by Mallory (@mallory, ID " + mallory + "). Nothing was linked"
	if got := text(t, ann, "p"); !strings.HasPrefix(got, want) {
		t.Errorf("after signing in as ann: %q; want %q", got, want)
	}
	browsertest.Screenshot(t, ann, "sign-in-refused.png")
	// Chromium reports the refusal's 403 itself; nothing else may appear.
	for _, e := range con.Errors() {
		if !strings.Contains(e, web.DiscordCallbackPath+"?") || !strings.HasSuffix(e, "status of 403 (Forbidden)") {
			t.Errorf("the pages wrote to the console: %s", e)
		}
	}
	e.nothingLinked(t, mallory, "1001")
	e.nothingLinked(t, u1, "1001")
}

// TestBrowserMissingScopes: Pinterest grants fewer scopes than /link asks
// for. ann's browser, back from Pinterest, gets the page naming the scopes
// missing, with no form and no console error but Chromium's report of the
// 403 itself; nothing is stored.
func TestBrowserMissingScopes(t *testing.T) {
	browser := browsertest.New(t, browserBudget)
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", "alice")
	e.srv.SetGrantedScopes([]string{"boards:read", "pins:write", "user_accounts:read"})

	ann := tab(t, browser)
	con := browsertest.Listen(ann)
	if status := navigate(t, ann, e.linkURL(t, u1)); status != http.StatusForbidden {
		t.Errorf("opening /link's address: status %d, want 403", status)
	}
	if got, msg := text(t, ann, "h1"), text(t, ann, "p"); got != "Nothing linked" || msg != scopesRefusedText {
		t.Errorf("page %q %q; want %q", got, msg, scopesRefusedText)
	}
	if n := browsertest.Run(t, ann, chromedp.Evaluate[int](`document.querySelectorAll("form").length`)); n != 0 {
		t.Error("the refusal offers a form")
	}
	browsertest.Screenshot(t, ann, "scopes-refused.png")
	for _, e := range con.Errors() {
		if !strings.Contains(e, web.CallbackPath+"?") || !strings.HasSuffix(e, "status of 403 (Forbidden)") {
			t.Errorf("the page wrote to the console: %s", e)
		}
	}
	e.nothingLinked(t, u1, "1001")
	if n := len(e.refusals()); n != 1 {
		t.Errorf("%d OnRefused calls, want 1", n)
	}
}
