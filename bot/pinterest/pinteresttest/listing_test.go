package pinteresttest_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// listed is one listing page as read.
type listed struct {
	status   int
	code     int
	ids      []string
	times    []string // created_at
	items    []map[string]any
	bookmark *string
}

// list reads one page of path (PathPins or a BoardPinsPath) with query q.
func (c client) list(path, tok string, q url.Values) listed {
	c.t.Helper()
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	a := c.must(http.MethodGet, path, bearer(tok), nil)
	l := listed{status: a.status, code: a.code()}
	if a.status != http.StatusOK {
		return l
	}
	bm, present := a.body["bookmark"]
	if !present {
		c.t.Fatalf("GET %s: no bookmark field", path)
	}
	if s, ok := bm.(string); ok {
		l.bookmark = &s
	}
	for _, it := range a.body["items"].([]any) {
		m := it.(map[string]any)
		l.items = append(l.items, m)
		l.ids = append(l.ids, m["id"].(string))
		l.times = append(l.times, m["created_at"].(string))
	}
	return l
}

// listAll follows the bookmarks of path to the end with pages of size,
// and returns the ids and the number of pages.
func (c client) listAll(path, tok string, size int) (ids []string, pages int) {
	c.t.Helper()
	q := url.Values{"page_size": {strconv.Itoa(size)}}
	for {
		pages++
		if pages > 100 {
			c.t.Fatal("listing does not end")
		}
		l := c.list(path, tok, q)
		if l.status != http.StatusOK {
			c.t.Fatalf("page %d: status %d code %d", pages, l.status, l.code)
		}
		ids = append(ids, l.ids...)
		if l.bookmark == nil {
			return ids, pages
		}
		q.Set("bookmark", *l.bookmark)
	}
}

// direct makes a pin on accountID's board at t0+at and returns its id.
func direct(srv *pinteresttest.Server, accountID, board string, at time.Duration) string {
	return srv.CreateDirect(pinteresttest.Pin{AccountID: accountID, BoardID: board, CreatedAt: t0.Add(at)}).ID
}

// TestListPinsNewestFirst: the listing holds the account's pins, made
// through the API and directly, newest first by creation time whatever
// the order they were recorded in, with their fields and created_at from
// the ledger in whole seconds; page_size defaults to 25, the bookmark
// leads to the end, and a page of another size or a bad bookmark is
// refused.
func TestListPinsNewestFirst(t *testing.T) {
	srv, clk, c := newServer(t)
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"}, pinteresttest.Board{ID: "b2"})
	other := srv.AddAccount("1002", "bob", pinteresttest.Board{ID: "b9"})
	// 30 direct pins, one a minute from t0, recorded newest first.
	want := make([]string, 30)
	for i := 29; i >= 0; i-- {
		want[29-i] = direct(srv, "1001", "b1", time.Duration(i)*time.Minute)
	}
	direct(srv, "1002", "b9", time.Hour)
	// One through the API, at t0+1h and half a second.
	clk.Set(t0.Add(time.Hour + 500*time.Millisecond))
	a := c.must(http.MethodPost, pinteresttest.PathPins, bearer(cred.AccessToken),
		strings.NewReader(`{"board_id":"b2","media_source":{"source_type":"image_url","url":"https://x.example/a.png"},"link":"https://l.example/?pinbot=m1","title":"t"}`))
	if a.status != http.StatusCreated {
		t.Fatalf("pin: %d %v", a.status, a.body)
	}
	want = append([]string{a.str("id")}, want...)

	first := c.list(pinteresttest.PathPins, cred.AccessToken, nil)
	if first.status != 200 || len(first.ids) != 25 || first.bookmark == nil {
		t.Fatalf("first page: status %d, %d pins, bookmark %v; want 25 and a bookmark", first.status, len(first.ids), first.bookmark)
	}
	if got := first.items[0]; got["link"] != "https://l.example/?pinbot=m1" || got["board_id"] != "b2" ||
		got["created_at"] != "2030-01-02T04:04:05Z" || got["title"] != "t" || got["is_owner"] != true {
		t.Errorf("newest pin = %v", got)
	}
	if got := first.times[1]; got != "2030-01-02T03:33:05Z" {
		t.Errorf("second pin created_at = %s, want t0+29m", got)
	}
	for size, wantPages := range map[int]int{7: 5, 10: 4, 31: 1, 30: 2} {
		ids, pages := c.listAll(pinteresttest.PathPins, cred.AccessToken, size)
		if strings.Join(ids, ",") != strings.Join(want, ",") || pages != wantPages {
			t.Errorf("listing in pages of %d: %d pages %v, want %d pages %v", size, pages, ids, wantPages, want)
		}
	}
	if ids, _ := c.listAll(pinteresttest.PathPins, other.AccessToken, 25); len(ids) != 1 {
		t.Errorf("bob's listing: %v", ids)
	}
	for _, q := range []string{"page_size=0", "page_size=251", "page_size=x", "bookmark=%21%21", "bookmark=b2Zmc2V0OjM"} {
		if a := c.must(http.MethodGet, pinteresttest.PathPins+"?"+q, bearer(cred.AccessToken), nil); a.status != 400 || a.code() != pinteresttest.CodeInvalidParameters {
			t.Errorf("%s: status %d code %d, want 400 code 1", q, a.status, a.code())
		}
	}
	if a := c.must(http.MethodGet, pinteresttest.PathPins+"?page_size=250", bearer(cred.AccessToken), nil); a.status != 200 {
		t.Errorf("page_size=250: status %d", a.status)
	}
}

