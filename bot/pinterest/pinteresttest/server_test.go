package pinteresttest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// answer is a decoded response.
type answer struct {
	status int
	header http.Header
	body   map[string]any
}

func (a answer) code() int {
	f, _ := a.body["code"].(float64)
	return int(f)
}

func (a answer) str(k string) string {
	s, _ := a.body[k].(string)
	return s
}

// client sends raw requests to a Server.
type client struct {
	t   *testing.T
	srv *pinteresttest.Server
}

func newServer(t *testing.T, opts ...pinteresttest.Option) (*pinteresttest.Server, *pinteresttest.Clock, client) {
	t.Helper()
	clk := pinteresttest.NewClock(t0)
	srv := pinteresttest.NewServer(append([]pinteresttest.Option{pinteresttest.WithClock(clk.Now)}, opts...)...)
	t.Cleanup(srv.Close)
	return srv, clk, client{t: t, srv: srv}
}

func (c client) do(ctx context.Context, method, path string, hdr map[string]string, body io.Reader) (answer, error) {
	c.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, c.srv.URL+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	hc := c.srv.Client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &a.body); err != nil {
			c.t.Fatalf("%s %s: body is not JSON: %q", method, path, b)
		}
	}
	if a.header.Get("X-Pinterest-Rid") == "" {
		c.t.Errorf("%s %s: no x-pinterest-rid", method, path)
	}
	return a, nil
}

func (c client) must(method, path string, hdr map[string]string, body io.Reader) answer {
	c.t.Helper()
	a, err := c.do(c.t.Context(), method, path, hdr, body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return a
}

func (c client) token(form url.Values, id, secret string) answer {
	c.t.Helper()
	hdr := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	if id != "" {
		req, _ := http.NewRequest(http.MethodPost, "/", nil)
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
		hdr["Authorization"] = req.Header.Get("Authorization")
	}
	return c.must(http.MethodPost, pinteresttest.PathToken, hdr, strings.NewReader(form.Encode()))
}

func (c client) refresh(rt string) answer {
	c.t.Helper()
	return c.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, c.srv.ClientID(), c.srv.ClientSecret())
}

func bearer(tok string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
}

func pinJSON(board, image string) io.Reader {
	b, _ := json.Marshal(map[string]any{
		"board_id":     board,
		"media_source": map[string]string{"source_type": "image_url", "url": image},
		"title":        "t",
	})
	return bytes.NewReader(b)
}

func TestRefreshTokensRotate(t *testing.T) {
	srv, clk, c := newServer(t)
	cred := srv.AddAccount("1001", "alice")

	a := c.refresh(cred.RefreshToken)
	if a.status != 200 || a.str("refresh_token") == "" || a.str("refresh_token") == cred.RefreshToken ||
		a.str("access_token") == "" || a.str("response_type") != "refresh_token" || a.str("token_type") != "bearer" {
		t.Fatalf("refresh answer = %d %v", a.status, a.body)
	}
	if got := a.body["expires_in"]; got != float64(30*24*3600) {
		t.Errorf("expires_in = %v", got)
	}
	if got := a.body["refresh_token_expires_at"]; got != float64(t0.Add(60*24*time.Hour).Unix()) {
		t.Errorf("refresh_token_expires_at = %v", got)
	}

	// The old refresh token died with the rotation.
	again := c.refresh(cred.RefreshToken)
	if again.status != 400 || again.code() != pinteresttest.CodeInvalidGrant {
		t.Errorf("reused refresh token: %d %v, want 400 code 283", again.status, again.body)
	}
	// The new one works once.
	next := c.refresh(a.str("refresh_token"))
	if next.status != 200 {
		t.Errorf("new refresh token: %d %v", next.status, next.body)
	}
	// An expired refresh token is an invalid grant.
	clk.Advance(61 * 24 * time.Hour)
	if old := c.refresh(next.str("refresh_token")); old.status != 400 || old.code() != pinteresttest.CodeInvalidGrant {
		t.Errorf("expired refresh token: %d %v", old.status, old.body)
	}
}

func TestTokenEndpointClientAuth(t *testing.T) {
	srv, _, c := newServer(t, pinteresttest.WithClientCredentials("app:1", "s3cr&t"))
	cred := srv.AddAccount("1001", "alice")
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {cred.RefreshToken}}
	tests := []struct {
		name       string
		id, secret string
		want       int
	}{
		{"no auth", "", "", 401},
		{"wrong secret", "app:1", "nope", 401},
		{"wrong id", "app:2", "s3cr&t", 401},
		{"right", "app:1", "s3cr&t", 200},
	}
	for _, tt := range tests {
		if a := c.token(form, tt.id, tt.secret); a.status != tt.want {
			t.Errorf("%s: status %d, want %d (%v)", tt.name, a.status, tt.want, a.body)
		}
	}
	if a := c.token(url.Values{"grant_type": {"password"}}, "app:1", "s3cr&t"); a.status != 400 {
		t.Errorf("unsupported grant: status %d", a.status)
	}
}

