package pinterest_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// TestPauseBeforeRefusal: once an answer says no request of its kind is
// left (x-ratelimit-remaining 0), the next pin is held back unsent with a
// Preempted RateLimitError until the announced reset, so Pinterest never
// answers 429; other kinds of request and other accounts go on.
func TestPauseBeforeRefusal(t *testing.T) {
	e := newEnv(t, nil, pinteresttest.WithRateLimit(pinteresttest.RateLimit{Limit: 2, Window: time.Minute}))
	_, alice, _ := e.account(t, "1001", boards(1)...)
	_, bob, _ := e.account(t, "1002", boards(1)...)

	for i := range 2 {
		if _, err := e.c.CreatePin(t.Context(), alice, pinReq); err != nil {
			t.Fatalf("pin %d: %v", i, err)
		}
		e.clk.Advance(10 * time.Second)
	}
	_, err := e.c.CreatePin(t.Context(), alice, pinReq)
	var rl *pinterest.RateLimitError
	if !errors.As(err, &rl) || !errors.Is(err, pinterest.ErrRateLimited) || !rl.Preempted || rl.API != nil || rl.Spam {
		t.Fatalf("third pin: err = %v, want a Preempted RateLimitError", err)
	}
	// The second answer came at t0+10s with 50 s left in the window.
	if want := t0.Add(time.Minute); !rl.ResetAt.Equal(want) || rl.Wait != 40*time.Second {
		t.Errorf("ResetAt %v Wait %v, want %v and 40s", rl.ResetAt, rl.Wait, want)
	}
	var ae *pinterest.APIError
	if errors.As(err, &ae) {
		t.Errorf("a held-back request carries an APIError: %+v", ae)
	}
	wantCount(t, e.srv, http.MethodPost, pinteresttest.PathPins, 2)
	for _, r := range e.srv.Requests() {
		if r.Status == http.StatusTooManyRequests {
			t.Errorf("Pinterest refused %s %s", r.Method, r.Path)
		}
	}

	// Another kind of request, and another account, are not held back.
	if _, err := e.c.ListBoards(t.Context(), alice); err != nil {
		t.Errorf("boards of the paused account: %v", err)
	}
	if _, err := e.c.CreatePin(t.Context(), bob, pinReq); err != nil {
		t.Errorf("pin of another account: %v", err)
	}

	// At the reset, pins go again.
	e.clk.Set(t0.Add(time.Minute))
	if _, err := e.c.CreatePin(t.Context(), alice, pinReq); err != nil {
		t.Errorf("pin after the reset: %v", err)
	}
	if w := e.waits(); len(w) != 0 {
		t.Errorf("waited %v, want no wait", w)
	}
}

