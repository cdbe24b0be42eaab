package pinteresttest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// TestRateLimitHeaders steps through one account's window of 3 requests a
// minute: every answer carries the three headers, the fourth request is
// refused with Retry-After and runs nothing, another endpoint and another
// account count apart, and the window ends on time.
func TestRateLimitHeaders(t *testing.T) {
	srv, clk, c := newServer(t, pinteresttest.WithRateLimit(pinteresttest.RateLimit{Limit: 3, Window: time.Minute}))
	alice := bearer(srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"}).AccessToken)
	bob := bearer(srv.AddAccount("1002", "bob", pinteresttest.Board{ID: "b2"}).AccessToken)
	type want struct {
		status                      int
		remaining, reset, retryWait string
	}
	steps := []struct {
		advance time.Duration
		method  string
		path    string
		hdr     map[string]string
		want    want
	}{
		0: {0, http.MethodGet, pinteresttest.PathUserAccount, alice, want{200, "2", "60", ""}},
		1: {10 * time.Second, http.MethodGet, pinteresttest.PathUserAccount, alice, want{200, "1", "50", ""}},
		2: {500 * time.Millisecond, http.MethodGet, pinteresttest.PathUserAccount, alice, want{200, "0", "50", ""}},
		3: {0, http.MethodGet, pinteresttest.PathUserAccount, alice, want{429, "0", "50", "50"}},
		4: {0, http.MethodGet, pinteresttest.PathBoards, alice, want{200, "2", "60", ""}},
		5: {0, http.MethodGet, pinteresttest.PathUserAccount, bob, want{200, "2", "60", ""}},
		6: {49 * time.Second, http.MethodGet, pinteresttest.PathUserAccount, alice, want{429, "0", "1", "1"}},
		7: {500 * time.Millisecond, http.MethodGet, pinteresttest.PathUserAccount, alice, want{200, "2", "60", ""}},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		a := c.must(st.method, st.path, st.hdr, nil)
		got := want{a.status, a.header.Get("X-Ratelimit-Remaining"), a.header.Get("X-Ratelimit-Reset"), a.header.Get("Retry-After")}
		if got != st.want || a.header.Get("X-Ratelimit-Limit") != "3" {
			t.Errorf("step %d: %s %s = %+v limit %q, want %+v limit 3", i, st.method, st.path, got, a.header.Get("X-Ratelimit-Limit"), st.want)
		}
		if a.status == 429 && a.code() != pinteresttest.CodeRateLimited {
			t.Errorf("step %d: code %d, want %d", i, a.code(), pinteresttest.CodeRateLimited)
		}
	}
}

// TestRateLimitPerApp counts every request of the app together, the
// token endpoint's too, and a refused pin is not created.
func TestRateLimitPerApp(t *testing.T) {
	srv, _, c := newServer(t, pinteresttest.WithRateLimit(pinteresttest.RateLimit{Limit: 2, Window: time.Hour, PerApp: true}))
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1"})
	other := srv.AddAccount("1002", "bob", pinteresttest.Board{ID: "b2"})
	if a := c.refresh(cred.RefreshToken); a.status != 200 || a.header.Get("X-Ratelimit-Remaining") != "1" {
		t.Fatalf("refresh: %d remaining %q", a.status, a.header.Get("X-Ratelimit-Remaining"))
	}
	if a := c.must(http.MethodGet, pinteresttest.PathUserAccount, bearer(other.AccessToken), nil); a.status != 200 || a.header.Get("X-Ratelimit-Remaining") != "0" {
		t.Fatalf("user account: %d remaining %q", a.status, a.header.Get("X-Ratelimit-Remaining"))
	}
	a := c.must(http.MethodPost, pinteresttest.PathPins, bearer(other.AccessToken), pinJSON("b2", "https://x.example/a.png"))
	if a.status != 429 || a.header.Get("Retry-After") != "3600" {
		t.Fatalf("pin: %d Retry-After %q, want 429 and 3600", a.status, a.header.Get("Retry-After"))
	}
	if n := len(srv.Pins()); n != 0 {
		t.Fatalf("%d pins created by a refused request", n)
	}
	srv.SetRateLimit(nil)
	if a := c.must(http.MethodGet, pinteresttest.PathUserAccount, bearer(other.AccessToken), nil); a.status != 200 || a.header.Get("X-Ratelimit-Remaining") != "" {
		t.Fatalf("without a limit: %d remaining %q", a.status, a.header.Get("X-Ratelimit-Remaining"))
	}
}