func TestAuthorizeAndExchange(t *testing.T) {
	srv, _, c := newServer(t)
	q := url.Values{
		"client_id":     {srv.ClientID()},
		"redirect_uri":  {"https://bot.example/cb?x=1"},
		"response_type": {"code"},
		"scope":         {"boards:read,pins:write,user_accounts:read"},
		"state":         {"st"},
	}
	if a := c.must(http.MethodGet, pinteresttest.PathAuthorize+"?"+q.Encode(), nil, nil); a.status != 400 {
		t.Errorf("authorize with no account: status %d, want 400", a.status)
	}
	srv.AddAccount("1001", "alice")
	srv.AddAccount("1002", "bob")
	srv.SetLoggedIn("1002")
	for _, bad := range []string{"client_id", "response_type", "redirect_uri", "scope"} {
		bq := url.Values{}
		for k, v := range q {
			bq[k] = v
		}
		bq.Set(bad, "")
		if a := c.must(http.MethodGet, pinteresttest.PathAuthorize+"?"+bq.Encode(), nil, nil); a.status != 400 {
			t.Errorf("authorize with empty %s: status %d, want 400", bad, a.status)
		}
	}

	a := c.must(http.MethodGet, pinteresttest.PathAuthorize+"?"+q.Encode(), nil, nil)
	if a.status != http.StatusFound {
		t.Fatalf("authorize: status %d", a.status)
	}
	loc, _ := url.Parse(a.header.Get("Location"))
	if loc.Host != "bot.example" || loc.Query().Get("x") != "1" || loc.Query().Get("state") != "st" || loc.Query().Get("code") == "" {
		t.Fatalf("Location = %s", loc)
	}
	code := loc.Query().Get("code")
	exchange := func(redirect string) answer {
		return c.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}},
			srv.ClientID(), srv.ClientSecret())
	}
	if a := exchange("https://evil.example/cb"); a.status != 400 || a.code() != pinteresttest.CodeInvalidGrant {
		t.Errorf("exchange with other redirect_uri: %d %v", a.status, a.body)
	}
	// The failed attempt used the code up, as Pinterest does.
	if a := exchange("https://bot.example/cb?x=1"); a.status != 400 {
		t.Errorf("exchange of used code: %d %v", a.status, a.body)
	}

	a = c.must(http.MethodGet, pinteresttest.PathAuthorize+"?"+q.Encode(), nil, nil)
	loc, _ = url.Parse(a.header.Get("Location"))
	code = loc.Query().Get("code")
	tok := exchange("https://bot.example/cb?x=1")
	if tok.status != 200 || tok.str("response_type") != "authorization_code" || tok.str("scope") != "boards:read,pins:write,user_accounts:read" {
		t.Fatalf("exchange: %d %v", tok.status, tok.body)
	}
	me := c.must(http.MethodGet, pinteresttest.PathUserAccount, bearer(tok.str("access_token")), nil)
	if me.status != 200 || me.str("id") != "1002" || me.str("username") != "bob" {
		t.Errorf("user_account: %d %v, want bob", me.status, me.body)
	}
}

func TestScopesAreEnforced(t *testing.T) {
	srv, _, c := newServer(t)
	srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"})
	q := url.Values{
		"client_id":     {srv.ClientID()},
		"redirect_uri":  {"https://bot.example/cb"},
		"response_type": {"code"},
		// Space-separated scopes are one unknown scope to Pinterest.
		"scope": {"boards:read pins:write"},
	}
	a := c.must(http.MethodGet, pinteresttest.PathAuthorize+"?"+q.Encode(), nil, nil)
	loc, _ := url.Parse(a.header.Get("Location"))
	tok := c.token(url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {"https://bot.example/cb"}},
		srv.ClientID(), srv.ClientSecret())
	at := tok.str("access_token")
	if got := c.must(http.MethodPost, pinteresttest.PathPins, bearer(at), pinJSON("b1", "https://x.example/a.png")); got.status != 401 || got.code() != pinteresttest.CodeInsufficientScope {
		t.Errorf("pin without pins:write: %d %v", got.status, got.body)
	}
	if got := c.must(http.MethodGet, pinteresttest.PathBoards, bearer(at), nil); got.status != 401 {
		t.Errorf("boards without boards:read: %d", got.status)
	}
}