// TestPauseGetWaits: a GET held back by a pause that ends within
// Retry.MaxWait waits it out and is sent once, at the reset; one that
// ends later fails at once, unsent.
func TestPauseGetWaits(t *testing.T) {
	e := newEnv(t, nil, pinteresttest.WithRateLimit(pinteresttest.RateLimit{Limit: 1, Window: 5 * time.Second}))
	_, s, _ := e.account(t, "1001")
	if _, err := e.c.UserAccount(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.UserAccount(t.Context(), s); err != nil {
		t.Fatalf("second GET: %v", err)
	}
	if w := e.waits(); !slices.Equal(w, []time.Duration{5 * time.Second}) {
		t.Errorf("waits %v, want [5s]", w)
	}
	wantCount(t, e.srv, http.MethodGet, pinteresttest.PathUserAccount, 2)

	e.srv.SetRateLimit(&pinteresttest.RateLimit{Limit: 1, Window: time.Minute})
	if _, err := e.c.UserAccount(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	_, err := e.c.UserAccount(t.Context(), s)
	var rl *pinterest.RateLimitError
	if !errors.As(err, &rl) || !rl.Preempted || rl.Wait != time.Minute {
		t.Fatalf("err = %v, want a Preempted RateLimitError waiting 1m (over MaxWait)", err)
	}
	wantCount(t, e.srv, http.MethodGet, pinteresttest.PathUserAccount, 3)
}

// TestAppRateLimits: with Config.AppRateLimits, one account's spent limit
// holds back every account.
func TestAppRateLimits(t *testing.T) {
	e := newEnv(t, func(c *pinterest.Config) { c.AppRateLimits = true },
		pinteresttest.WithRateLimit(pinteresttest.RateLimit{Limit: 1, Window: time.Hour, PerApp: true}))
	_, alice, _ := e.account(t, "1001", boards(1)...)
	_, bob, _ := e.account(t, "1002", boards(1)...)
	if _, err := e.c.CreatePin(t.Context(), alice, pinReq); err != nil {
		t.Fatal(err)
	}
	var rl *pinterest.RateLimitError
	if _, err := e.c.CreatePin(t.Context(), bob, pinReq); !errors.As(err, &rl) || !rl.Preempted || rl.Wait != time.Hour {
		t.Fatalf("other account: err = %v, want a Preempted RateLimitError for 1h", err)
	}
	wantCount(t, e.srv, http.MethodPost, pinteresttest.PathPins, 1)
}

// TestRateLimitedAnswerPauses: a 429 pauses its kind of request until its
// reset: the next pin is held back without reaching Pinterest.
func TestRateLimitedAnswerPauses(t *testing.T) {
	e := newEnv(t, nil)
	_, s, _ := e.account(t, "1001", boards(1)...)
	e.srv.Inject(pinteresttest.RateLimited(pinteresttest.PathPins, "30"))
	if _, err := e.c.CreatePin(t.Context(), s, pinReq); !errors.Is(err, pinterest.ErrRateLimited) {
		t.Fatalf("err = %v, want ErrRateLimited", err)
	}
	e.clk.Advance(29 * time.Second)
	var rl *pinterest.RateLimitError
	if _, err := e.c.CreatePin(t.Context(), s, pinReq); !errors.As(err, &rl) || !rl.Preempted || rl.Wait != time.Second {
		t.Fatalf("err = %v, want a Preempted RateLimitError for 1s", err)
	}
	wantCount(t, e.srv, http.MethodPost, pinteresttest.PathPins, 1)
	e.clk.Advance(time.Second)
	if _, err := e.c.CreatePin(t.Context(), s, pinReq); err != nil {
		t.Fatalf("after the reset: %v", err)
	}
}

// TestBackoffSchedule: each wait before a repeat is drawn from [0, bound)
// with the bound doubling from BaseDelay up to MaxDelay; Rand is asked
// for exactly the bounds.
func TestBackoffSchedule(t *testing.T) {
	var mu sync.Mutex
	var bounds []int64
	e := newEnv(t, func(c *pinterest.Config) {
		c.Breaker.Failures = 10
		c.Retry.MaxAttempts = 6
		c.Retry.BaseDelay = 100 * time.Millisecond
		c.Retry.MaxDelay = time.Second
		c.Retry.Rand = func(n int64) int64 {
			mu.Lock()
			defer mu.Unlock()
			bounds = append(bounds, n)
			return n - 1 // the longest wait
		}
	})
	_, s, _ := e.account(t, "1001")
	f := pinteresttest.ServerError(pinteresttest.PathUserAccount, 503)
	f.Times = 6
	e.srv.Inject(f)
	if _, err := e.c.UserAccount(t.Context(), s); !errors.Is(err, pinterest.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	ms := time.Millisecond
	wantBounds := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second}
	got := make([]time.Duration, len(bounds))
	for i, b := range bounds {
		got[i] = time.Duration(b)
	}
	if !slices.Equal(got, wantBounds) {
		t.Errorf("bounds %v, want %v", got, wantBounds)
	}
	var wantWaits []time.Duration
	for _, b := range wantBounds {
		wantWaits = append(wantWaits, b-1)
	}
	if w := e.waits(); !slices.Equal(w, wantWaits) {
		t.Errorf("waits %v, want %v", w, wantWaits)
	}
	wantCount(t, e.srv, http.MethodGet, pinteresttest.PathUserAccount, 6)
}

// TestJitterBounds: with a real random source, every wait lies in
// [0, bound) and the waits are spread, not all alike.
func TestJitterBounds(t *testing.T) {
	src := rand.New(rand.NewPCG(1, 2))
	var mu sync.Mutex
	var draws [][2]int64
	e := newEnv(t, func(c *pinterest.Config) {
		c.Retry.MaxAttempts = 4
		c.Retry.Rand = func(n int64) int64 {
			mu.Lock()
			defer mu.Unlock()
			v := src.Int64N(n)
			draws = append(draws, [2]int64{n, v})
			return v
		}
	})
	_, s, _ := e.account(t, "1001")
	for range 50 {
		f := pinteresttest.ServerError(pinteresttest.PathUserAccount, 502)
		f.Times = 3
		e.srv.Inject(f)
		if _, err := e.c.UserAccount(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	distinct := map[int64]bool{}
	for i, d := range draws {
		bound := pinterest.DefaultBaseDelay << (i % 3)
		if d[0] != int64(bound) || d[1] < 0 || d[1] >= d[0] {
			t.Fatalf("draw %d: %v from bound %v, want [0, %v)", i, time.Duration(d[1]), time.Duration(d[0]), bound)
		}
		distinct[d[1]] = true
	}
	if len(draws) != 150 || len(distinct) < 100 {
		t.Errorf("%d draws, %d distinct", len(draws), len(distinct))
	}
}

// TestGetRetriedAfter429: a GET answered 429 is repeated once the reset
// has passed (the wait is the reset, longer than the backoff); a reset
// beyond Retry.MaxWait fails at once.
func TestGetRetriedAfter429(t *testing.T) {
	e := newEnv(t, nil)
	_, s, _ := e.account(t, "1001")
	e.srv.Inject(pinteresttest.RateLimited(pinteresttest.PathUserAccount, "3"))
	if _, err := e.c.UserAccount(t.Context(), s); err != nil {
		t.Fatalf("err = %v", err)
	}
	if w := e.waits(); !slices.Equal(w, []time.Duration{3 * time.Second}) {
		t.Errorf("waits %v, want [3s]", w)
	}
	wantCount(t, e.srv, http.MethodGet, pinteresttest.PathUserAccount, 2)

	e.srv.Inject(pinteresttest.RateLimited(pinteresttest.PathUserAccount, "60"))
	var rl *pinterest.RateLimitError
	if _, err := e.c.UserAccount(t.Context(), s); !errors.As(err, &rl) || rl.Preempted || rl.Wait != time.Minute {
		t.Fatalf("err = %v, want Pinterest's RateLimitError for 1m", err)
	}
	wantCount(t, e.srv, http.MethodGet, pinteresttest.PathUserAccount, 3)
}

// TestCreatePinNeverRetried: POST /pins is sent once whatever goes wrong:
// a 5xx or a timeout leaves its outcome unknown, a 429 is returned; no
// wait is taken.
func TestCreatePinNeverRetried(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fault pinteresttest.Fault
		want  error
	}{
		{"503", pinteresttest.ServerError(pinteresttest.PathPins, 503), pinterest.ErrOutcomeUnknown},
		{"created but 500", pinteresttest.CreatedButFailed(500), pinterest.ErrOutcomeUnknown},
		{"timeout", pinteresttest.Hang(pinteresttest.PathPins), pinterest.ErrOutcomeUnknown},
		{"429", pinteresttest.RateLimited(pinteresttest.PathPins, "1"), pinterest.ErrRateLimited},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *pinterest.Config) { c.RequestTimeout = 100 * time.Millisecond })
			_, s, _ := e.account(t, "1001", boards(1)...)
			f := tt.fault
			f.Times = -1
			e.srv.Inject(f)
			if _, err := e.c.CreatePin(t.Context(), s, pinReq); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			e.srv.Close()
			wantCount(t, e.srv, http.MethodPost, pinteresttest.PathPins, 1)
			if w := e.waits(); len(w) != 0 {
				t.Errorf("waited %v", w)
			}
		})
	}
}

