package dashboard

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pinbot/pinbot/internal/browsertest"
)

// screenshotEnv, when set, is the path the browser test writes its
// screenshot to instead of its artifact directory; a relative path is
// from the package's directory. docs/dashboard.png is made so.
const screenshotEnv = "PINBOT_DASHBOARD_SCREENSHOT"

// browserBudget bounds the whole browser test.
const browserBudget = 20 * time.Second

// TestBrowserDashboard signs in to the dashboard in headless Chromium,
// over a seeded engine, metrics registry and reconciler's drifts, and
// checks the numbers it shows, the drift column and card, that it loads without a console error and that it refuses
// without the token and with a wrong one; it saves a screenshot.
func TestBrowserDashboard(t *testing.T) {
	browser := browsertest.New(t, browserBudget)
	f := newFixture(t)
	srv := f.server(t)

	t.Run("refused without the token", func(t *testing.T) {
		resp, err := chromedp.Run(browser, chromedp.NavigateResponse(srv.URL+Path))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != 401 || !strings.HasPrefix(headerValue(resp.Headers, "WWW-Authenticate"), "Bearer") {
			t.Fatalf("GET %s: %d, WWW-Authenticate %q", Path, resp.Status, headerValue(resp.Headers, "WWW-Authenticate"))
		}
		text := mustRun(t, browser, chromedp.Text(chromedp.CSS("main")))
		if !strings.Contains(text, "needs the admin token") || strings.Contains(text, "acct-") {
			t.Fatalf("the 401 page reads %q", text)
		}
	})

	t.Run("refused with a wrong token", func(t *testing.T) {
		signIn(t, browser, srv.URL, "not-the-token")
		mustDo(t, browser, chromedp.WaitVisible(chromedp.ID("login-error")))
		if got := mustRun(t, browser, chromedp.Text(chromedp.ID("login-error"))); got != "That token was not accepted." {
			t.Fatalf("login error %q", got)
		}
		if html := mustRun(t, browser, chromedp.InnerHTML(chromedp.ID("dashboard"), chromedp.NodeReady)); html != "" {
			t.Fatalf("the dashboard shows after a wrong token: %q", html)
		}
		if kept := mustRun(t, browser, chromedp.Evaluate[any](`sessionStorage.getItem("pinbot.admin.token")`)); kept != nil {
			t.Fatalf("a refused token is kept in sessionStorage: %v", kept)
		}
	})

	// A tab of its own: the refusals above log their 401s.
	tab, cancel := chromedp.NewContext(browser)
	defer cancel()
	con := browsertest.Listen(tab)
	signIn(t, tab, srv.URL, testToken)
	mustDo(t, tab, chromedp.WaitVisible(chromedp.ID("busiest")))

	t.Run("numbers", func(t *testing.T) {
		rows := mustRun(t, tab, chromedp.Evaluate[[]string](
			`[...document.querySelectorAll("#busiest tbody tr")].map(r => r.querySelector(".id").textContent + " " + r.querySelector(".ratio").textContent)`))
		want := []string{"acct-alice-art 98/100", "acct-bob-photos 75/100", "acct-carol 41/100", "acct-dave 12/100", "acct-erin 3/100"}
		if !slices.Equal(rows, want) {
			t.Errorf("busiest rows %q, want %q", rows, want)
		}
		// The accounts someone linked are named, with who linked them.
		names := mustRun(t, tab, chromedp.Evaluate[[]string](
			`[...document.querySelectorAll("#busiest .account, #queue .account")].map(c => c.innerText.replace(/\s+/g, " ").trim())`))
		want = []string{"@alice_art acct-alice-art linked by Discord user 801", "@bob_photos acct-bob-photos linked by Discord users 802, 803",
			"acct-carol", "acct-dave", "acct-erin", "@bob_photos acct-bob-photos linked by Discord users 802, 803"}
		if !slices.Equal(names, want) {
			t.Errorf("account cells %q, want %q", names, want)
		}
		for id, want := range map[string]string{
			"pins-total":       "1,251",
			"failures-total":   "17",
			"refusals-total":   "11",
			"refusals-reasons": "throttled 5 · http_rate 4 · closing 2",
			"waiting":          "2",
			"shards":           "3",
			"timeline-total":   "229",
			"rule":             "100 pins per 12h",
		} {
			if got := mustRun(t, tab, chromedp.Text(chromedp.ID(id))); got != want {
				t.Errorf("#%s reads %q, want %q", id, got, want)
			}
		}
		failures := mustRun(t, tab, chromedp.Evaluate[[]string](
			`[...document.querySelectorAll("#failures tr")].map(r => [...r.cells].map(c => c.textContent.trim()).filter(Boolean).join(" "))`))
		if want := []string{"Reason Share Last hour Total", "invalid_image 3 9", "timeout 3 5", "rate_limited 2 3"}; !slices.Equal(failures, want) {
			t.Errorf("failures %q, want %q", failures, want)
		}
		queue := mustRun(t, tab, chromedp.Text(chromedp.ID("queue")))
		if !strings.Contains(queue, "acct-bob-photos") || !strings.Contains(queue, "held until") {
			t.Errorf("queue reads %q", queue)
		}
		upstreams := mustRun(t, tab, chromedp.Evaluate[[]string](
			`[...document.querySelectorAll("#upstreams tr.total")].map(r => [...r.cells].slice(0, 7).map(c => c.textContent.trim()).join(" | "))`))
		want = []string{
			"Pinterest | all routes | 1,000 | 40 | 4.0% | 50 ms | 2.35 s",
			"Discord | all routes | 2,000 | 10 | 0.5% | 75 ms | 100 ms",
		}
		if !slices.Equal(upstreams, want) {
			t.Errorf("upstream totals %q, want %q", upstreams, want)
		}
		// The fixture's snapshots are exactly 5 minutes and an hour old.
		recent := mustRun(t, tab, chromedp.Evaluate[[]string](
			`[...document.querySelectorAll("#recent tr.window")].map(r => r.closest("tbody").dataset.upstream + " | " + [...r.cells].slice(1).map(c => c.textContent.trim()).join(" | "))`))
		want = []string{
			"pinterest | last 5 min | 43 | 8.6/min | 18 | 42% | 6 | 250 ms | 2.47 s",
			"pinterest | last hour | 238 | 4.0/min | 28 | 12% | 8 | 150 ms | 2.44 s",
			"discord | last 5 min | 44 | 8.8/min | 4 | 9.1% | 0 | 80 ms | 485 ms",
			"discord | last hour | 296 | 4.9/min | 6 | 2.0% | 0 | 76 ms | 450 ms",
		}
		if !slices.Equal(recent, want) {
			t.Errorf("recent windows\n%q\nwant\n%q", recent, want)
		}
		if got, want := mustRun(t, tab, chromedp.Text(chromedp.ID("failures-recent"))), "8 in the last hour"; got != want {
			t.Errorf("#failures-recent reads %q, want %q", got, want)
		}
		if bars := mustRun(t, tab, chromedp.Evaluate[int](`document.querySelectorAll("#timeline rect.pinbar").length`)); bars != 49 {
			t.Errorf("%d bars in the timeline, want 49", bars)
		}
	})

	t.Run("drift", func(t *testing.T) {
		// The column, beside each busiest account; a dash where no
		// reconciliation measured one.
		cells := mustRun(t, tab, chromedp.Evaluate[[]string](
			`[...document.querySelectorAll("#busiest tbody tr")].map(r => r.querySelector(".id").textContent + " " + r.querySelector(".driftcol").innerText.replace(/\s+/g, " ").trim())`))
		want := []string{"acct-alice-art 0", "acct-bob-photos +1", "acct-carol −2", "acct-dave –", "acct-erin 0 4 made elsewhere"}
		if !slices.Equal(cells, want) {
			t.Errorf("drift column %q, want %q", cells, want)
		}
		rows := mustRun(t, tab, chromedp.Evaluate[[]string](
			`[...document.querySelectorAll("#drift tbody tr")].map(r => [...r.cells].slice(0, 6).map(c => c.innerText.replace(/\s+/g, " ").trim()).join(" | "))`))
		want = []string{
			"acct-zed | 60 | 55 | 5 | 0 | +5",
			"acct-carol | 39 | 41 | 0 | 0 | −2",
			"@bob_photos acct-bob-photos linked by Discord users 802, 803 | 76 | 75 | 0 | 0 | +1 1 unexplained",
		}
		if !slices.Equal(rows, want) {
			t.Errorf("drift card\n%q\nwant\n%q", rows, want)
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		if path := os.Getenv(screenshotEnv); path != "" {
			png := browsertest.Run(t, tab, chromedp.FullScreenshot(100))
			if err := os.WriteFile(path, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot: %s", path)
			return
		}
		browsertest.Screenshot(t, tab, "dashboard.png")
	})

	t.Run("no console errors", func(t *testing.T) {
		if errs := con.Errors(); len(errs) > 0 {
			t.Fatalf("the dashboard wrote to the console:\n%s", strings.Join(errs, "\n"))
		}
	})

	t.Run("sign out", func(t *testing.T) {
		mustDo(t, tab, chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("login-form")))
		if kept := mustRun(t, tab, chromedp.Evaluate[any](`sessionStorage.getItem("pinbot.admin.token")`)); kept != nil {
			t.Fatalf("the token is kept after signing out: %v", kept)
		}
		if n := mustRun(t, tab, chromedp.Evaluate[int](`document.querySelectorAll("#busiest").length`)); n != 0 {
			t.Fatal("the dashboard still shows after signing out")
		}
	})
}

// signIn opens the sign-in page in ctx's tab and submits token.
func signIn(t *testing.T, ctx context.Context, base, token string) {
	t.Helper()
	mustDo(t, ctx,
		chromedp.Navigate(base+LoginPath),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.CSS("#login-form button")),
	)
}

func mustDo(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	browsertest.Do(t, ctx, actions...)
}

func mustRun[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	return browsertest.Run(t, ctx, a)
}

// headerValue returns a response header's value whatever its case.
func headerValue(h map[string]any, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			s, _ := v.(string)
			return s
		}
	}
	return ""
}