// TestGrantFewerScopes: SetGrantedScopes makes the authorization page
// grant only some of the scopes asked for, as the token answer's scope
// says, and the routes hold the token to the scopes their security
// names: POST /v5/pins all four of boards:read, boards:write, pins:read
// and pins:write.
func TestGrantFewerScopes(t *testing.T) {
	srv, _, c := newServer(t)
	srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"})
	grant := func() answer {
		t.Helper()
		q := url.Values{
			"client_id":     {srv.ClientID()},
			"redirect_uri":  {"https://bot.example/cb"},
			"response_type": {"code"},
			"scope":         {"boards:read,boards:write,pins:read,pins:write,user_accounts:read"},
		}
		a := c.must(http.MethodGet, pinteresttest.PathAuthorize+"?"+q.Encode(), nil, nil)
		loc, _ := url.Parse(a.header.Get("Location"))
		return c.token(url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {"https://bot.example/cb"}},
			srv.ClientID(), srv.ClientSecret())
	}

	srv.SetGrantedScopes([]string{"boards:read", "pins:write", "user_accounts:read", "ads:read"})
	tok := grant()
	if tok.status != 200 || tok.str("scope") != "boards:read,pins:write,user_accounts:read" {
		t.Fatalf("exchange: %d %v; want the scopes asked for and grantable", tok.status, tok.body)
	}
	at := tok.str("access_token")
	if got := c.must(http.MethodPost, pinteresttest.PathPins, bearer(at), pinJSON("b1", "https://x.example/a.png")); got.status != 401 || got.code() != pinteresttest.CodeInsufficientScope {
		t.Errorf("pin without boards:write and pins:read: %d %v", got.status, got.body)
	}
	if got := c.must(http.MethodGet, pinteresttest.PathBoards, bearer(at), nil); got.status != 200 {
		t.Errorf("boards with boards:read: %d %v", got.status, got.body)
	}
	if n := len(srv.Pins()); n != 0 {
		t.Errorf("%d pins made", n)
	}

	srv.SetGrantedScopes([]string{})
	if tok := grant(); tok.status != 200 || tok.str("scope") != "" {
		t.Errorf("granting none: %d %v", tok.status, tok.body)
	}
	srv.SetGrantedScopes(nil)
	tok = grant()
	if tok.str("scope") != "boards:read,boards:write,pins:read,pins:write,user_accounts:read" {
		t.Fatalf("granting all again: %v", tok.body)
	}
	if got := c.must(http.MethodPost, pinteresttest.PathPins, bearer(tok.str("access_token")), pinJSON("b1", "https://x.example/a.png")); got.status != 201 {
		t.Errorf("pin with every scope: %d %v", got.status, got.body)
	}
}