// TestListPinsBookmarkHoldsItsPlace: pins made between two pages do not
// move the next page: it goes on after the last pin answered.
func TestListPinsBookmarkHoldsItsPlace(t *testing.T) {
	srv, clk, c := newServer(t)
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"})
	var ids []string
	for i := range 6 {
		ids = append([]string{direct(srv, "1001", "b1", time.Duration(i)*time.Second)}, ids...)
	}
	clk.Set(t0.Add(time.Minute))
	p1 := c.list(pinteresttest.PathPins, cred.AccessToken, url.Values{"page_size": {"3"}})
	newer := direct(srv, "1001", "b1", 30*time.Second)
	p2 := c.list(pinteresttest.PathPins, cred.AccessToken, url.Values{"page_size": {"3"}, "bookmark": {*p1.bookmark}})
	if strings.Join(p1.ids, ",") != strings.Join(ids[:3], ",") || strings.Join(p2.ids, ",") != strings.Join(ids[3:], ",") || p2.bookmark != nil {
		t.Errorf("pages %v then %v (bookmark %v); want %v then %v and no bookmark", p1.ids, p2.ids, p2.bookmark, ids[:3], ids[3:])
	}
	if again := c.list(pinteresttest.PathPins, cred.AccessToken, nil); again.ids[0] != newer {
		t.Errorf("a new listing starts with %s, want the new pin %s", again.ids[0], newer)
	}
}

// TestListBoardPins: a board's listing holds that board's pins only; a
// board the account does not own is not found.
func TestListBoardPins(t *testing.T) {
	srv, clk, c := newServer(t)
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"}, pinteresttest.Board{ID: "b2"})
	srv.AddAccount("1002", "bob", pinteresttest.Board{ID: "b9"})
	on1 := direct(srv, "1001", "b1", 0)
	on2 := direct(srv, "1001", "b2", time.Second)
	direct(srv, "1002", "b9", 0)
	clk.Set(t0.Add(time.Minute))
	for board, want := range map[string]string{"b1": on1, "b2": on2} {
		if ids, _ := c.listAll(pinteresttest.BoardPinsPath(board), cred.AccessToken, 25); strings.Join(ids, ",") != want {
			t.Errorf("board %s: %v, want %s", board, ids, want)
		}
	}
	for _, board := range []string{"b9", "nope"} {
		if l := c.list(pinteresttest.BoardPinsPath(board), cred.AccessToken, nil); l.status != 404 {
			t.Errorf("board %s: status %d, want 404", board, l.status)
		}
	}
}