// dialFailer fails the first n requests to path as a failed connection
// would, without sending them.
type dialFailer struct {
	base http.RoundTripper
	path string

	mu sync.Mutex
	n  int
}

func (d *dialFailer) RoundTrip(req *http.Request) (*http.Response, error) {
	d.mu.Lock()
	fail := req.URL.Path == d.path && d.n > 0
	if fail {
		d.n--
	}
	d.mu.Unlock()
	if fail {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	}
	return d.base.RoundTrip(req)
}

// TestRefreshRetriedOnlyWhenNeverSent: a refresh that could not connect
// is repeated (its refresh token is still unused); one that reached
// Pinterest and failed is not (the token may have rotated).
func TestRefreshRetriedOnlyWhenNeverSent(t *testing.T) {
	t.Run("dial error", func(t *testing.T) {
		df := &dialFailer{path: pinteresttest.PathToken, n: 2}
		e := newEnv(t, func(c *pinterest.Config) { c.HTTPClient = &http.Client{Transport: df} })
		df.base = e.srv.Client().Transport
		_, s, st := e.account(t, "1001")
		e.clk.Advance(31 * 24 * time.Hour)
		if _, err := e.c.UserAccount(t.Context(), s); err != nil {
			t.Fatalf("err = %v", err)
		}
		wantCount(t, e.srv, http.MethodPost, pinteresttest.PathToken, 1)
		if w := e.waits(); !slices.Equal(w, []time.Duration{125 * time.Millisecond, 250 * time.Millisecond}) {
			t.Errorf("waits %v, want [125ms 250ms]", w)
		}
		if _, saved := st.snapshot(); len(saved) != 1 {
			t.Errorf("%d tokens saved, want 1", len(saved))
		}
	})
	t.Run("dial error past the send deadline", func(t *testing.T) {
		df := &dialFailer{path: pinteresttest.PathToken, n: 1}
		e := newEnv(t, func(c *pinterest.Config) { c.HTTPClient = &http.Client{Transport: df} })
		df.base = e.srv.Client().Transport
		_, s, _ := e.account(t, "1001", boards(1)...)
		e.clk.Advance(31 * 24 * time.Hour)
		// Exactly one request timeout (10 s) is left: the first refresh may
		// start, a repeat after any wait would not fit.
		ctx := pinterest.WithSendDeadline(t.Context(), e.clk.Now().Add(10*time.Second), e.clk.Now)
		if _, err := e.c.CreatePin(ctx, s, pinReq); !errors.Is(err, pinterest.ErrUnavailable) || errors.Is(err, pinterest.ErrOutcomeUnknown) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
		wantCount(t, e.srv, "", "", 0)
	})
	t.Run("server error", func(t *testing.T) {
		e := newEnv(t, nil)
		_, s, _ := e.account(t, "1001")
		e.clk.Advance(31 * 24 * time.Hour)
		e.srv.Inject(pinteresttest.ServerError(pinteresttest.PathToken, 503))
		if _, err := e.c.UserAccount(t.Context(), s); !errors.Is(err, pinterest.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
		wantCount(t, e.srv, http.MethodPost, pinteresttest.PathToken, 1)
		wantCount(t, e.srv, http.MethodGet, pinteresttest.PathUserAccount, 0)
	})
}

// transitions records a breaker's changes of state.
type transitions struct {
	mu  sync.Mutex
	all []string
}

func (tr *transitions) record(from, to string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.all = append(tr.all, from+"→"+to)
}

func (tr *transitions) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.all)
}