func TestCreatePin(t *testing.T) {
	srv, clk, c := newServer(t)
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1", Name: "Cats"})
	srv.AddAccount("1002", "bob", pinteresttest.Board{ID: "b2"})
	srv.RejectImage("https://x.example/gone.png", pinteresttest.CodeImageFetchFailed)
	ok := bearer(cred.AccessToken)
	tests := []struct {
		name       string
		hdr        map[string]string
		body       string
		wantStatus int
		wantCode   int
	}{
		{"no token", nil, `{}`, 401, 2},
		{"unknown token", bearer("pina_nope"), `{}`, 401, 2},
		{"not JSON", ok, `{`, 400, 1},
		{"no board", ok, `{"media_source":{"source_type":"image_url","url":"https://x.example/a.png"}}`, 400, 1},
		{"other user's board", ok, `{"board_id":"b2","media_source":{"source_type":"image_url","url":"https://x.example/a.png"}}`, 403, 29},
		{"no media", ok, `{"board_id":"b1"}`, 400, 1},
		{"base64 media", ok, `{"board_id":"b1","media_source":{"source_type":"image_base64","data":"AA=="}}`, 400, 1},
		{"bad url", ok, `{"board_id":"b1","media_source":{"source_type":"image_url","url":"file:///etc/passwd"}}`, 400, 1},
		{"long title", ok, `{"board_id":"b1","title":"` + strings.Repeat("x", 101) + `","media_source":{"source_type":"image_url","url":"https://x.example/a.png"}}`, 400, 1},
		{"rejected image", ok, `{"board_id":"b1","media_source":{"source_type":"image_url","url":"https://x.example/gone.png"}}`, 403, 233},
		{"created", ok, `{"board_id":"b1","link":"https://l.example","title":"T","description":"D","alt_text":"A","media_source":{"source_type":"image_url","url":"https://x.example/a.png"}}`, 201, 0},
	}
	clk.Advance(time.Minute)
	for _, tt := range tests {
		a := c.must(http.MethodPost, pinteresttest.PathPins, tt.hdr, strings.NewReader(tt.body))
		if a.status != tt.wantStatus || a.code() != tt.wantCode {
			t.Errorf("%s: %d code %d, want %d code %d (%v)", tt.name, a.status, a.code(), tt.wantStatus, tt.wantCode, a.body)
		}
	}
	pins := srv.Pins()
	want := pinteresttest.Pin{
		ID: "1000000000000000001", AccountID: "1001", BoardID: "b1", ImageURL: "https://x.example/a.png",
		Link: "https://l.example", Title: "T", Description: "D", AltText: "A", CreatedAt: t0.Add(time.Minute),
	}
	if len(pins) != 1 || pins[0] != want {
		t.Fatalf("Pins() = %+v, want [%+v]", pins, want)
	}
	if got := srv.PinsFor("1002"); len(got) != 0 {
		t.Errorf("PinsFor(1002) = %v", got)
	}
	if n := srv.Count(http.MethodPost, pinteresttest.PathPins); n != len(tests) {
		t.Errorf("Count = %d, want %d", n, len(tests))
	}
	reqs := srv.Requests()
	if last := reqs[len(reqs)-1]; last.AccountID != "1001" || last.Status != 201 || !last.At.Equal(t0.Add(time.Minute)) {
		t.Errorf("last request = %+v", last)
	}
}

func TestAccessTokenExpiry(t *testing.T) {
	srv, clk, c := newServer(t, pinteresttest.WithAccessTokenTTL(time.Hour))
	cred := srv.AddAccount("1001", "alice")
	if a := c.must(http.MethodGet, pinteresttest.PathUserAccount, bearer(cred.AccessToken), nil); a.status != 200 {
		t.Fatalf("fresh token: %d", a.status)
	}
	clk.Advance(time.Hour)
	if a := c.must(http.MethodGet, pinteresttest.PathUserAccount, bearer(cred.AccessToken), nil); a.status != 401 {
		t.Errorf("expired token: %d, want 401", a.status)
	}

	cred2 := srv.AddAccount("1002", "bob")
	srv.ExpireAccessTokens("1002")
	if a := c.must(http.MethodGet, pinteresttest.PathUserAccount, bearer(cred2.AccessToken), nil); a.status != 401 {
		t.Errorf("ExpireAccessTokens: %d, want 401", a.status)
	}
	if a := c.refresh(cred2.RefreshToken); a.status != 200 {
		t.Errorf("refresh after ExpireAccessTokens: %d", a.status)
	}
	cred3 := srv.AddAccount("1003", "carol")
	srv.RevokeGrants("1003")
	if a := c.refresh(cred3.RefreshToken); a.status != 400 || a.code() != pinteresttest.CodeInvalidGrant {
		t.Errorf("refresh after RevokeGrants: %d %v", a.status, a.body)
	}
}

func TestBoardsPagination(t *testing.T) {
	srv, _, c := newServer(t)
	var bs []pinteresttest.Board
	for i := range 7 {
		bs = append(bs, pinteresttest.Board{ID: strconv.Itoa(i), Name: "n" + strconv.Itoa(i)})
	}
	cred := srv.AddAccount("1001", "alice", bs...)
	h := bearer(cred.AccessToken)

	var ids []string
	bookmark := ""
	for page := 0; ; page++ {
		if page > 5 {
			t.Fatal("pagination does not end")
		}
		q := url.Values{"page_size": {"3"}}
		if bookmark != "" {
			q.Set("bookmark", bookmark)
		}
		a := c.must(http.MethodGet, pinteresttest.PathBoards+"?"+q.Encode(), h, nil)
		if a.status != 200 {
			t.Fatalf("page %d: %d %v", page, a.status, a.body)
		}
		for _, it := range a.body["items"].([]any) {
			ids = append(ids, it.(map[string]any)["id"].(string))
		}
		bm, present := a.body["bookmark"]
		if !present {
			t.Fatalf("page %d: no bookmark field", page)
		}
		if bm == nil {
			break
		}
		bookmark = bm.(string)
	}
	if strings.Join(ids, ",") != "0,1,2,3,4,5,6" {
		t.Errorf("ids = %v", ids)
	}

	if a := c.must(http.MethodGet, pinteresttest.PathBoards, h, nil); len(a.body["items"].([]any)) != 7 {
		t.Errorf("default page size: %d items", len(a.body["items"].([]any)))
	}
	for _, q := range []string{"page_size=0", "page_size=251", "page_size=x", "bookmark=%21%21"} {
		if a := c.must(http.MethodGet, pinteresttest.PathBoards+"?"+q, h, nil); a.status != 400 {
			t.Errorf("%s: status %d, want 400", q, a.status)
		}
	}
}