// TestListPinsScopesAndTokens: the listings require boards:read and
// pins:read (401 code 3 without), and a valid token (401 code 2).
func TestListPinsScopesAndTokens(t *testing.T) {
	srv, clk, c := newServer(t, pinteresttest.WithAccessTokenTTL(time.Hour))
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"})
	direct(srv, "1001", "b1", 0)
	grant := func(scopes ...string) string {
		t.Helper()
		srv.SetGrantedScopes(scopes)
		q := url.Values{
			"client_id":     {srv.ClientID()},
			"redirect_uri":  {"https://bot.example/cb"},
			"response_type": {"code"},
			"scope":         {"boards:read,boards:write,pins:read,pins:write,user_accounts:read"},
		}
		a := c.must(http.MethodGet, pinteresttest.PathAuthorize+"?"+q.Encode(), nil, nil)
		loc, _ := url.Parse(a.header.Get("Location"))
		return c.token(url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {"https://bot.example/cb"}},
			srv.ClientID(), srv.ClientSecret()).str("access_token")
	}
	tests := []struct {
		tok        string
		status     int
		code       int
		name       string
		wantListed int
	}{
		{grant("boards:read", "pins:write", "user_accounts:read"), 401, pinteresttest.CodeInsufficientScope, "without pins:read", 0},
		{grant("pins:read", "pins:write"), 401, pinteresttest.CodeInsufficientScope, "without boards:read", 0},
		{grant("boards:read", "pins:read"), 200, 0, "with boards:read and pins:read", 1},
		{"pina_unknown", 401, pinteresttest.CodeAuthenticationFailed, "unknown token", 0},
		{"", 401, pinteresttest.CodeAuthenticationFailed, "no token", 0},
	}
	for i, tt := range tests {
		for _, path := range []string{pinteresttest.PathPins, pinteresttest.BoardPinsPath("b1")} {
			if l := c.list(path, tt.tok, nil); l.status != tt.status || l.code != tt.code || len(l.ids) != tt.wantListed {
				t.Errorf("step %d: %s %s: status %d code %d, %d pins; want %d code %d, %d pins", i, tt.name, path, l.status, l.code, len(l.ids), tt.status, tt.code, tt.wantListed)
			}
		}
	}
	clk.Advance(time.Hour)
	if l := c.list(pinteresttest.PathPins, cred.AccessToken, nil); l.status != 401 || l.code != pinteresttest.CodeAuthenticationFailed {
		t.Errorf("expired token: status %d code %d, want 401 code 2", l.status, l.code)
	}
}

// TestListingLag: with a listing lag, a pin appears in listings only
// once the Server's clock reaches its creation plus the lag; HidePin
// keeps one pin out longer. The ledger has them all the while.
func TestListingLag(t *testing.T) {
	srv, clk, c := newServer(t, pinteresttest.WithListingLag(time.Minute))
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"})
	p0 := direct(srv, "1001", "b1", 0)
	p1 := direct(srv, "1001", "b1", 10*time.Second)
	srv.HidePin(p0, t0.Add(5*time.Minute))
	steps := []struct {
		at   time.Duration
		want string
	}{
		0: {0, ""},
		1: {59 * time.Second, ""},
		2: {70*time.Second - time.Nanosecond, ""},
		3: {70 * time.Second, p1},
		4: {5*time.Minute - time.Nanosecond, p1},
		5: {5 * time.Minute, p1 + "," + p0},
	}
	for i, st := range steps {
		clk.Set(t0.Add(st.at))
		for _, path := range []string{pinteresttest.PathPins, pinteresttest.BoardPinsPath("b1")} {
			if ids, _ := c.listAll(path, cred.AccessToken, 25); strings.Join(ids, ",") != st.want {
				t.Errorf("step %d: %s at t0+%v lists %v, want %q", i, path, st.at, ids, st.want)
			}
		}
		if n := len(srv.PinsFor("1001")); n != 2 {
			t.Errorf("step %d: ledger holds %d pins", i, n)
		}
	}
	srv.SetListingLag(0)
	clk.Set(t0)
	if ids, _ := c.listAll(pinteresttest.PathPins, cred.AccessToken, 25); len(ids) != 0 {
		t.Errorf("HidePin outlasts a lag of 0: %v", ids)
	}
	clk.Set(t0.Add(10 * time.Second))
	if ids, _ := c.listAll(pinteresttest.PathPins, cred.AccessToken, 25); strings.Join(ids, ",") != p1 {
		t.Errorf("without lag at t0+10s: %v, want %s", ids, p1)
	}
}

