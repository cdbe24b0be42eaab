package web_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/bot/web/webtest"
)

// scopesRefusedText is the page of a grant without boards:write and
// pins:read.
const scopesRefusedText = "Pinterest did not give pinbot every permission it needs: it lacks boards:write, pins:read. " +
	"Nothing was linked. Run /link in Discord to try again, and allow everything Pinterest asks for. " +
	"If Pinterest did not ask for these, tell the bot's operator."

// TestCallbackRefusesMissingScopes: a grant lacking scopes pinbot needs
// gets a page naming them, the user who ran /link is told (OnRefused,
// with the /link request), nothing is stored or kept for confirmation,
// and Pinterest is asked nothing more. With every scope granted, the same
// user links, and OnLinked carries the /link request.
func TestCallbackRefusesMissingScopes(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1", Name: "Cats"})
	e.srv.SetGrantedScopes([]string{pinterest.ScopeBoardsRead, pinterest.ScopePinsWrite, pinterest.ScopeUserAccountsRead})
	req := links.Request{User: u1, Interaction: "link-interaction-token", At: t0.Add(-time.Minute)}

	b := e.browser()
	p := e.open(t, b, e.callbackURLFor(t, req))
	if p.Status != http.StatusForbidden || p.Title != "Nothing linked" || p.Message != scopesRefusedText || p.FormAction != "" {
		t.Fatalf("callback: %d %q %q (form %q); want 403 with %q", p.Status, p.Title, p.Message, p.FormAction, scopesRefusedText)
	}
	wantHeaders(t, "refused page", p.Header)
	e.nothingLinked(t, u1, "1001")
	if n := e.srv.Count(http.MethodGet, pinteresttest.PathUserAccount) + e.srv.Count(http.MethodGet, pinteresttest.PathBoards); n != 0 {
		t.Errorf("%d calls to Pinterest's API after the refused grant", n)
	}
	rs := e.refusals()
	if len(rs) != 1 || rs[0].req.User != u1 || rs[0].req.Interaction != req.Interaction || !rs[0].req.At.Equal(req.At) ||
		!slices.Equal(rs[0].missing, []string{"boards:write", "pins:read"}) {
		t.Fatalf("OnRefused calls %+v; want one for %+v missing boards:write, pins:read", rs, req)
	}
	if !strings.Contains(e.logs.String(), "oauth callback: pinterest granted fewer scopes than pinbot needs; nothing linked") {
		t.Errorf("the refusal was not logged:\n%s", e.logs)
	}

	e.srv.SetGrantedScopes(nil)
	b = e.browser()
	p = e.confirmPage(t, b, e.callbackURLFor(t, req))
	if done := e.submit(t, b, p, webtest.Confirm); done.Status != http.StatusOK || done.Title != "Linked" {
		t.Fatalf("confirm: %d %q %q", done.Status, done.Title, done.Message)
	}
	ev := e.events()
	if len(ev) != 1 || ev[0].req.User != u1 || ev[0].req.Interaction != req.Interaction || !ev[0].req.At.Equal(req.At) || ev[0].acct.Username != "alice" {
		t.Fatalf("OnLinked calls %+v; want one for %+v and alice", ev, req)
	}
	if n := len(e.refusals()); n != 1 {
		t.Errorf("%d OnRefused calls, want the first only", n)
	}
}
