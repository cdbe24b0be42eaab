package rebuild_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/backup"
	"github.com/pinbot/pinbot/internal/logtest"
	"github.com/pinbot/pinbot/internal/rebuild"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/badgerstore"
)

// The rule of the tests: pinbot's default window, a small limit.
const (
	testLimit  = 10
	testWindow = 12 * time.Hour
)

// testKey is the token store's key.
var testKey = bytes.Repeat([]byte{0x5a}, 32)

// loaders restore pinbot's stores, as app.BackupLoaders does.
var loaders = backup.Loaders{
	Engine: func(dir string, r io.Reader, log zerolog.Logger) error {
		return badgerstore.Restore(dir, r, badgerstore.Options{Durable: true}, log)
	},
	Links: func(dir string, r io.Reader, key []byte, log zerolog.Logger) error {
		return badgerlinks.Restore(dir, r, badgerlinks.Options{EncryptionKey: key}, log)
	},
	OpenEngine: func(dir string, log zerolog.Logger) (persistence.Store, error) {
		return badgerstore.Open(dir, badgerstore.Options{Durable: true}, log)
	},
}

// world is a data directory's stores and engine, the Pinterest stand-in
// and pinbot's client of it, on one fake clock.
type world struct {
	t   *testing.T
	ctx context.Context
	clk *actors.ManualClock
	t0  time.Time
	srv *pinteresttest.Server
	pc  *pinterest.Client

	store  *badgerstore.Store
	links  *badgerlinks.Store
	eng    *actors.Engine
	closed bool
	// sessions are the bot's own Sessions of the accounts, on the open
	// token store.
	sessions map[string]*pinterest.Session
	logs     *logtest.Buffer
	marks    int
}