// TestListingFaults: ListingFailed and ListingLate apply to the listings
// only, of the account or of a board, never to POST /v5/pins; a late
// listing answers the ledger as it stands when released; a stuck
// bookmark repeats.
func TestListingFaults(t *testing.T) {
	srv, clk, c := newServer(t)
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"})
	f := pinteresttest.ListingFailed(503)
	f.Times = 2
	srv.Inject(f)
	if a := c.must(http.MethodPost, pinteresttest.PathPins, bearer(cred.AccessToken), pinJSON("b1", "https://x.example/a.png")); a.status != 201 {
		t.Fatalf("POST under a listing fault: %d", a.status)
	}
	for _, path := range []string{pinteresttest.PathPins, pinteresttest.BoardPinsPath("b1")} {
		if l := c.list(path, cred.AccessToken, nil); l.status != 503 {
			t.Errorf("%s: status %d, want 503", path, l.status)
		}
	}
	if l := c.list(pinteresttest.PathPins, cred.AccessToken, nil); l.status != 200 || len(l.ids) != 1 {
		t.Errorf("after the fault: status %d, %d pins", l.status, len(l.ids))
	}

	rl := pinteresttest.RateLimited("", "60")
	rl.Listings = true
	srv.Inject(rl)
	if l := c.list(pinteresttest.BoardPinsPath("b1"), cred.AccessToken, nil); l.status != 429 || l.code != pinteresttest.CodeRateLimited {
		t.Errorf("rate-limited listing: status %d code %d", l.status, l.code)
	}

	until, arrived := make(chan struct{}), make(chan struct{}, 1)
	late := pinteresttest.ListingLate(until)
	late.Arrived = arrived
	srv.Inject(late)
	got := c.send(t.Context(), http.MethodGet, pinteresttest.PathPins, bearer(cred.AccessToken), nil)
	waitFor(t, arrived, "late listing arriving")
	clk.Advance(time.Hour)
	made := direct(srv, "1001", "b1", 30*time.Minute)
	nothingOn(t, got, "answer before release")
	close(until)
	r := waitFor(t, got, "late listing's answer")
	if r.err != nil || r.a.status != 200 {
		t.Fatalf("late listing: %v %d", r.err, r.a.status)
	}
	if items := r.a.body["items"].([]any); len(items) != 2 || items[0].(map[string]any)["id"] != made {
		t.Errorf("late listing = %v; want the pin made while it was held first", items)
	}

	stuck := pinteresttest.Fault{Listings: true, Times: -1, StuckBookmark: true}
	srv.Inject(stuck)
	p1 := c.list(pinteresttest.PathPins, cred.AccessToken, nil)
	p2 := c.list(pinteresttest.PathPins, cred.AccessToken, url.Values{"bookmark": {*p1.bookmark}})
	if p2.status != 200 || p2.bookmark == nil || *p2.bookmark != *p1.bookmark {
		t.Errorf("stuck bookmark: %v then %v", p1.bookmark, p2.bookmark)
	}
}