func TestFaults(t *testing.T) {
	srv, _, c := newServer(t)
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"})
	h := bearer(cred.AccessToken)
	get := func() answer { return c.must(http.MethodGet, pinteresttest.PathUserAccount, h, nil) }

	f := pinteresttest.ServerError(pinteresttest.PathUserAccount, 502)
	f.Times = 2
	srv.Inject(f)
	srv.Inject(pinteresttest.RateLimited("", "42")) // any path, after the first fault is spent
	statuses := []int{get().status, get().status}
	rl := get()
	statuses = append(statuses, rl.status, get().status)
	if want := []int{502, 502, 429, 200}; !equal(statuses, want) {
		t.Errorf("statuses = %v, want %v", statuses, want)
	}
	if rl.header.Get("X-Ratelimit-Reset") != "42" || rl.header.Get("X-Ratelimit-Remaining") != "0" || rl.code() != pinteresttest.CodeRateLimited {
		t.Errorf("rate-limit answer headers %v body %v", rl.header, rl.body)
	}

	// A fault on another path leaves this one alone.
	srv.Inject(pinteresttest.ServerError(pinteresttest.PathBoards, 500))
	if a := get(); a.status != 200 {
		t.Errorf("unrelated fault applied: %d", a.status)
	}
	srv.ClearFaults()

	// Unlimited until cleared.
	srv.Inject(pinteresttest.Fault{Path: pinteresttest.PathUserAccount, Times: -1, Status: 500})
	for range 3 {
		if a := get(); a.status != 500 {
			t.Errorf("unlimited fault: %d", a.status)
		}
	}
	srv.ClearFaults()

	// Created but failed: the pin exists.
	srv.Inject(pinteresttest.CreatedButFailed(504))
	if a := c.must(http.MethodPost, pinteresttest.PathPins, h, pinJSON("b1", "https://x.example/a.png")); a.status != 504 {
		t.Errorf("created-but-failed: %d", a.status)
	}
	if n := len(srv.PinsFor("1001")); n != 1 {
		t.Errorf("created-but-failed left %d pins, want 1", n)
	}

	// Spam block.
	srv.Inject(pinteresttest.SpamBlocked(pinteresttest.PathPins))
	if a := c.must(http.MethodPost, pinteresttest.PathPins, h, pinJSON("b1", "https://x.example/a.png")); a.status != 429 || a.str("message") != pinteresttest.SpamMessage {
		t.Errorf("spam: %d %v", a.status, a.body)
	}

	// Delay answers normally, later.
	srv.Inject(pinteresttest.Delay(pinteresttest.PathUserAccount, 10*time.Millisecond))
	if a := get(); a.status != 200 {
		t.Errorf("delayed: %d", a.status)
	}

	// Every answer had its own request id.
	seen := map[string]bool{}
	for _, r := range srv.Requests() {
		if seen[r.RequestID] {
			t.Errorf("request id %s repeated", r.RequestID)
		}
		seen[r.RequestID] = true
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStuckBookmark(t *testing.T) {
	srv, _, c := newServer(t)
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"})
	srv.Inject(pinteresttest.StuckBookmark())
	h := bearer(cred.AccessToken)
	first := c.must(http.MethodGet, pinteresttest.PathBoards, h, nil)
	bm, _ := first.body["bookmark"].(string)
	if bm == "" {
		t.Fatalf("first page bookmark = %v, want one", first.body["bookmark"])
	}
	second := c.must(http.MethodGet, pinteresttest.PathBoards+"?bookmark="+url.QueryEscape(bm), h, nil)
	if got, _ := second.body["bookmark"].(string); got != bm {
		t.Errorf("second bookmark = %q, want %q", got, bm)
	}
}

func TestHangEndsWithClient(t *testing.T) {
	srv, _, c := newServer(t)
	cred := srv.AddAccount("1001", "alice")
	arrived := make(chan struct{}, 1)
	srv.Inject(pinteresttest.Fault{Path: pinteresttest.PathUserAccount, Hang: true, Arrived: arrived})

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.do(ctx, http.MethodGet, pinteresttest.PathUserAccount, bearer(cred.AccessToken), nil)
		done <- err
	}()
	<-arrived
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("hung request: err = %v, want context.Canceled", err)
	}
	srv.Close() // returns only once the handler has
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Status != 0 {
		t.Errorf("requests = %+v, want one unanswered", reqs)
	}
}

