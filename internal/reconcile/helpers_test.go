package reconcile_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/logtest"
	"github.com/pinbot/pinbot/internal/reconcile"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// t0 is the start of every test's clock.
var t0 = time.Date(2030, time.March, 4, 9, 0, 0, 0, time.UTC)

// The rule of the tests: 5 pins an hour.
const (
	testLimit  = 5
	testWindow = time.Hour
)

// env is an engine, a token store, the Pinterest stand-in and its client
// on one fake clock, and a reconciler over them.
type env struct {
	t   *testing.T
	ctx context.Context
	// clk is the one clock of the engine, Pinterest's stand-in and its
	// client.
	clk   *actors.ManualClock
	srv   *pinteresttest.Server
	mem   *persistencetest.MemStore
	fault *persistencetest.FaultStore // the engine's store, over mem
	eng   *actors.Engine
	links links.Store
	pc    *pinterest.Client
	logs  *logtest.Buffer
	obs   *recorder
	rec   *reconcile.Reconciler
	rcfg  reconcile.Config
	// sessions are pinbot's own Sessions of the accounts, as the bot's.
	sessions map[string]*pinterest.Session
}

func newEnv(t *testing.T, countAll bool, mod ...func(*reconcile.Config)) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), clk: actors.NewManualClock(t0), logs: &logtest.Buffer{}, obs: newRecorder(), sessions: map[string]*pinterest.Session{}}
	e.srv = pinteresttest.NewServer(pinteresttest.WithClock(e.now))
	t.Cleanup(e.srv.Close)
	e.mem = persistencetest.NewMemStore(e.clk.Now)
	e.fault = persistencetest.NewFaultStore(e.mem)
	e.startEngine()
	st, err := badgerlinks.Open("", badgerlinks.Options{InMemory: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e.links = st
	e.pc, err = pinterest.New(pinterest.Config{
		ClientID:     e.srv.ClientID(),
		ClientSecret: e.srv.ClientSecret(),
		RedirectURL:  "https://pinbot.example/oauth/callback",
		APIBase:      e.srv.APIBase(),
		AuthURL:      e.srv.AuthURL(),
		HTTPClient:   e.srv.InProcess(),
		Now:          e.now,
		Breaker:      pinterest.BreakerConfig{Elapsed: func() time.Duration { return e.now().Sub(t0) }},
		Retry: pinterest.RetryConfig{
			// A wait passes on the fake clock, at once.
			Sleep: func(ctx context.Context, d time.Duration) error { e.clk.Advance(d); return ctx.Err() },
			Rand:  func(n int64) int64 { return n / 2 },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.rcfg = reconcile.Config{
		Engine: e.eng, Links: e.links, Pinterest: e.pc, CountAll: countAll,
		Observer: e.obs, Log: zerolog.New(e.logs).Level(zerolog.DebugLevel),
	}
	for _, m := range mod {
		m(&e.rcfg)
	}
	e.newReconciler()
	return e
}

// now reads the env's clock.
func (e *env) now() time.Time { return time.UnixMilli(e.clk.Now()).UTC() }

// startEngine starts an engine over the env's store.
func (e *env) startEngine() {
	e.t.Helper()
	cfg := actors.DefaultConfig()
	cfg.Limit, cfg.Window = testLimit, testWindow
	cfg.Clock = e.clk
	cfg.Wall = e.clk.Now
	cfg.Recover = false
	eng, err := actors.New(cfg, e.fault, zerolog.Nop())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = eng.Close(context.Background()) })
	e.eng = eng
}

// newReconciler makes a reconciler over the env's parts, with nothing
// in memory: as after a restart.
func (e *env) newReconciler() {
	e.t.Helper()
	e.rcfg.Engine = e.eng
	r, err := reconcile.New(e.rcfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.rec = r
}

// restart closes the engine and starts another over the same store, and
// a new reconciler: a restart of pinbot.
func (e *env) restart() {
	e.t.Helper()
	if err := e.eng.Close(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.startEngine()
	e.newReconciler()
}

// account adds a stand-in account with board b1, linked by user u1 in
// the token store.
func (e *env) account(id string) {
	e.t.Helper()
	cred := e.srv.AddAccount(id, "user"+id, pinteresttest.Board{ID: "b1", Name: "Board"})
	if err := e.links.Link(e.ctx, "u-"+id, links.Account{ID: id, Username: "user" + id}, cred.Token()); err != nil {
		e.t.Fatal(err)
	}
	s, err := pinterest.NewSession(cred.Token(), links.Saver(e.links, id))
	if err != nil {
		e.t.Fatal(err)
	}
	e.sessions[id] = s
}

// pin makes n pins through pinbot's path: a reservation, POST /pins with
// pinbot's mark, a commit.
func (e *env) pin(account string, n int) {
	e.t.Helper()
	g, err := e.eng.Reserve(e.ctx, account, n)
	if err != nil || g.Granted != n {
		e.t.Fatalf("Reserve(%s, %d) = %+v, %v", account, n, g, err)
	}
	for _, r := range g.Reservations() {
		_, err := e.pc.CreatePin(e.ctx, e.sessions[account], pinterest.PinRequest{
			BoardID: "b1", ImageURL: "https://img.example/a.png",
			Link: "https://discord.com/channels/1/2/3", Mark: "r" + strconv.FormatUint(r.ID, 10),
		})
		if err != nil {
			e.t.Fatalf("CreatePin: %v", err)
		}
		if _, err := e.eng.Commit(e.ctx, r, e.eng.Now()); err != nil {
			e.t.Fatal(err)
		}
	}
}

// direct makes n pins on the account as its owner would in Pinterest's
// app, ago before now.
func (e *env) direct(account string, n int, ago time.Duration) []pinteresttest.Pin {
	out := make([]pinteresttest.Pin, n)
	for i := range out {
		out[i] = e.srv.CreateDirect(pinteresttest.Pin{AccountID: account, BoardID: "b1", CreatedAt: e.now().Add(-ago)})
	}
	return out
}

// status returns the account's standing.
func (e *env) status(account string) actors.Status {
	e.t.Helper()
	st, err := e.eng.Status(e.ctx, account)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// round runs a round and checks how it ended.
func (e *env) round(wantEnd string) reconcile.Report {
	e.t.Helper()
	rep := e.rec.Round(e.ctx)
	if rep.End != wantEnd {
		e.t.Fatalf("round = %+v, want end %s\nlog:\n%s", rep, wantEnd, e.logs.String())
	}
	return rep
}

// drift returns the account's drift.
func (e *env) drift(account string) reconcile.Drift {
	e.t.Helper()
	d, ok := e.rec.Drift(account)
	if !ok {
		e.t.Fatalf("no drift kept for %s", account)
	}
	return d
}

// checkLedger checks that Pinterest's ledger never held more than the
// limit in a window: all the account's pins, or pinbot's own.
func (e *env) checkLedger(account string, all bool) {
	e.t.Helper()
	n := e.srv.MaxSentInWindow(account, testWindow)
	if all {
		n = e.srv.MaxInWindow(account, testWindow)
	}
	if n > testLimit {
		e.t.Fatalf("Pinterest's ledger of %s held %d pins in a window (all: %v), more than %d", account, n, all, testLimit)
	}
}

// logLines returns the log lines that contain every one of needles.
func (e *env) logLines(needles ...string) []string {
	var out []string
	for _, l := range strings.Split(e.logs.String(), "\n") {
		ok := l != ""
		for _, n := range needles {
			ok = ok && strings.Contains(l, n)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// recorder is a reconcile.Observer that keeps what it learns.
type recorder struct {
	mu          sync.Mutex
	results     map[string]int
	ends        []string
	observed    int
	unexplained int
	rounds      chan string
}

func newRecorder() *recorder {
	return &recorder{results: map[string]int{}, rounds: make(chan string, 16)}
}

func (r *recorder) Reconciled(result string) { r.mu.Lock(); r.results[result]++; r.mu.Unlock() }
func (r *recorder) Observed(pins int)        { r.mu.Lock(); r.observed += pins; r.mu.Unlock() }
func (r *recorder) Unexplained()             { r.mu.Lock(); r.unexplained++; r.mu.Unlock() }
func (r *recorder) Round(end string) {
	r.mu.Lock()
	r.ends = append(r.ends, end)
	r.mu.Unlock()
	select {
	case r.rounds <- end:
	default: // nobody waits for it
	}
}

func (r *recorder) counts() (results map[string]int, observed, unexplained int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.results))
	for k, v := range r.results {
		out[k] = v
	}
	return out, r.observed, r.unexplained
}

// failingMarks is a token store whose MarkObserved fails while fail is
// set, as after a crash between the engine's write and the token
// store's.
type failingMarks struct {
	links.Store
	mu   sync.Mutex
	fail bool
}

func (f *failingMarks) set(fail bool) { f.mu.Lock(); f.fail = fail; f.mu.Unlock() }

func (f *failingMarks) MarkObserved(ctx context.Context, account string, pins []links.ObservedPin, now time.Time) error {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail {
		return errors.New("links: write: input/output error")
	}
	return f.Store.MarkObserved(ctx, account, pins, now)
}