// TestCreateDirect: a direct pin is in the ledger at its own creation
// time, marked Direct, counted by MaxInWindow and the account's pin
// count, not by MaxSentInWindow, with no request; it wakes WaitPins;
// an unknown account or board panics.
func TestCreateDirect(t *testing.T) {
	srv, clk, c := newServer(t)
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"})
	srv.AddAccount("1002", "bob", pinteresttest.Board{ID: "b2"})
	// API pins at 0 and 1h; direct ones at 30m (given) and 2h (now).
	if a := c.must(http.MethodPost, pinteresttest.PathPins, bearer(cred.AccessToken), pinJSON("b1", "https://x.example/a.png")); a.status != 201 {
		t.Fatalf("pin: %d", a.status)
	}
	clk.Set(t0.Add(time.Hour))
	if a := c.must(http.MethodPost, pinteresttest.PathPins, bearer(cred.AccessToken), pinJSON("b1", "https://x.example/a.png")); a.status != 201 {
		t.Fatalf("pin: %d", a.status)
	}
	requests := len(srv.Requests())
	p := srv.CreateDirect(pinteresttest.Pin{ID: "ignored", AccountID: "1001", BoardID: "b1", Link: "https://l.example/", CreatedAt: t0.Add(30 * time.Minute)})
	if p.ID == "" || p.ID == "ignored" || !p.Direct || !p.CreatedAt.Equal(t0.Add(30*time.Minute)) || p.Link != "https://l.example/" {
		t.Errorf("CreateDirect = %+v", p)
	}
	clk.Set(t0.Add(2 * time.Hour))
	now := srv.CreateDirect(pinteresttest.Pin{AccountID: "1001", BoardID: "b1"})
	if !now.CreatedAt.Equal(t0.Add(2 * time.Hour)) {
		t.Errorf("CreateDirect without CreatedAt: %v, want the clock's", now.CreatedAt)
	}
	if n := len(srv.Requests()); n != requests {
		t.Errorf("CreateDirect recorded %d requests", n-requests)
	}
	pins, err := srv.WaitPins(t.Context(), "1001", 4)
	if err != nil || len(pins) != 4 {
		t.Fatalf("WaitPins: %d pins, %v", len(pins), err)
	}
	steps := []struct {
		window    time.Duration
		all, sent int
	}{
		0: {time.Hour, 2, 1},
		1: {time.Hour + time.Nanosecond, 3, 2},
		2: {3 * time.Hour, 4, 2},
	}
	for i, st := range steps {
		if got := srv.MaxInWindow("1001", st.window); got != st.all {
			t.Errorf("step %d: MaxInWindow(%v) = %d want %d", i, st.window, got, st.all)
		}
		if got := srv.MaxSentInWindow("1001", st.window); got != st.sent {
			t.Errorf("step %d: MaxSentInWindow(%v) = %d want %d", i, st.window, got, st.sent)
		}
	}
	if a := c.must(http.MethodGet, pinteresttest.PathUserAccount, bearer(cred.AccessToken), nil); a.body["pin_count"] != float64(4) {
		t.Errorf("pin_count = %v, want 4", a.body["pin_count"])
	}
	for _, p := range []pinteresttest.Pin{{AccountID: "1001", BoardID: "b2"}, {AccountID: "nobody", BoardID: "b1"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("CreateDirect(%s on %s) did not panic", p.AccountID, p.BoardID)
				}
			}()
			srv.CreateDirect(p)
		}()
	}
}

// TestBoardListingsShareTheirQuota: under WithRateLimit every board's
// listing counts as one endpoint, apart from GET /v5/pins.
func TestBoardListingsShareTheirQuota(t *testing.T) {
	srv, _, c := newServer(t, pinteresttest.WithRateLimit(pinteresttest.RateLimit{Limit: 2, Window: time.Minute}))
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"}, pinteresttest.Board{ID: "b2"})
	var statuses []int
	for _, path := range []string{pinteresttest.BoardPinsPath("b1"), pinteresttest.BoardPinsPath("b2"), pinteresttest.BoardPinsPath("b1"), pinteresttest.PathPins} {
		statuses = append(statuses, c.list(path, cred.AccessToken, nil).status)
	}
	if want := []int{200, 200, 429, 200}; !equal(statuses, want) {
		t.Errorf("statuses = %v, want %v", statuses, want)
	}
}