func TestCloseReleasesHang(t *testing.T) {
	srv, _, c := newServer(t)
	cred := srv.AddAccount("1001", "alice")
	arrived := make(chan struct{}, 1)
	srv.Inject(pinteresttest.Fault{Path: pinteresttest.PathUserAccount, Hang: true, Arrived: arrived})
	done := make(chan error, 1)
	go func() {
		_, err := c.do(t.Context(), http.MethodGet, pinteresttest.PathUserAccount, bearer(cred.AccessToken), nil)
		done <- err
	}()
	<-arrived
	srv.Close()
	if err := <-done; err == nil {
		t.Errorf("hung request answered after Close")
	}
}

func TestMaxInWindow(t *testing.T) {
	srv, clk, c := newServer(t)
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"})
	srv.AddAccount("1002", "bob")
	// Pins at 0, 1h, 6h, 12h, 12h30, 13h.
	for _, at := range []time.Duration{0, time.Hour, 6 * time.Hour, 12 * time.Hour, 12*time.Hour + 30*time.Minute, 13 * time.Hour} {
		clk.Set(t0.Add(at))
		if a := c.must(http.MethodPost, pinteresttest.PathPins, bearer(cred.AccessToken), pinJSON("b1", "https://x.example/a.png")); a.status != 201 {
			t.Fatalf("pin: %d %v", a.status, a.body)
		}
	}
	tests := []struct {
		account string
		window  time.Duration
		want    int
	}{
		0: {"1001", 12 * time.Hour, 4},
		1: {"1001", time.Hour, 2},
		2: {"1001", 30 * time.Minute, 1},
		3: {"1001", 31 * time.Minute, 2},
		4: {"1001", 24 * time.Hour, 6},
		5: {"1001", 0, 0},
		6: {"1002", 12 * time.Hour, 0},
		7: {"nobody", 12 * time.Hour, 0},
	}
	for i, tt := range tests {
		if got := srv.MaxInWindow(tt.account, tt.window); got != tt.want {
			t.Errorf("step %d: MaxInWindow(%s, %v) = %d want %d", i, tt.account, tt.window, got, tt.want)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	srv, clk, c := newServer(t)
	const accounts, perAccount = 4, 10
	creds := make([]pinteresttest.Credentials, accounts)
	for i := range creds {
		creds[i] = srv.AddAccount(strconv.Itoa(i), "u", pinteresttest.Board{ID: "b" + strconv.Itoa(i)})
	}
	var wg sync.WaitGroup
	for i, cred := range creds {
		for range perAccount {
			wg.Go(func() {
				clk.Advance(time.Second)
				a, err := c.do(t.Context(), http.MethodPost, pinteresttest.PathPins, bearer(cred.AccessToken), pinJSON("b"+strconv.Itoa(i), "https://x.example/a.png"))
				if err != nil || a.status != 201 {
					t.Errorf("pin: %v %d", err, a.status)
				}
			})
		}
		wg.Go(func() { _ = srv.MaxInWindow(cred.AccountID, time.Hour) })
		wg.Go(func() { _ = c.refresh(cred.RefreshToken) })
	}
	wg.Wait()
	pins := srv.Pins()
	if len(pins) != accounts*perAccount {
		t.Fatalf("%d pins, want %d", len(pins), accounts*perAccount)
	}
	ids := map[string]bool{}
	for _, p := range pins {
		ids[p.ID] = true
	}
	if len(ids) != len(pins) {
		t.Errorf("pin ids not unique")
	}
	for _, cred := range creds {
		if n := len(srv.PinsFor(cred.AccountID)); n != perAccount {
			t.Errorf("account %s has %d pins", cred.AccountID, n)
		}
	}
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

// nothingOn fails the test if ch holds a value now.
func nothingOn[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("unexpected %s", what)
	default:
	}
}

type reply struct {
	a   answer
	err error
}

// send sends a request in its own goroutine; the reply comes on the
// returned channel.
func (c client) send(ctx context.Context, method, path string, hdr map[string]string, body io.Reader) <-chan reply {
	out := make(chan reply, 1)
	go func() {
		a, err := c.do(ctx, method, path, hdr, body)
		out <- reply{a, err}
	}()
	return out
}

func TestHoldUntilRefresh(t *testing.T) {
	srv, clk, c := newServer(t)
	cred := srv.AddAccount("1001", "alice")
	until := make(chan struct{})
	arrived, done := make(chan struct{}, 1), make(chan struct{}, 1)
	f := pinteresttest.HoldUntil(pinteresttest.PathToken, until)
	f.Arrived, f.Done = arrived, done
	srv.Inject(f)

	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {cred.RefreshToken}}
	req, _ := http.NewRequest(http.MethodPost, "/", nil)
	req.SetBasicAuth(srv.ClientID(), srv.ClientSecret())
	hdr := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Authorization": req.Header.Get("Authorization")}
	got := c.send(t.Context(), http.MethodPost, pinteresttest.PathToken, hdr, strings.NewReader(form.Encode()))
	waitFor(t, arrived, "arrival of the refresh")

	// Held while the clock moves on by minutes: no answer yet.
	clk.Advance(5 * time.Minute)
	nothingOn(t, got, "answer before release")
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Status != 0 {
		t.Fatalf("requests while held = %+v, want one unanswered", reqs)
	}
	clk.Advance(5 * time.Minute)
	close(until)

	r := waitFor(t, got, "answer after release")
	if r.err != nil || r.a.status != 200 || r.a.str("refresh_token") == "" {
		t.Fatalf("released refresh: %v %d %v", r.err, r.a.status, r.a.body)
	}
	// The token was rotated when the hold ended, on the clock of then.
	if got := r.a.body["refresh_token_expires_at"]; got != float64(t0.Add(10*time.Minute+60*24*time.Hour).Unix()) {
		t.Errorf("refresh_token_expires_at = %v, want the released moment's", got)
	}
	waitFor(t, done, "Done")
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Status != 200 || !reqs[0].At.Equal(t0) || reqs[0].AccountID != "1001" {
		t.Errorf("requests = %+v, want one answered 200, arrived at t0", reqs)
	}
	if a := c.refresh(cred.RefreshToken); a.status != 400 || a.code() != pinteresttest.CodeInvalidGrant {
		t.Errorf("old refresh token after rotation: %d %v", a.status, a.body)
	}
	if a := c.refresh(r.a.str("refresh_token")); a.status != 200 {
		t.Errorf("new refresh token: %d %v", a.status, a.body)
	}
}

func TestDelayedCreateAfterClientGaveUp(t *testing.T) {
	srv, clk, c := newServer(t)
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"})
	until := make(chan struct{})
	arrived, gaveUp, done := make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{}, 1)
	f := pinteresttest.DelayedCreate(until)
	f.Arrived, f.GaveUp, f.Done = arrived, gaveUp, done
	srv.Inject(f)

	ctx, cancel := context.WithCancel(t.Context())
	got := c.send(ctx, http.MethodPost, pinteresttest.PathPins, bearer(cred.AccessToken), pinJSON("b1", "https://x.example/a.png"))
	waitFor(t, arrived, "arrival of the pin")
	cancel()
	if r := waitFor(t, got, "client's end"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("client: %v %d, want context.Canceled", r.err, r.a.status)
	}
	waitFor(t, gaveUp, "GaveUp")
	if n := len(srv.Pins()); n != 0 {
		t.Fatalf("%d pins before release, want 0", n)
	}

	clk.Advance(20 * time.Second)
	close(until)
	waitFor(t, done, "Done")
	pins := srv.Pins()
	if len(pins) != 1 || pins[0].AccountID != "1001" || pins[0].BoardID != "b1" || !pins[0].CreatedAt.Equal(t0.Add(20*time.Second)) {
		t.Fatalf("pins = %+v, want one created at t0+20s", pins)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests = %+v, want one", reqs)
	}
	if r := reqs[0]; r.Status != 0 || !r.At.Equal(t0) || r.PinID != pins[0].ID || r.AccountID != "1001" {
		t.Errorf("request = %+v, want arrived at t0, unanswered, creating pin %s", r, pins[0].ID)
	}
	if n := srv.MaxInWindow("1001", 12*time.Hour); n != 1 {
		t.Errorf("MaxInWindow = %d, want 1", n)
	}
}