// TestBreaker steps the circuit breaker through its states on the fake
// clock: 3 failures in a row open it; while open every request fails at
// once with ErrCircuitOpen (an ErrUnavailable) and the stand-in sees
// nothing; after OpenFor one probe goes through: failing, it opens the
// breaker again; succeeding, it closes it.
func TestBreaker(t *testing.T) {
	tr := &transitions{}
	e := newEnv(t, func(c *pinterest.Config) {
		c.Retry.MaxAttempts = 1
		c.Breaker = pinterest.BreakerConfig{Failures: 3, OpenFor: 30 * time.Second, OnStateChange: tr.record}
	})
	_, s, _ := e.account(t, "1001", boards(1)...)
	e.srv.Inject(pinteresttest.Fault{Path: pinteresttest.PathUserAccount, Status: 503, Times: -1})
	get := func() error { _, err := e.c.UserAccount(t.Context(), s); return err }

	for i := range 3 {
		if err := get(); !errors.Is(err, pinterest.ErrUnavailable) || errors.Is(err, pinterest.ErrCircuitOpen) {
			t.Fatalf("failure %d: err = %v, want ErrUnavailable from Pinterest", i, err)
		}
		want := pinterest.BreakerClosed
		if i == 2 {
			want = pinterest.BreakerOpen
		}
		if got := e.c.BreakerState(); got != want {
			t.Fatalf("after failure %d: state %s, want %s", i, got, want)
		}
	}
	seen := e.srv.Count("", "")

	// Open: every request fails at once, unsent.
	for _, call := range []func() error{
		get,
		func() error { _, err := e.c.ListBoards(t.Context(), s); return err },
		func() error { _, err := e.c.CreatePin(t.Context(), s, pinReq); return err },
	} {
		err := call()
		if !errors.Is(err, pinterest.ErrCircuitOpen) || !errors.Is(err, pinterest.ErrUnavailable) || errors.Is(err, pinterest.ErrOutcomeUnknown) {
			t.Fatalf("open: err = %v, want ErrCircuitOpen and ErrUnavailable only", err)
		}
	}
	e.clk.Advance(29 * time.Second)
	if err := get(); !errors.Is(err, pinterest.ErrCircuitOpen) {
		t.Fatalf("29 s later: err = %v, want ErrCircuitOpen", err)
	}
	if n := e.srv.Count("", ""); n != seen {
		t.Fatalf("the stand-in saw %d requests while the breaker was open", n-seen)
	}

	// Half-open: one failing probe opens it again for OpenFor.
	e.clk.Advance(time.Second + time.Nanosecond)
	if got := e.c.BreakerState(); got != pinterest.BreakerHalfOpen {
		t.Fatalf("after OpenFor: state %s, want half-open", got)
	}
	if err := get(); errors.Is(err, pinterest.ErrCircuitOpen) || !errors.Is(err, pinterest.ErrUnavailable) {
		t.Fatalf("probe: err = %v, want Pinterest's failure", err)
	}
	if got := e.c.BreakerState(); got != pinterest.BreakerOpen {
		t.Fatalf("after a failed probe: state %s, want open", got)
	}
	e.clk.Advance(30*time.Second + time.Nanosecond)

	// A succeeding probe closes it.
	e.srv.ClearFaults()
	if err := get(); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if got := e.c.BreakerState(); got != pinterest.BreakerClosed {
		t.Fatalf("after a good probe: state %s, want closed", got)
	}
	want := []string{"closed→open", "open→half-open", "half-open→open", "open→half-open", "half-open→closed"}
	if got := tr.get(); !slices.Equal(got, want) {
		t.Errorf("transitions %v, want %v", got, want)
	}
	if c := e.c.BreakerCounts(); c.Requests != 0 || c.ConsecutiveFailures != 0 {
		t.Errorf("counts after closing %+v, want zero", c)
	}
	if _, err := e.c.CreatePin(t.Context(), s, pinReq); err != nil {
		t.Fatalf("pin once closed: %v", err)
	}
	if c := e.c.BreakerCounts(); c.Requests != 1 || c.Successes != 1 {
		t.Errorf("counts %+v, want one success", c)
	}
}

