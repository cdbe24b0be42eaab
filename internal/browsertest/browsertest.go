// Package browsertest runs Debian's headless Chromium for the tests of
// the pages pinbot serves (the operator dashboard, the link confirmation
// page), through github.com/chromedp/chromedp. It is for tests only.
//
// A test calls New, which skips it when Chromium is not installed, unless
// PINBOT_REQUIRE_CHROMIUM is set (make test sets it: CI installs Chromium
// with make browser-deps), and then fails it.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// RequireChromiumEnv, when set, makes New fail the test instead of
// skipping it when Chromium is missing.
const RequireChromiumEnv = "PINBOT_REQUIRE_CHROMIUM"

// Chromium returns the path of Debian's chromium, skipping the test when
// it is missing unless RequireChromiumEnv is set.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(RequireChromiumEnv) != "" {
		t.Fatalf("chromium is not installed and %s is set: run make browser-deps (apt-get install chromium)", RequireChromiumEnv)
	}
	t.Skipf("chromium is not installed: run make browser-deps (apt-get install chromium), or set %s=1 to fail instead of skipping", RequireChromiumEnv)
	return ""
}

// New starts headless Chromium for the test, bounded by budget, and
// returns the context of its first tab. The browser stops when the test
// ends.
func New(t testing.TB, budget time.Duration) context.Context {
	t.Helper()
	path := Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	t.Cleanup(cancel)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // the tests run as root in CI
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1360, 900),
		// The machine has no network beyond loopback: nothing but the
		// test servers is to be reached.
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		t.Fatalf("starting chromium: %v", err)
	}
	return bctx
}

// Console collects what a tab writes to its console: calls of the
// console API, uncaught exceptions and the browser's log entries. It is
// safe for simultaneous use by multiple goroutines.
type Console struct {
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
}

// Listen collects ctx's tab's console messages until ctx ends.
func Listen(ctx context.Context) *Console {
	c := &Console{}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			c.mu.Lock()
			c.msgs = append(c.msgs, m)
			c.mu.Unlock()
		}
	}()
	return c
}

// Errors returns the errors and exceptions collected so far.
func (c *Console) Errors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		if m.Type == chromedp.ConsoleError || m.IsException() {
			out = append(out, m.URL+": "+m.String())
		}
	}
	return out
}

// Screenshot saves a screenshot of ctx's whole page as name (a .png) in
// the test's artifact directory.
func Screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (kept with go test -artifacts -outputdir DIR)", path)
}

// Do runs actions in ctx's tab, failing the test on an error.
func Do(t testing.TB, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// Run runs a in ctx's tab and returns its value, failing the test on an
// error.
func Run[T any](t testing.TB, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