func TestDelayedCreateClientStillWaiting(t *testing.T) {
	srv, clk, c := newServer(t)
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"})
	until := make(chan struct{})
	arrived, gaveUp, done := make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{}, 1)
	f := pinteresttest.DelayedCreate(until)
	f.Arrived, f.GaveUp, f.Done = arrived, gaveUp, done
	srv.Inject(f)

	got := c.send(t.Context(), http.MethodPost, pinteresttest.PathPins, bearer(cred.AccessToken), pinJSON("b1", "https://x.example/a.png"))
	waitFor(t, arrived, "arrival of the pin")
	clk.Advance(20 * time.Second)
	close(until)
	r := waitFor(t, got, "answer")
	if r.err != nil || r.a.status != 201 || r.a.str("created_at") != t0.Add(20*time.Second).Format(time.RFC3339) {
		t.Fatalf("answer: %v %d %v, want 201 created at t0+20s", r.err, r.a.status, r.a.body)
	}
	waitFor(t, done, "Done")
	nothingOn(t, gaveUp, "GaveUp from a client that waited")
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Status != 201 || reqs[0].PinID != r.a.str("id") || !reqs[0].At.Equal(t0) {
		t.Errorf("requests = %+v, want one answered 201 for pin %s", reqs, r.a.str("id"))
	}
}