func newWorld(t *testing.T) *world {
	t.Helper()
	// Badger expires keys by the wall clock: the engine's time starts at
	// the wall clock's and runs ahead of it.
	t0 := time.Now().Truncate(time.Minute)
	w := &world{t: t, ctx: context.Background(), clk: actors.NewManualClock(t0), t0: t0, logs: &logtest.Buffer{}}
	w.srv = pinteresttest.NewServer(pinteresttest.WithClock(w.now))
	t.Cleanup(w.srv.Close)
	var err error
	w.pc, err = pinterest.New(pinterest.Config{
		ClientID:     w.srv.ClientID(),
		ClientSecret: w.srv.ClientSecret(),
		RedirectURL:  "https://pinbot.example/oauth/callback",
		APIBase:      w.srv.APIBase(),
		AuthURL:      w.srv.AuthURL(),
		HTTPClient:   w.srv.InProcess(),
		Now:          w.now,
		Breaker:      pinterest.BreakerConfig{Elapsed: func() time.Duration { return w.now().Sub(t0) }},
		Retry: pinterest.RetryConfig{
			// A wait passes on the fake clock, at once.
			Sleep: func(ctx context.Context, d time.Duration) error { w.clk.Advance(d); return ctx.Err() },
			Rand:  func(n int64) int64 { return n / 2 },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) now() time.Time { return time.UnixMilli(w.clk.Now()) }

// engineConfig is the configuration of every engine of the tests.
func (w *world) engineConfig() actors.Config {
	cfg := actors.DefaultConfig()
	cfg.Limit, cfg.Window = testLimit, testWindow
	cfg.Clock = w.clk
	cfg.Recover = false
	cfg.CheckpointEvery = 0
	return cfg
}

// open opens the stores of dir and starts an engine on them.
func (w *world) open(dir string) {
	w.t.Helper()
	var err error
	if w.store, err = badgerstore.Open(filepath.Join(dir, "engine"), badgerstore.Options{MemTableSize: 1 << 20, Durable: true}, zerolog.Nop()); err != nil {
		w.t.Fatal(err)
	}
	if w.links, err = badgerlinks.Open(filepath.Join(dir, "links"), badgerlinks.Options{EncryptionKey: testKey}, zerolog.Nop()); err != nil {
		w.t.Fatal(err)
	}
	if w.eng, err = actors.New(w.engineConfig(), w.store, zerolog.Nop()); err != nil {
		w.t.Fatal(err)
	}
	w.closed = false
	w.sessions = map[string]*pinterest.Session{}
	w.t.Cleanup(w.close)
}

// close stops the engine and closes the stores: pinbot stops.
func (w *world) close() {
	if w.closed {
		return
	}
	w.closed = true
	if err := w.eng.Close(w.ctx); err != nil {
		w.t.Errorf("closing the engine: %v", err)
	}
	if err := w.links.Close(); err != nil {
		w.t.Errorf("closing the token store: %v", err)
	}
	if err := w.store.Close(); err != nil {
		w.t.Errorf("closing the engine store: %v", err)
	}
}

// link adds a stand-in account id with board b1 and links it, for the
// Discord user u-id.
func (w *world) link(id string) {
	w.t.Helper()
	cred := w.srv.AddAccount(id, "user"+id, pinteresttest.Board{ID: "b1", Name: "Board"})
	if err := w.links.Link(w.ctx, "u-"+id, links.Account{ID: id, Username: "user" + id}, cred.Token()); err != nil {
		w.t.Fatal(err)
	}
}

// session returns the bot's Session of account, from the open token
// store.
func (w *world) session(account string) *pinterest.Session {
	w.t.Helper()
	if s, ok := w.sessions[account]; ok {
		return s
	}
	tok, err := w.links.Token(w.ctx, account)
	if err != nil {
		w.t.Fatal(err)
	}
	s, err := pinterest.NewSession(tok, links.Saver(w.links, account))
	if err != nil {
		w.t.Fatal(err)
	}
	w.sessions[account] = s
	return s
}

// pin makes up to n pins on account through pinbot's path, one slot at
// a time: a reservation, POST /pins with a mark, a commit. It returns
// how many the engine granted.
func (w *world) pin(account string, n int) int {
	w.t.Helper()
	made := 0
	for ; made < n; made++ {
		g, err := w.eng.Reserve(w.ctx, account, 1)
		if err != nil {
			w.t.Fatalf("Reserve(%s): %v", account, err)
		}
		if g.Granted == 0 {
			break
		}
		w.marks++
		r := g.Reservations()[0]
		if _, err := w.pc.CreatePin(w.ctx, w.session(account), pinterest.PinRequest{
			BoardID: "b1", ImageURL: "https://img.example/a.png",
			Link: "https://discord.com/channels/1/2/3", Mark: fmt.Sprintf("m%d", w.marks),
		}); err != nil {
			w.t.Fatalf("CreatePin(%s): %v", account, err)
		}
		if _, err := w.eng.Commit(w.ctx, r, w.eng.Now()); err != nil {
			w.t.Fatal(err)
		}
	}
	return made
}

// backup takes a backup of the open stores.
func (w *world) backup() []byte {
	w.t.Helper()
	var buf bytes.Buffer
	if _, err := backup.Take(&buf, backup.Stores{Engine: w.store, Links: w.links, Key: testKey}, true); err != nil {
		w.t.Fatalf("Take: %v", err)
	}
	return buf.Bytes()
}

// restore restores file into a new data directory at the clock's time,
// as `pinbot restore` does, and returns the directory.
func (w *world) restore(file []byte) string {
	w.t.Helper()
	dir := w.t.TempDir()
	res, err := backup.Restore(bytes.NewReader(file), backup.Target{
		EngineDir: filepath.Join(dir, "engine"), LinksDir: filepath.Join(dir, "links"),
		Key: testKey, Engine: w.engineConfig(), Loaders: loaders, Log: zerolog.Nop(),
	})
	if err != nil {
		w.t.Fatalf("Restore: %v", err)
	}
	if want := w.now().Add(actors.DefaultConfig().Lease + testWindow); !res.Restored.HoldUntil.Equal(want) {
		w.t.Fatalf("held until %v, want %v", res.Restored.HoldUntil, want)
	}
	return dir
}

// rebuilder returns a Rebuilder over the open world whose rounds' reports
// go to the channel returned.
func (w *world) rebuilder(mod ...func(*rebuild.Config)) (*rebuild.Rebuilder, <-chan rebuild.Report) {
	w.t.Helper()
	rounds := make(chan rebuild.Report, 16)
	cfg := rebuild.Config{
		Engine: w.eng, Links: w.links, Pinterest: w.pc,
		OnRound: func(r rebuild.Report) { rounds <- r },
		Log:     zerolog.New(w.logs).Level(zerolog.DebugLevel),
	}
	for _, m := range mod {
		m(&cfg)
	}
	r, err := rebuild.New(cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	return r, rounds
}

// run runs r until the test ends.
func (w *world) run(r *rebuild.Rebuilder) {
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	w.t.Cleanup(func() { cancel(); <-done })
}

// round waits for the report of the next round.
func (w *world) round(rounds <-chan rebuild.Report) rebuild.Report {
	w.t.Helper()
	select {
	case r := <-rounds:
		return r
	case <-time.After(30 * time.Second):
		w.t.Fatalf("no rebuild round; log:\n%s", w.logs.String())
		return rebuild.Report{}
	}
}

// status returns account's standing.
func (w *world) status(account string) actors.Status {
	w.t.Helper()
	st, err := w.eng.Status(w.ctx, account)
	if err != nil {
		w.t.Fatal(err)
	}
	return st
}

// inWindow returns how many of account's pins Pinterest counts at now.
func (w *world) inWindow(account string) int {
	n := 0
	for _, p := range w.srv.PinsFor(account) {
		if p.CreatedAt.After(w.now().Add(-testWindow)) && !p.CreatedAt.After(w.now()) {
			n++
		}
	}
	return n
}

// checkLedger checks that Pinterest's ledger of pinbot's pins never held
// more than the limit in a window.
func (w *world) checkLedger(accounts ...string) {
	w.t.Helper()
	for _, a := range accounts {
		if n := w.srv.MaxSentInWindow(a, testWindow); n > testLimit {
			w.t.Fatalf("Pinterest's ledger of %s held %d pins in a window, more than %d", a, n, testLimit)
		}
	}
}

// logLines returns the log lines that contain every one of needles.
func (w *world) logLines(needles ...string) []string {
	var out []string
	for _, l := range strings.Split(w.logs.String(), "\n") {
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
