package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/bot/web"
)

// TestDeclinedShowsNoArbitraryText: the "error" parameter of an OAuth
// redirect is one of a handful of RFC 6749 codes; anything else must not
// reach the page, or anyone could make the bot's own origin display a
// sentence of their choosing, without even a valid state.
func TestDeclinedShowsNoArbitraryText(t *testing.T) {
	e := newEnv(t, nil)
	spoof := "Account suspended, re-verify at evil.example now"
	q := url.Values{"error": {spoof}}
	status, body, _ := e.get(t, e.ts.URL+web.CallbackPath+"?"+q.Encode())
	if strings.Contains(body, spoof) {
		t.Errorf("callback without any state echoed attacker text on the bot's origin (status %d): %q", status, body)
	}
}

// TestDisconnectAfterExchangeStoresNothing: once the code has been
// exchanged, Pinterest has issued a grant and the state and the code are
// both spent. A browser that goes away (tab closed, Stop pressed) before
// GET /user_account answers does not stop the callback, which finishes
// reading the account and keeps the link waiting; but nobody confirmed
// it, so nothing is stored.
func TestDisconnectAfterExchangeStoresNothing(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	e.srv.AddAccount("1001", "alice")
	cb := e.callbackURL(t, u1)

	arrived := make(chan struct{}, 1)
	// The first GET /user_account answers late, after the browser left.
	e.srv.Inject(pinteresttest.Fault{Method: http.MethodGet, Path: pinteresttest.PathUserAccount, Delay: 300 * time.Millisecond, Arrived: arrived})

	rctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, cb, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := e.ts.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-arrived // the code has been exchanged; the account is being read
	cancel()  // the browser goes away
	<-done
	// httptest.Server.Close waits for the handler to return.
	e.ts.Close()

	if n := e.tokenRequests(); n != 1 {
		t.Fatalf("%d token requests, want the one exchange", n)
	}
	if !webLogged(e.logs.String(), "link waiting for confirmation") {
		t.Errorf("the callback stopped with the browser:\n%s", e.logs)
	}
	if _, err := e.store.Token(ctx, "1001"); !errors.Is(err, links.ErrNoToken) {
		t.Errorf("Token(1001) = %v; nobody confirmed, want ErrNoToken", err)
	}
	e.nothingLinked(t, u1, "1001")
}