func TestDetachedDelay(t *testing.T) {
	srv, _, c := newServer(t)
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"})
	arrived, gaveUp, done := make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{}, 1)
	srv.Inject(pinteresttest.Fault{Method: http.MethodPost, Path: pinteresttest.PathPins, Delay: 50 * time.Millisecond,
		Detached: true, Arrived: arrived, GaveUp: gaveUp, Done: done})
	ctx, cancel := context.WithCancel(t.Context())
	got := c.send(ctx, http.MethodPost, pinteresttest.PathPins, bearer(cred.AccessToken), pinJSON("b1", "https://x.example/a.png"))
	waitFor(t, arrived, "arrival of the pin")
	cancel()
	waitFor(t, got, "client's end")
	waitFor(t, gaveUp, "GaveUp")
	waitFor(t, done, "Done")
	if n := len(srv.Pins()); n != 1 {
		t.Errorf("%d pins after a detached Delay, want 1", n)
	}
}

func TestCloseDuringDetachedHold(t *testing.T) {
	for _, tt := range []struct {
		name       string
		clientGone bool
	}{{"client waiting", false}, {"client gone", true}} {
		clientGone := tt.clientGone
		t.Run(tt.name, func(t *testing.T) {
			srv, _, c := newServer(t)
			cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"})
			until := make(chan struct{})
			arrived, gaveUp, done := make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{}, 1)
			f := pinteresttest.DelayedCreate(until)
			f.Arrived, f.GaveUp, f.Done = arrived, gaveUp, done
			srv.Inject(f)

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			got := c.send(ctx, http.MethodPost, pinteresttest.PathPins, bearer(cred.AccessToken), pinJSON("b1", "https://x.example/a.png"))
			waitFor(t, arrived, "arrival of the pin")
			if clientGone {
				cancel()
				waitFor(t, got, "client's end")
				waitFor(t, gaveUp, "GaveUp")
			}
			closed := make(chan struct{})
			go func() { srv.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(10 * time.Second):
				close(until) // let the stuck handler, and so Close, end
				t.Fatal("Close hung during a detached hold")
			}
			if !clientGone {
				if r := waitFor(t, got, "client's end"); r.err == nil {
					t.Errorf("held request answered %d after Close", r.a.status)
				}
			}
			close(until) // too late: the Server is closed
			if pins := srv.Pins(); len(pins) != 0 {
				t.Errorf("pins = %+v, want none: Close came during the hold", pins)
			}
			nothingOn(t, done, "Done for a request cut short by Close")
			if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Status != 0 || reqs[0].PinID != "" {
				t.Errorf("requests = %+v, want one unanswered without a pin", reqs)
			}
		})
	}
}

// TestHangOnPostEndsWithClient: a held request with a body still notices
// its client giving up.
func TestHangOnPostEndsWithClient(t *testing.T) {
	srv, _, c := newServer(t)
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"})
	arrived, gaveUp, done := make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{}, 1)
	srv.Inject(pinteresttest.Fault{Path: pinteresttest.PathPins, Hang: true, Arrived: arrived, GaveUp: gaveUp, Done: done})
	ctx, cancel := context.WithCancel(t.Context())
	got := c.send(ctx, http.MethodPost, pinteresttest.PathPins, bearer(cred.AccessToken), pinJSON("b1", "https://x.example/a.png"))
	waitFor(t, arrived, "arrival of the pin")
	cancel()
	waitFor(t, got, "client's end")
	waitFor(t, gaveUp, "GaveUp from the hung request's handler")
	waitFor(t, done, "Done")
	if n := len(srv.Pins()); n != 0 {
		t.Errorf("%d pins from a hung request, want 0", n)
	}
}