// TestBreakerIgnores4xxAndAbandoned: Pinterest's 4xx answers (a 429, a
// refused pin) and requests their callers gave up on never open the
// breaker.
func TestBreakerIgnores4xxAndAbandoned(t *testing.T) {
	e := newEnv(t, func(c *pinterest.Config) {
		c.Breaker.Failures = 2
	})
	_, s, _ := e.account(t, "1001", boards(1)...)
	bad := pinReq
	bad.BoardID = "someone-elses"
	for range 3 {
		if _, err := e.c.CreatePin(t.Context(), s, bad); err == nil {
			t.Fatal("pin to another's board succeeded")
		}
		e.srv.Inject(pinteresttest.RateLimited(pinteresttest.PathBoards, "1"))
		if _, err := e.c.ListBoards(t.Context(), s); err != nil {
			t.Fatalf("boards after a 429: %v", err)
		}
	}
	arrived := make(chan struct{}, 1)
	e.srv.Inject(pinteresttest.Fault{Path: pinteresttest.PathUserAccount, Hang: true, Times: -1, Arrived: arrived})
	for range 3 {
		ctx, cancel := context.WithCancel(t.Context())
		go func() { <-arrived; cancel() }()
		if _, err := e.c.UserAccount(ctx, s); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	}
	if got := e.c.BreakerState(); got != pinterest.BreakerClosed {
		t.Fatalf("state %s, want closed; counts %+v", got, e.c.BreakerCounts())
	}
	if c := e.c.BreakerCounts(); c.Failures != 0 || c.Excluded != 3 {
		t.Errorf("counts %+v, want no failure and 3 excluded", c)
	}
}

