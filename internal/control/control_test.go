package control

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
	"github.com/pinbot/pinbot/internal/backup"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// t0 is the fixture's start.
var t0 = time.Date(2026, time.March, 2, 9, 0, 0, 0, time.UTC)

// payload is a queued pin as the bot stores it: the second of two
// pictures of message 3 in channel 2 of server 1, queued by user 4.
const payload = `{"g":"1","c":"2","m":"3","i":2,"n":2,"u":"4","b":"b1","bn":"Cats"}`

// fixture is a Source over an engine of 5 pins per hour on a manual
// clock, which ran under 5 pins per 2 hours before, and a token store.
type fixture struct {
	clock *actors.ManualClock
	src   Source
	jobs  chan actors.Job // the jobs the engine starts
}

// newFixture stores, under the earlier rule: "a" 3 pins at t0. Then,
// under the current one, from t0+90m: "b" 1 pin and a hold of 10
// minutes; "q" 5 jobs started (one of them done, pinned) and 2 waiting.
// "a" is linked by u2 then u1 as a_pins, "q" by u1 as q_pins.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{clock: actors.NewManualClock(t0), jobs: make(chan actors.Job, 16)}
	store := persistencetest.NewMemStore(f.clock.Now)
	cfg := actors.DefaultConfig()
	cfg.Clock, cfg.Wall, cfg.Recover = f.clock, f.clock.Now, false
	cfg.Limit, cfg.Window = 5, 2*time.Hour
	eng, err := actors.New(cfg, store, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	pin(t, eng, "a", 3)
	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(90 * time.Minute)
	cfg.Window = time.Hour
	cfg.OnJob = func(j actors.Job) { f.jobs <- j }
	if eng, err = actors.New(cfg, store, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	pin(t, eng, "b", 1)
	if _, err := eng.Hold(ctx, "b", eng.Now().Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	q, err := eng.Enqueue(ctx, "q", slices.Repeat([][]byte{[]byte(payload)}, 7))
	if err != nil || len(q.Jobs) != 7 {
		t.Fatalf("Enqueue: %+v, %v", q, err)
	}
	first := <-f.jobs
	for range 4 {
		<-f.jobs
	}
	if _, err := eng.Finish(ctx, first, actors.Outcome{Done: true, At: eng.Now(),
		Result: []byte(`{"o":"pinned","p":"https://www.pinterest.com/pin/9/"}`)}); err != nil {
		t.Fatal(err)
	}

	ls, err := badgerlinks.Open("", badgerlinks.Options{InMemory: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ls.Close() })
	for _, l := range []struct{ user, acct string }{{"u2", "a"}, {"u1", "a"}, {"u1", "q"}} {
		tok := &oauth2.Token{AccessToken: "at", RefreshToken: "rt"}
		if err := ls.Link(ctx, l.user, links.Account{ID: l.acct, Username: l.acct + "_pins"}, tok); err != nil {
			t.Fatal(err)
		}
	}
	f.src = Source{Engine: eng, Store: store, Links: ls}
	return f
}

// pin makes account use n slots, committed now.
func pin(t *testing.T, eng *actors.Engine, account string, n int) {
	t.Helper()
	ctx := context.Background()
	g, err := eng.Reserve(ctx, account, n)
	if err != nil || g.Granted != n {
		t.Fatalf("Reserve(%s, %d): %+v, %v", account, n, g, err)
	}
	for _, r := range g.Reservations() {
		if _, err := eng.Commit(ctx, r, eng.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

// serve serves src's listings on a control socket, as the running
// pinbot does, and returns its path.
func serve(t *testing.T, src Source) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pinbot.sock")
	ln, err := backup.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	h := Handler(src, zerolog.Nop())
	mux := http.NewServeMux()
	mux.Handle(AccountsPath, h)
	mux.Handle(JobsPath, h)
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return path
}

// sameJSON fails the test unless got and want encode alike.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != string(w) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

// TestReadAccounts: every stored account, in order, with the slots /pin
// may take (an earlier rule's blocked ones and a hold by Pinterest
// counted), the earlier rule that blocks, and the names; the same over
// the control socket.
func TestReadAccounts(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	list, err := ReadAccounts(ctx, f.src)
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(90 * time.Minute)
	if !list.At.Equal(now) || list.Rule != (Rule{Limit: 5, Window: time.Hour}) {
		t.Errorf("listing at %v under %+v", list.At, list.Rule)
	}
	// The earlier rule holds until the change plus its window and a lease.
	if len(list.Earlier) != 1 || list.Earlier[0].Limit != 5 || list.Earlier[0].Window != 2*time.Hour ||
		!list.Earlier[0].Until.Equal(now.Add(2*time.Hour+5*time.Minute)) {
		t.Errorf("earlier rules %+v", list.Earlier)
	}
	type row struct {
		id, user   string
		by         []string
		used, free int
		blocked    int
		queued     int
		held       bool
		next       time.Duration // from now
	}
	want := []row{
		{id: "a", user: "a_pins", by: []string{"u2", "u1"}, free: 2, blocked: 3},
		{id: "b", used: 1, next: 10 * time.Minute, held: true},
		// The earlier rule counts the pins made since for 2 hours too.
		{id: "q", user: "q_pins", by: []string{"u1"}, used: 5, queued: 2, next: 2 * time.Hour},
	}
	if len(list.Accounts) != len(want) {
		t.Fatalf("listed %+v", list.Accounts)
	}
	for i, w := range want {
		a := list.Accounts[i]
		if a.ID != w.id || a.Username != w.user || !slices.Equal(a.LinkedBy, w.by) || a.Used != w.used || a.Free != w.free ||
			a.Blocked != w.blocked || a.Queued != w.queued || a.Held != w.held || !a.NextFree.Equal(now.Add(w.next)) || a.Error != "" {
			t.Errorf("account %d = %+v, want %+v", i, a, w)
		}
	}

	socket := serve(t, f.src)
	fetched, err := FetchAccounts(ctx, socket)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "over the socket", fetched, list)

	if _, err := FetchAccounts(ctx, filepath.Join(t.TempDir(), "none.sock")); !errors.Is(err, backup.ErrNotServing) {
		t.Errorf("FetchAccounts without a pinbot: %v, want ErrNotServing", err)
	}

	// Without the token store, ids alone, and why.
	src := f.src
	src.Links, src.NoNames = nil, "no key"
	if list, err = ReadAccounts(ctx, src); err != nil || list.NoNames != "no key" || list.Accounts[0].Username != "" {
		t.Errorf("without names: %+v, %v", list, err)
	}
}

// TestReadJobs: an account's running jobs, its waiting ones with the
// instant each starts, and the done ones with their results, found by
// id or by username; the same over the control socket; an account
// neither stored nor linked is refused, the same way in both.
func TestReadJobs(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	jobs, err := ReadJobs(ctx, f.src, "@Q_PINS")
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(90 * time.Minute)
	if a := jobs.Account; a.ID != "q" || a.Username != "q_pins" || a.Used != 5 || a.Free != 0 || a.Queued != 2 {
		t.Errorf("account %+v", a)
	}
	var states []string
	for _, j := range jobs.Jobs {
		states = append(states, j.State)
		if j.Pin == nil || *j.Pin != (Pin{MessageURL: "https://discord.com/channels/1/2/3", Image: 2, Images: 2, User: "4", Board: "b1", BoardName: "Cats"}) {
			t.Errorf("job %d pins %+v", j.ID, j.Pin)
		}
	}
	if want := []string{Running, Running, Running, Running, Waiting, Waiting, Done}; !slices.Equal(states, want) {
		t.Fatalf("states %v, want %v", states, want)
	}
	// The first waits for the done job's pin to leave the earlier rule's
	// window; the second for a running one's, which counts from the end
	// of its lease.
	for i, due := range []time.Time{now.Add(2 * time.Hour), now.Add(2*time.Hour + 5*time.Minute)} {
		if j := jobs.Jobs[4+i]; !j.Due.Equal(due) {
			t.Errorf("waiting job %d starts %v, want %v", j.ID, j.Due, due)
		}
	}
	if r := jobs.Jobs[6].Result; r == nil || *r != (Result{Outcome: "pinned", PinURL: "https://www.pinterest.com/pin/9/"}) {
		t.Errorf("done job's result %+v", r)
	}
	if byID, err := ReadJobs(ctx, f.src, "q"); err != nil {
		t.Fatal(err)
	} else {
		sameJSON(t, "by id", byID, jobs)
	}

	socket := serve(t, f.src)
	fetched, err := FetchJobs(ctx, socket, "@q_pins")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "over the socket", fetched, jobs)

	// "b" has pins but no link; "zed" neither.
	if j, err := ReadJobs(ctx, f.src, "b"); err != nil || j.Account.Used != 1 || len(j.Jobs) != 0 {
		t.Errorf("jobs of b: %+v, %v", j, err)
	}
	for _, ref := range []string{"zed", "@nobody", "bad\x00id"} {
		_, rerr := ReadJobs(ctx, f.src, ref)
		_, ferr := FetchJobs(ctx, socket, ref)
		if !errors.Is(rerr, ErrUnknownAccount) || !errors.Is(ferr, ErrUnknownAccount) || rerr.Error() != ferr.Error() {
			t.Errorf("%q: read %v, fetched %v; want the same ErrUnknownAccount", ref, rerr, ferr)
		}
	}
	if _, err := FetchJobs(ctx, socket, ""); err == nil || err.Error() != "no account given" {
		t.Errorf("FetchJobs without an account: %v", err)
	}
}
