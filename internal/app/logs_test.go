package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/discorduser"
	"github.com/pinbot/pinbot/bot/web"
	"github.com/pinbot/pinbot/bot/web/webtest"
	"github.com/pinbot/pinbot/internal/edge"
	"github.com/pinbot/pinbot/internal/logtest"
)

// recorder is an http.RoundTripper that keeps what went through it: the
// query values and form fields sent, and the X-Request-ID of pinbot's
// answers.
type recorder struct {
	base   http.RoundTripper
	pinbot string // pinbot's host

	mu     sync.Mutex
	values []string // code, state, csrf and link values sent
	ids    map[string]bool
}

func (rt *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	vals := req.URL.Query()
	if req.Body != nil && req.Header.Get("Content-Type") == "application/x-www-form-urlencoded" {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		form, _ := url.ParseQuery(string(b))
		for k, v := range form {
			vals[k] = append(vals[k], v...)
		}
	}
	rt.mu.Lock()
	for _, k := range []string{"code", "state", "csrf", "link"} {
		rt.values = append(rt.values, vals[k]...)
	}
	rt.mu.Unlock()
	resp, err := rt.base.RoundTrip(req)
	if err == nil && req.URL.Host == rt.pinbot {
		rt.mu.Lock()
		rt.ids[resp.Header.Get(edge.RequestIDHeader)] = true
		rt.mu.Unlock()
	}
	return resp, err
}

// TestBuildLogsCarryRequestIDsAndNoSecrets links an account through the
// listener with Discord sign-in, opens the dashboard with the admin token
// and with a wrong one, all logging at debug level, and checks that every
// line logged on behalf of a request carries the ID its answer's
// X-Request-ID header names, and that no secret reached the logs: the
// bot token, the Pinterest and Discord app secrets, the admin token,
// OAuth codes and states (Pinterest's and Discord's), the confirmation's
// link ID and CSRF token, the browser's cookies, the account's tokens.
func TestBuildLogsCarryRequestIDsAndNoSecrets(t *testing.T) {
	ctx := context.Background()
	dc, ps, ann := linkStandIns(t)
	logs := &logtest.Buffer{}
	cfg := testConfig(t, dc, ps, t.TempDir())
	cfg.Log = zerolog.New(logs).Level(zerolog.DebugLevel)
	adminToken := "admin-token-0123456789abcdef"
	cfg.AdminToken = []byte(adminToken)
	cfg.HTTPLimit.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	public := strings.TrimSuffix(cfg.Pinterest.RedirectURL, web.CallbackPath)
	dc.AddOAuth2Redirect(public + web.DiscordCallbackPath)
	cfg.Discord = discorduser.Config{ClientSecret: dc.OAuth2ClientSecret(), AuthorizeURL: dc.OAuth2AuthorizeURL()}
	cfg.AvatarSources = []string{}
	a, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)

	rec := &recorder{base: http.DefaultTransport, pinbot: cfg.Listener.Addr().String(), ids: map[string]bool{}}
	b := webtest.NewBrowser(&http.Client{Transport: rec})
	state, err := a.Links.NewState(ctx, ann.UserID.String(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Get(ctx, a.Pinterest.AuthCodeURL(state))
	if err != nil || p.Title != "Confirm the link" {
		t.Fatalf("callback: %v %d %q", err, p.Status, p.Message)
	}
	if err := dc.SetOAuth2User(ann.UserID); err != nil {
		t.Fatal(err)
	}
	if p, err = b.Get(ctx, p.SignInURL); err != nil || !p.CanConfirm {
		t.Fatalf("after signing in: %v %d %q", err, p.Status, p.Message)
	}
	if p, err = b.Submit(ctx, p, webtest.Confirm); err != nil || p.Title != "Linked" {
		t.Fatalf("confirm: %v %d %q", err, p.Status, p.Message)
	}
	for _, auth := range []string{"Bearer " + adminToken, "Bearer wrong-" + adminToken} {
		req, _ := http.NewRequest(http.MethodGet, public+"/admin/data.json", nil)
		req.Header.Set("Authorization", auth)
		resp, err := b.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	// A trusted proxy's X-Request-ID is kept; one that could break a log
	// line is replaced.
	for sent, kept := range map[string]bool{"proxy-7f3a:1": true, "a\"b": false, strings.Repeat("x", 65): false} {
		req, _ := http.NewRequest(http.MethodGet, public+web.HealthPath, nil)
		req.Header.Set(edge.RequestIDHeader, sent)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := resp.Header.Get(edge.RequestIDHeader)
		if (got == sent) != kept || got == "" {
			t.Errorf("X-Request-ID %q sent from a trusted proxy: answered %q", sent, got)
		}
	}

	tok, err := a.Links.Token(ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	tagged := map[string]int{}
	for line := range strings.Lines(out) {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		comp, _ := l["component"].(string)
		id, _ := l["request_id"].(string)
		msg, _ := l["message"].(string)
		switch {
		case comp == "web" || comp == "pinterest" || comp == "dashboard" || (comp == "links" && msg == "pinterest account linked"):
			if !rec.ids[id] {
				t.Errorf("line %s: request_id %q is not one the answers named", strings.TrimSpace(line), id)
			}
			tagged[comp]++
		case id != "":
			tagged[comp]++
		}
	}
	for _, comp := range []string{"web", "pinterest", "links"} {
		if tagged[comp] == 0 {
			t.Errorf("no %s line with a request ID:\n%s", comp, out)
		}
	}

	secrets := append([]string{
		dc.Token(), ps.ClientSecret(), dc.OAuth2ClientSecret(), adminToken, tok.AccessToken, tok.RefreshToken,
	}, rec.values...)
	u, _ := url.Parse(public)
	for _, c := range b.Client().Jar.Cookies(u) {
		secrets = append(secrets, c.Value)
	}
	if len(rec.values) < 6 {
		t.Fatalf("only %d codes, states and form values seen", len(rec.values))
	}
	for _, s := range secrets {
		if len(s) < 8 {
			t.Fatalf("secret %q too short to search for", s)
		}
		if strings.Contains(out, s) {
			t.Errorf("secret %.6s… found in the logs", s)
		}
	}
}