// TestBreakerRefreshOpen: a token refresh while the breaker is open is
// not sent, and the grant is kept; once OpenFor has passed the refresh is
// the probe, and its success closes the breaker.
func TestBreakerRefreshOpen(t *testing.T) {
	e := newEnv(t, func(c *pinterest.Config) {
		c.Retry.MaxAttempts = 1
		c.Breaker = pinterest.BreakerConfig{Failures: 1, OpenFor: 40 * 24 * time.Hour}
	})
	_, s, st := e.account(t, "1001")
	e.srv.Inject(pinteresttest.ServerError(pinteresttest.PathUserAccount, 500))
	if _, err := e.c.UserAccount(t.Context(), s); !errors.Is(err, pinterest.ErrUnavailable) {
		t.Fatal(err)
	}
	e.clk.Advance(31 * 24 * time.Hour) // the access token has expired
	if _, err := e.c.UserAccount(t.Context(), s); !errors.Is(err, pinterest.ErrCircuitOpen) || s.ReauthRequired() {
		t.Fatalf("err = %v, want ErrCircuitOpen and the grant kept", err)
	}
	wantCount(t, e.srv, http.MethodPost, pinteresttest.PathToken, 0)

	e.clk.Advance(9 * 24 * time.Hour)
	if _, err := e.c.UserAccount(t.Context(), s); err != nil {
		t.Fatalf("after the open period: %v", err)
	}
	if got := e.c.BreakerState(); got != pinterest.BreakerClosed {
		t.Errorf("state %s, want closed", got)
	}
	if _, saved := st.snapshot(); len(saved) != 1 {
		t.Errorf("%d tokens saved, want 1", len(saved))
	}
}

// TestBreakerWallClockSteps: the open period runs on monotonic time. The
// wall clock set back an hour while the breaker is open does not hold it
// open past OpenFor, and set forward a day does not close it before
// OpenFor has passed.
func TestBreakerWallClockSteps(t *testing.T) {
	e := newEnv(t, func(c *pinterest.Config) {
		c.Retry.MaxAttempts = 1
		c.Breaker.Failures = 1
		c.Breaker.OpenFor = 30 * time.Second
	})
	_, s, _ := e.account(t, "1001")
	get := func() error { _, err := e.c.UserAccount(t.Context(), s); return err }
	open := func(when string) {
		t.Helper()
		e.srv.Inject(pinteresttest.Fault{Path: pinteresttest.PathUserAccount, Status: 503})
		if err := get(); !errors.Is(err, pinterest.ErrUnavailable) || errors.Is(err, pinterest.ErrCircuitOpen) {
			t.Fatalf("%s: err = %v, want ErrUnavailable from Pinterest", when, err)
		}
		if got := e.c.BreakerState(); got != pinterest.BreakerOpen {
			t.Fatalf("%s: state %s, want open", when, got)
		}
	}
	// stillOpen checks that the breaker refuses a request unsent, and
	// closes checks that once OpenFor has passed its probe closes it.
	stillOpen := func(when string) {
		t.Helper()
		seen := e.srv.Count("", "")
		if err := get(); !errors.Is(err, pinterest.ErrCircuitOpen) {
			t.Fatalf("%s: err = %v, want ErrCircuitOpen", when, err)
		}
		if n := e.srv.Count("", ""); n != seen {
			t.Fatalf("%s: the stand-in saw %d requests", when, n-seen)
		}
	}
	closes := func(when string) {
		t.Helper()
		if got := e.c.BreakerState(); got != pinterest.BreakerHalfOpen {
			t.Fatalf("%s: state %s, want half-open", when, got)
		}
		if err := get(); err != nil {
			t.Fatalf("%s: probe: %v", when, err)
		}
		if got := e.c.BreakerState(); got != pinterest.BreakerClosed {
			t.Fatalf("%s: state %s, want closed", when, got)
		}
	}

	open("first failure")
	e.clk.Step(-time.Hour)
	e.clk.Advance(29 * time.Second)
	stillOpen("wall clock set back an hour, 29 s later")
	e.clk.Advance(time.Second)
	closes("wall clock set back an hour, 30 s later")

	open("second failure")
	e.clk.Step(24 * time.Hour)
	stillOpen("wall clock set forward a day, at once")
	e.clk.Advance(29 * time.Second)
	stillOpen("wall clock set forward a day, 29 s later")
	e.clk.Advance(time.Second)
	closes("wall clock set forward a day, 30 s later")
}
