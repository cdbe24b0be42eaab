package pinterest_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// directPins makes n direct pins on account's board b1, one a minute
// from t0 on, and returns their ids newest first.
func directPins(e *env, account string, n int) []string {
	ids := make([]string, n)
	for i := range n {
		ids[n-1-i] = e.srv.CreateDirect(pinteresttest.Pin{AccountID: account, BoardID: "b1", CreatedAt: t0.Add(time.Duration(i) * time.Minute)}).ID
	}
	return ids
}

func idsOf(pins []pinterest.Pin) []string {
	out := make([]string, len(pins))
	for i, p := range pins {
		out[i] = p.ID
	}
	return out
}

// pageRequests returns how many listing requests for path the stand-in
// received.
func pageRequests(e *env, path string) int { return e.srv.Count(http.MethodGet, path) }

// TestListPinsPages: ListPins follows the bookmarks to the end, newest
// first, in pages of PageSize (DefaultPinPageSize when 0), with each
// pin's fields; the board form lists one board's pins.
func TestListPinsPages(t *testing.T) {
	e := newEnv(t, nil)
	_, s, _ := e.account(t, "1001", boards(2)...)
	want := directPins(e, "1001", 10)
	b2 := e.srv.CreateDirect(pinteresttest.Pin{AccountID: "1001", BoardID: "b2", Link: "https://l.example/p?pinbot=m-1", Title: "t", CreatedAt: t0.Add(-time.Hour)})
	want = append(want, b2.ID)
	e.clk.Set(t0.Add(time.Hour))

	steps := []struct {
		opts  pinterest.ListOptions
		want  []string
		pages int
	}{
		0: {pinterest.ListOptions{PageSize: 3}, want, 4},
		1: {pinterest.ListOptions{PageSize: 11}, want, 1},
		2: {pinterest.ListOptions{PageSize: 10}, want, 2},
		3: {pinterest.ListOptions{}, want, 1},
		4: {pinterest.ListOptions{BoardID: "b2"}, []string{b2.ID}, 1},
		5: {pinterest.ListOptions{BoardID: "b1", PageSize: 4}, want[:10], 3},
	}
	for i, st := range steps {
		path := pinteresttest.PathPins
		if st.opts.BoardID != "" {
			path = pinteresttest.BoardPinsPath(st.opts.BoardID)
		}
		before := pageRequests(e, path)
		pins, err := e.c.ListPins(t.Context(), s, st.opts)
		if err != nil {
			t.Fatalf("step %d: ListPins(%+v): %v", i, st.opts, err)
		}
		if got := idsOf(pins); !slices.Equal(got, st.want) {
			t.Errorf("step %d: ListPins(%+v) = %v, want %v", i, st.opts, got, st.want)
		}
		if n := pageRequests(e, path) - before; n != st.pages {
			t.Errorf("step %d: %d pages read, want %d", i, n, st.pages)
		}
	}

	pins, err := e.c.ListPins(t.Context(), s, pinterest.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := pins[len(pins)-1]
	wantPin := pinterest.Pin{
		ID: b2.ID, BoardID: "b2", Link: "https://l.example/p?pinbot=m-1", Mark: "m-1", Title: "t",
		CreatedAt: t0.Add(-time.Hour).Truncate(time.Second), URL: "https://www.pinterest.com/pin/" + b2.ID + "/",
	}
	if last != wantPin || last.CreatedAt.Location() != time.UTC {
		t.Errorf("pin = %+v, want %+v in UTC", last, wantPin)
	}
	for _, r := range e.srv.Requests() {
		if r.Method == http.MethodGet && r.Status != http.StatusOK {
			t.Errorf("%s %s answered %d", r.Method, r.Path, r.Status)
		}
	}

	if _, err := e.c.ListPins(t.Context(), s, pinterest.ListOptions{BoardID: "b9"}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown board: %v, want a 404", err)
	}
	for _, o := range []pinterest.ListOptions{{PageSize: -1}, {PageSize: 251}, {MaxPages: -1}} {
		before := len(e.srv.Requests())
		if _, err := e.c.ListPins(t.Context(), s, o); err == nil || len(e.srv.Requests()) != before {
			t.Errorf("ListPins(%+v): %v, want an error and no request", o, err)
		}
	}
}

// TestListPinsSince: with Since, ListPins returns the pins created at
// Since or later, counting from the start of Since's second as
// Pinterest's creation times do, and reads no page after the one where
// an older pin appears.
func TestListPinsSince(t *testing.T) {
	e := newEnv(t, nil)
	_, s, _ := e.account(t, "1001", boards(1)...)
	all := directPins(e, "1001", 10) // t0+9m … t0
	// One more at t0+4m30.4s, between t0+5m and t0+4m.
	half := e.srv.CreateDirect(pinteresttest.Pin{AccountID: "1001", BoardID: "b1", CreatedAt: t0.Add(4*time.Minute + 30*time.Second + 400*time.Millisecond)}).ID
	all = slices.Insert(all, 5, half)
	e.clk.Set(t0.Add(time.Hour))

	steps := []struct {
		since time.Duration
		want  []string
		pages int
	}{
		0: {9 * time.Minute, all[:1], 1},
		1: {9*time.Minute + time.Nanosecond, all[:1], 1},
		2: {9*time.Minute + time.Second, nil, 1},
		3: {5 * time.Minute, all[:5], 2},
		4: {4*time.Minute + 30*time.Second + 900*time.Millisecond, all[:6], 3},
		5: {4*time.Minute + 31*time.Second, all[:5], 2},
		6: {6 * time.Minute, all[:4], 2},
		7: {7 * time.Minute, all[:3], 2},
		8: {0, all, 4},
		9: {-time.Hour, all, 4},
	}
	for i, st := range steps {
		before := pageRequests(e, pinteresttest.PathPins)
		pins, err := e.c.ListPins(t.Context(), s, pinterest.ListOptions{Since: t0.Add(st.since), PageSize: 3})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := idsOf(pins); !slices.Equal(got, st.want) {
			t.Errorf("step %d: since t0%+v: %v, want %v", i, st.since, got, st.want)
		}
		if n := pageRequests(e, pinteresttest.PathPins) - before; n != st.pages {
			t.Errorf("step %d: since t0%+v: %d pages read, want %d", i, st.since, n, st.pages)
		}
	}
}

// TestListPinsBound: a listing that would need more than MaxPages pages
// (Config.MaxPinPages when 0) fails with ErrListingTruncated and returns
// the pins it read; one that reaches Since or its end within the bound
// does not.
func TestListPinsBound(t *testing.T) {
	e := newEnv(t, func(c *pinterest.Config) { c.MaxPinPages = 2 })
	_, s, _ := e.account(t, "1001", boards(1)...)
	all := directPins(e, "1001", 9)
	e.clk.Set(t0.Add(time.Hour))

	steps := []struct {
		opts      pinterest.ListOptions
		want      []string
		truncated bool
	}{
		0: {pinterest.ListOptions{PageSize: 3}, all[:6], true},
		1: {pinterest.ListOptions{PageSize: 3, MaxPages: 3}, all, false},
		2: {pinterest.ListOptions{PageSize: 3, MaxPages: 4}, all, false},
		3: {pinterest.ListOptions{PageSize: 4, MaxPages: 2}, all[:8], true},
		4: {pinterest.ListOptions{PageSize: 3, Since: t0.Add(4 * time.Minute)}, all[:5], false},
		5: {pinterest.ListOptions{PageSize: 3, Since: t0.Add(2 * time.Minute)}, all[:6], true},
		6: {pinterest.ListOptions{PageSize: 3, Since: t0.Add(2 * time.Minute), MaxPages: 1}, all[:3], true},
	}
	for i, st := range steps {
		pins, err := e.c.ListPins(t.Context(), s, st.opts)
		if st.truncated != errors.Is(err, pinterest.ErrListingTruncated) || (!st.truncated && err != nil) {
			t.Errorf("step %d: ListPins(%+v) err = %v, want truncated %t", i, st.opts, err, st.truncated)
		}
		if got := idsOf(pins); !slices.Equal(got, st.want) {
			t.Errorf("step %d: ListPins(%+v) = %v, want %v", i, st.opts, got, st.want)
		}
	}
}

// TestListPinsHidden: a pin Pinterest does not list yet is missing from
// the listing until its time on Pinterest's clock, then found by its
// mark.
func TestListPinsHidden(t *testing.T) {
	e := newEnv(t, nil, pinteresttest.WithListingLag(2*time.Minute))
	_, s, _ := e.account(t, "1001", boards(1)...)
	req := pinReq
	req.Mark = "slot-7"
	if _, err := e.c.CreatePin(t.Context(), s, req); err != nil {
		t.Fatal(err)
	}
	marked := func() bool {
		t.Helper()
		pins, err := e.c.ListPins(t.Context(), s, pinterest.ListOptions{Since: t0})
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(pins, func(p pinterest.Pin) bool { return p.Mark == "slot-7" })
	}
	steps := []struct {
		at    time.Duration
		found bool
	}{
		0: {0, false},
		1: {2*time.Minute - time.Nanosecond, false},
		2: {2 * time.Minute, true},
	}
	for i, st := range steps {
		e.clk.Set(t0.Add(st.at))
		if got := marked(); got != st.found {
			t.Errorf("step %d: at t0+%v found %t, want %t", i, st.at, got, st.found)
		}
	}
	hidden := e.srv.CreateDirect(pinteresttest.Pin{AccountID: "1001", BoardID: "b1"})
	e.srv.HidePin(hidden.ID, t0.Add(time.Hour))
	e.clk.Set(t0.Add(59 * time.Minute))
	if pins, err := e.c.ListPins(t.Context(), s, pinterest.ListOptions{}); err != nil || slices.Contains(idsOf(pins), hidden.ID) {
		t.Errorf("hidden pin listed before its time: %v %v", idsOf(pins), err)
	}
	e.clk.Set(t0.Add(time.Hour))
	if pins, err := e.c.ListPins(t.Context(), s, pinterest.ListOptions{}); err != nil || !slices.Contains(idsOf(pins), hidden.ID) {
		t.Errorf("hidden pin not listed at its time: %v %v", idsOf(pins), err)
	}
}

// TestListPinsFailures: a listing that fails returns the error with the
// pins read before it; 5xx answers are repeated as for any GET, and
// ErrUnavailable ends the listing once the repeats are spent; a 429
// gives a RateLimitError and holds back the next listing of the same
// kind (the board listings count as one), unsent; a late answer
// reflects Pinterest's ledger when it comes.
func TestListPinsFailures(t *testing.T) {
	e := newEnv(t, nil)
	_, s, _ := e.account(t, "1001", boards(2)...)
	all := directPins(e, "1001", 6)
	e.clk.Set(t0.Add(time.Hour))
	ctx := t.Context()

	// One 500, repeated: the listing completes.
	e.srv.Inject(pinteresttest.ListingFailed(http.StatusInternalServerError))
	if pins, err := e.c.ListPins(ctx, s, pinterest.ListOptions{}); err != nil || len(pins) != 6 {
		t.Fatalf("after one 500: %d pins, %v", len(pins), err)
	}

	// The second page fails three times: the first page's pins come back
	// with ErrUnavailable.
	e.srv.Inject(pinteresttest.Fault{Listings: true}) // the first page, untouched
	f := pinteresttest.ListingFailed(http.StatusServiceUnavailable)
	f.Times = 3
	e.srv.Inject(f)
	pins, err := e.c.ListPins(ctx, s, pinterest.ListOptions{PageSize: 4})
	var ae *pinterest.APIError
	if !errors.Is(err, pinterest.ErrUnavailable) || !errors.As(err, &ae) || ae.Status != 503 || !slices.Equal(idsOf(pins), all[:4]) {
		t.Errorf("second page failing: %v, %v; want ErrUnavailable and the first page %v", idsOf(pins), err, all[:4])
	}

	// A 429 with a distant reset: held back afterwards, per kind.
	rl := pinteresttest.RateLimited("", "3600")
	rl.Listings = true
	e.srv.Inject(rl)
	_, err = e.c.ListPins(ctx, s, pinterest.ListOptions{BoardID: "b1"})
	var rle *pinterest.RateLimitError
	if !errors.As(err, &rle) || rle.Preempted || !rle.ResetAt.Equal(e.clk.Now().Add(time.Hour)) {
		t.Fatalf("429: %v, want a RateLimitError until an hour from now", err)
	}
	before := len(e.srv.Requests())
	_, err = e.c.ListPins(ctx, s, pinterest.ListOptions{BoardID: "b2"})
	if !errors.As(err, &rle) || !rle.Preempted || len(e.srv.Requests()) != before {
		t.Errorf("another board's listing after a 429: %v, want it held back unsent", err)
	}
	if pins, err := e.c.ListPins(ctx, s, pinterest.ListOptions{}); err != nil || len(pins) != 6 {
		t.Errorf("the account's listing, another kind: %d pins, %v", len(pins), err)
	}

	// A late answer: held while a pin is made and the clocks move on.
	until, arrived := make(chan struct{}), make(chan struct{}, 1)
	late := pinteresttest.ListingLate(until)
	late.Arrived = arrived
	e.srv.Inject(late)
	type result struct {
		pins []pinterest.Pin
		err  error
	}
	done := make(chan result, 1)
	go func() {
		pins, err := e.c.ListPins(ctx, s, pinterest.ListOptions{Since: t0.Add(5 * time.Minute)})
		done <- result{pins, err}
	}()
	waitFor(t, arrived, "the listing held")
	e.clk.Advance(time.Minute)
	made := e.srv.CreateDirect(pinteresttest.Pin{AccountID: "1001", BoardID: "b1"})
	close(until)
	r := waitFor(t, done, "the late listing")
	if r.err != nil || !slices.Equal(idsOf(r.pins), []string{made.ID, all[0]}) {
		t.Errorf("late listing: %v %v, want %v", idsOf(r.pins), r.err, []string{made.ID, all[0]})
	}
}

// TestListPinsScopes: a grant without pins:read or boards:read gets
// Pinterest's 401 code 3 even after a refresh: ErrReauthRequired, which
// also matches ErrScopesMissing; a revoked grant is ErrReauthRequired
// alone.
func TestListPinsScopes(t *testing.T) {
	for _, old := range [][]string{
		{pinterest.ScopeBoardsRead, pinterest.ScopePinsWrite, pinterest.ScopeUserAccountsRead},
		{pinterest.ScopePinsRead, pinterest.ScopePinsWrite},
	} {
		e := newEnv(t, func(c *pinterest.Config) { c.Scopes = old })
		e.srv.AddAccount("1001", "alice", boards(1)...)
		tok, err := e.c.Exchange(t.Context(), authorize(t, e, "s"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := pinterest.NewSession(tok, (&tokenStore{}).save)
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.c.ListPins(t.Context(), s, pinterest.ListOptions{})
		if !errors.Is(err, pinterest.ErrReauthRequired) || !errors.Is(err, pinterest.ErrScopesMissing) {
			t.Errorf("scopes %v: %v, want ErrReauthRequired and ErrScopesMissing", old, err)
		}
		wantCount(t, e.srv, http.MethodGet, pinteresttest.PathPins, 2)
	}

	e := newEnv(t, nil)
	_, s, _ := e.account(t, "1001", boards(1)...)
	e.srv.RevokeGrants("1001")
	_, err := e.c.ListPins(t.Context(), s, pinterest.ListOptions{})
	if !errors.Is(err, pinterest.ErrReauthRequired) || errors.Is(err, pinterest.ErrScopesMissing) {
		t.Errorf("revoked: %v, want ErrReauthRequired alone", err)
	}
}

// TestListPinsRefreshMidListing: an access token that expires between
// two pages is refreshed, saved, and the listing goes on to its end.
func TestListPinsRefreshMidListing(t *testing.T) {
	e := newEnv(t, nil)
	cred, s, st := e.account(t, "1001", boards(1)...)
	all := directPins(e, "1001", 5)
	e.clk.Set(t0.Add(time.Hour))

	until, arrived := make(chan struct{}), make(chan struct{}, 1)
	e.srv.Inject(pinteresttest.Fault{Listings: true}) // the first page, untouched
	e.srv.Inject(pinteresttest.Fault{Listings: true, Arrived: arrived, Until: until})
	go func() {
		<-arrived
		e.srv.ExpireAccessTokens("1001")
		close(until)
	}()
	pins, err := e.c.ListPins(t.Context(), s, pinterest.ListOptions{PageSize: 2})
	if err != nil || !slices.Equal(idsOf(pins), all) {
		t.Fatalf("ListPins = %v, %v; want %v", idsOf(pins), err, all)
	}
	if _, saved := st.snapshot(); len(saved) != 1 || saved[0].AccessToken == cred.AccessToken {
		t.Errorf("%d tokens saved, want the refreshed one", len(saved))
	}
	wantCount(t, e.srv, http.MethodPost, pinteresttest.PathToken, 1)
	// Three pages, the second sent twice.
	wantCount(t, e.srv, http.MethodGet, pinteresttest.PathPins, 4)
}

// pinterestLike serves GET /v5/pins from pages written by the test,
// as Pinterest might answer: page n (from 0) is pages[n], its bookmark
// "p{n+1}" unless it is the last.
func pinterestLike(t *testing.T, pages ...[]map[string]any) (*pinterest.Client, *pinterest.Session) {
	t.Helper()
	var mu sync.Mutex
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		if bm := r.URL.Query().Get("bookmark"); bm != "" {
			n, _ = strconv.Atoi(strings.TrimPrefix(bm, "p"))
		}
		body := map[string]any{"items": pages[n], "bookmark": nil}
		if n+1 < len(pages) {
			body["bookmark"] = "p" + strconv.Itoa(n+1)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(hs.Close)
	c, err := pinterest.New(pinterest.Config{ClientID: "id", ClientSecret: "secret", RedirectURL: redirectURL, APIBase: hs.URL + "/v5"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := pinterest.NewSession(&oauth2.Token{AccessToken: "a"}, (&tokenStore{}).save)
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

func item(id, createdAt string) map[string]any {
	return map[string]any{"id": id, "created_at": createdAt, "board_id": "1", "link": "https://l.example/?pinbot=" + id}
}

// TestListPinsReadsPinterest: answers as Pinterest writes them: a
// created_at without a zone is UTC; a pin listed again on a later page
// is returned once; a listing out of order fails with
// ErrListingUnordered when Since relies on the order (an older pin
// before a newer one, even past Since on the same page), and is returned
// whole without Since; a pin without id or created_at fails the listing.
func TestListPinsReadsPinterest(t *testing.T) {
	ctx := t.Context()
	c, s := pinterestLike(t,
		[]map[string]any{item("3", "2030-01-02T03:00:09"), item("2", "2030-01-02T03:00:08")},
		[]map[string]any{item("2", "2030-01-02T03:00:08"), item("1", "2030-01-02T02:00:00+01:00")},
	)
	pins, err := c.ListPins(ctx, s, pinterest.ListOptions{Since: time.Date(2030, 1, 2, 1, 0, 0, 0, time.UTC)})
	if err != nil || !slices.Equal(idsOf(pins), []string{"3", "2", "1"}) {
		t.Fatalf("ListPins = %v, %v", idsOf(pins), err)
	}
	if want := time.Date(2030, 1, 2, 3, 0, 9, 0, time.UTC); !pins[0].CreatedAt.Equal(want) || pins[0].CreatedAt.Location() != time.UTC || pins[0].Mark != "3" {
		t.Errorf("pin 3 = %+v, want created at %v UTC", pins[0], want)
	}
	if want := time.Date(2030, 1, 2, 1, 0, 0, 0, time.UTC); !pins[2].CreatedAt.Equal(want) || pins[2].CreatedAt.Location() != time.UTC {
		t.Errorf("pin 1 created at %v, want %v", pins[2].CreatedAt, want)
	}

	since := time.Date(2030, 1, 2, 3, 0, 0, 0, time.UTC)
	unordered := [][]map[string]any{
		{item("3", "2030-01-02T03:00:09Z"), item("1", "2030-01-02T02:00:00Z"), item("2", "2030-01-02T03:00:08Z")},
		{item("0", "2030-01-02T01:00:00Z")},
	}
	c, s = pinterestLike(t, unordered...)
	pins, err = c.ListPins(ctx, s, pinterest.ListOptions{Since: since})
	if !errors.Is(err, pinterest.ErrListingUnordered) || !slices.Equal(idsOf(pins), []string{"3"}) {
		t.Errorf("unordered with Since: %v, %v; want ErrListingUnordered after pin 3", idsOf(pins), err)
	}
	if pins, err := c.ListPins(ctx, s, pinterest.ListOptions{}); err != nil || !slices.Equal(idsOf(pins), []string{"3", "1", "2", "0"}) {
		t.Errorf("unordered without Since: %v, %v", idsOf(pins), err)
	}

	for _, bad := range []map[string]any{{"created_at": "2030-01-02T03:00:09Z"}, {"id": "9"}, {"id": "9", "created_at": "yesterday"}} {
		c, s := pinterestLike(t, []map[string]any{item("10", "2030-01-02T03:00:10Z"), bad})
		pins, err := c.ListPins(ctx, s, pinterest.ListOptions{})
		if err == nil || !slices.Equal(idsOf(pins), []string{"10"}) {
			t.Errorf("pin %v: %v, %v; want an error after pin 10", bad, idsOf(pins), err)
		}
	}
}

// TestListPinsStuckBookmark: a bookmark that comes back fails the
// listing instead of looping.
func TestListPinsStuckBookmark(t *testing.T) {
	e := newEnv(t, nil)
	_, s, _ := e.account(t, "1001", boards(1)...)
	directPins(e, "1001", 3)
	e.clk.Set(t0.Add(time.Hour))
	e.srv.Inject(pinteresttest.Fault{Listings: true, Times: -1, StuckBookmark: true})
	_, err := e.c.ListPins(t.Context(), s, pinterest.ListOptions{PageSize: 1, MaxPages: 50})
	if err == nil || !strings.Contains(err.Error(), "bookmark repeated") || errors.Is(err, pinterest.ErrListingTruncated) {
		t.Errorf("err = %v, want a repeated bookmark", err)
	}
	wantCount(t, e.srv, http.MethodGet, pinteresttest.PathPins, 2)
}

// waitFor receives from ch, failing the test if nothing comes within a
// generous real-time bound: a guard against hanging, not a sleep.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s after 10s", what)
		var zero T
		return zero
	}
}
