package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/bot/web"
	"github.com/pinbot/pinbot/internal/app"
)

// listingStart is when the listings' data directory is filled.
var listingStart = time.Date(2026, time.March, 2, 9, 0, 0, 0, time.UTC)

// queuedPayload is a queued pin as the bot stores it: the first of two
// pictures of message 3 in channel 2 of server 1, queued by user 801 for
// the board Cats.
const queuedPayload = `{"g":"1","c":"2","m":"3","i":1,"n":2,"u":"801","b":"b1","bn":"Cats"}`

// listingData fills a data directory, on clock, under 3 pins per 2
// hours: account 111 makes 2 pins; account 222 runs a queued pin
// (pinned), makes 2 pins and queues 2 more. 111 is linked by users 801
// and 802 as alice_art, and the key is DIR/sandbox.key. The clock is
// then 90 minutes later.
func listingData(t *testing.T, clock *actors.ManualClock) (dir string, key []byte) {
	t.Helper()
	ctx := context.Background()
	dir = t.TempDir()
	l := layout{dir: dir}
	key = bytes.Repeat([]byte{0x42}, 32)
	if err := os.WriteFile(l.sandboxKey(), key, 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := openStore(l.engine(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan actors.Job, 1)
	cfg := actors.DefaultConfig()
	cfg.Clock, cfg.Recover, cfg.Limit, cfg.Window = clock, false, 3, 2*time.Hour
	cfg.OnJob = func(j actors.Job) { started <- j }
	eng, err := actors.New(cfg, store, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	reserve := func(account string, n int) {
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
	reserve("111", 2)
	if _, err := eng.Enqueue(ctx, "222", [][]byte{[]byte(queuedPayload)}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Finish(ctx, <-started, actors.Outcome{Done: true, At: eng.Now(),
		Result: []byte(`{"o":"pinned","p":"https://www.pinterest.com/pin/9/"}`)}); err != nil {
		t.Fatal(err)
	}
	reserve("222", 2)
	if q, err := eng.Enqueue(ctx, "222", [][]byte{[]byte(queuedPayload), []byte(queuedPayload)}); err != nil || len(q.Jobs) != 2 {
		t.Fatalf("Enqueue: %+v, %v", q, err)
	}
	if err := shutdown(eng, store); err != nil {
		t.Fatal(err)
	}
	ls, err := badgerlinks.Open(l.links(), badgerlinks.Options{EncryptionKey: key}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"801", "802"} {
		if err := ls.Link(ctx, u, links.Account{ID: "111", Username: "alice_art"}, &oauth2.Token{AccessToken: "at", RefreshToken: "rt"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ls.Close(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(90 * time.Minute)
	return dir, key
}

// runningBot runs the program on dir as the bot command does, with its
// control socket, between stand-ins of Discord and Pinterest, under 3
// pins per hour on clock, until the returned function stops it.
func runningBot(t *testing.T, dir string, key []byte, clock actors.Clock) (stop func()) {
	t.Helper()
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	t.Cleanup(dc.Close)
	t.Cleanup(ps.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := layout{dir: dir}
	ecfg := actors.DefaultConfig()
	ecfg.Clock, ecfg.Limit, ecfg.Window = clock, 3, time.Hour
	a, err := app.Build(app.Config{
		EngineDir: l.engine(), LinksDir: l.links(), EncryptionKey: key, Engine: &ecfg,
		Pinterest: pinterest.Config{
			ClientID: ps.ClientID(), ClientSecret: ps.ClientSecret(),
			RedirectURL: "http://" + ln.Addr().String() + web.CallbackPath,
			APIBase:     ps.APIBase(), AuthURL: ps.AuthURL(),
		},
		Bot:           bot.Config{Token: dc.Token(), APIURL: dc.APIURL(), GatewayURL: dc.GatewayURL(), Shards: 1},
		Listener:      ln,
		ControlSocket: l.control(),
		Log:           zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var stopped bool
	stop = func() {
		if !stopped {
			stopped = true
			if err := a.Close(context.Background()); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(stop)
	return stop
}

// listings runs every listing of dir: accounts as a table and as JSON,
// and the queue of 222 and of @alice_art as text and as JSON. It
// returns what each wrote, in that order.
func listings(t *testing.T, dir string, clock actors.Clock) []string {
	t.Helper()
	var outs []string
	for _, run := range []struct {
		json bool
		ref  string // "": accounts
	}{{}, {json: true}, {ref: "222"}, {ref: "222", json: true}, {ref: "@alice_art"}, {ref: "@ALICE_ART", json: true}} {
		var out, notes bytes.Buffer
		cfg := listingConfig{dir: layout{dir: dir}, keyFile: &setting{opt: &keyFileOption}, clock: clock, json: run.json,
			out: &out, notes: &notes, log: zerolog.Nop()}
		var err error
		if run.ref == "" {
			err = runAccounts(context.Background(), cfg)
		} else {
			err = runJobs(context.Background(), cfg, run.ref)
		}
		if err != nil || notes.Len() > 0 {
			t.Fatalf("listing %+v: %v; notes %q", run, err, notes.String())
		}
		outs = append(outs, out.String())
	}
	return outs
}

// TestListingsSameOnlineAndOffline: accounts and jobs on a data
// directory the bot runs on ask it over the control socket, and write
// exactly what they write from the stores once it has stopped: the
// counts, the slots an earlier rule holds and why, the usernames and who
// linked them, the queue with its start times and results.
func TestListingsSameOnlineAndOffline(t *testing.T) {
	clock := actors.NewManualClock(listingStart)
	dir, key := listingData(t, clock)
	stop := runningBot(t, dir, key, clock)
	// The bot holds the stores: only the socket can answer.
	if _, err := openStore(layout{dir: dir}.engine(), zerolog.Nop()); err == nil {
		t.Fatal("the engine store opens while the bot runs")
	}
	online := listings(t, dir, clock)
	stop()
	offline := listings(t, dir, clock)
	for i := range online {
		if online[i] != offline[i] {
			t.Errorf("listing %d differs:\nonline:\n%s\noffline:\n%s", i, online[i], offline[i])
		}
	}

	at := func(d time.Duration) string { return listingStart.Add(d).Local().Format(timeLayout) }
	exact := func(d time.Duration) string { return listingStart.Add(d).Local().Format(exactLayout) }
	for _, w := range []string{
		"ACCOUNT   USERNAME     1-HOUR PINS   PENDING   FREE                            QUEUED   NEXT SLOT FREE",
		"111       @alice_art   0/3           0         1 (2 held by an earlier rule)   0        now",
		"222       -            0/3           0         0 (3 held by an earlier rule)   2        in 30m, at " + at(2*time.Hour),
		"Held: an earlier rule still counts the pins made under it, as /pin does:",
		"  3 pins per 2 hours until " + at(3*time.Hour+35*time.Minute) + " (in 2h 5m): the limit and window before they were changed",
	} {
		if !strings.Contains(online[0], w+"\n") {
			t.Errorf("accounts lacks the line %q:\n%s", w, online[0])
		}
	}
	for _, w := range []string{
		"Account:         222\n", "Free:            0 (3 held by an earlier rule)\n", "Queued:          2\n",
		"done      finished " + exact(0) + " (1h 30m ago)", "pinned https://www.pinterest.com/pin/9/",
		"waiting   starts " + exact(2*time.Hour) + " (in 30m)",
		"https://discord.com/channels/1/2/3   1 of 2   801", "Cats",
	} {
		if !strings.Contains(online[2], w) {
			t.Errorf("jobs 222 lacks %q:\n%s", w, online[2])
		}
	}
	for _, w := range []string{"Account:         111\n", "Username:        @alice_art\n", "Linked by:       Discord users 801, 802\n",
		"Nothing is queued, and no results of queued pins are kept.\n"} {
		if !strings.Contains(online[4], w) {
			t.Errorf("jobs @alice_art lacks %q:\n%s", w, online[4])
		}
	}
}

// TestAccountsHeldByEarlierRule: after the limit was raised, or after a
// restore, accounts shows the slots /pin may take, not those the current
// limit alone leaves, and says which rule holds the others and until
// when; so does jobs.
func TestAccountsHeldByEarlierRule(t *testing.T) {
	t.Parallel()
	raised := t.TempDir()
	pinbot(t, "pin alice 3\n", nil, "demo", "--data-dir", raised, "--pin-limit", "5").wantCode(t, "demo", exitOK)
	pinbot(t, "status alice\n", nil, "demo", "--data-dir", raised, "--pin-limit", "10").wantCode(t, "demo", exitOK)

	restored := filepath.Join(t.TempDir(), "restored")
	file := filepath.Join(t.TempDir(), "backup")
	pinbot(t, "", nil, "backup", "--data-dir", raised, file).wantCode(t, "backup", exitOK)
	pinbot(t, "", nil, "restore", "--data-dir", restored, file).wantCode(t, "restore", exitOK)

	for _, tt := range []struct {
		dir, free, rule string
	}{
		{raised, "2 (5 held by an earlier rule)", "  5 pins per 12 hours until "},
		{restored, "0 (7 held by an earlier rule)", "  no pin until "},
	} {
		r := pinbot(t, "", nil, "accounts", "--data-dir", tt.dir)
		r.wantCode(t, "accounts", exitOK)
		lines := strings.Split(r.stdout, "\n")
		if len(lines) < 2 || !strings.Contains(lines[1], "3/10") || !strings.Contains(lines[1], tt.free) {
			t.Errorf("%s: accounts does not say %q free:\n%s", tt.dir, tt.free, r.stdout)
		}
		// The restore's hold is listed beside the earlier limit's rule:
		// an account rebuilt from Pinterest's listing is free of the hold,
		// never of the pins made under the earlier limit.
		if !strings.Contains(r.stdout, "\nHeld: an earlier rule still counts the pins made under it, as /pin does:\n") ||
			!strings.Contains(r.stdout, "\n"+tt.rule) || !strings.Contains(r.stdout, "\n  5 pins per 12 hours until ") {
			t.Errorf("%s: accounts does not say why (%q):\n%s", tt.dir, tt.rule, r.stdout)
		}
		r = pinbot(t, "", nil, "jobs", "--data-dir", tt.dir, "alice")
		r.wantCode(t, "jobs", exitOK)
		if !strings.Contains(r.stdout, "Free:            "+tt.free+"\n") || !strings.Contains(r.stdout, "\n"+tt.rule) {
			t.Errorf("%s: jobs does not say %q free and why:\n%s", tt.dir, tt.free, r.stdout)
		}
	}
	var got []listedAccount
	r := pinbot(t, "", nil, "accounts", "--json", "--data-dir", raised)
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 1 || got[0].Free != 2 || got[0].Blocked != 5 {
		t.Errorf("accounts --json: %+v, %v\n%s", got, err, r.stdout)
	}
}

// TestJobsCommand: jobs names its account by id or by @username (with
// the sandbox's key), and refuses what names none, clearly.
func TestJobsCommand(t *testing.T) {
	t.Parallel()
	dir := sandboxData(t)
	r := pinbot(t, "", nil, "jobs", "--data-dir", dir, "@bob_pins")
	r.wantCode(t, "jobs @bob_pins", exitOK)
	for _, w := range []string{"Account:         bob\n", "Username:        @bob_pins\n", "Linked by:       Discord user u2\n",
		"12-hour pins:    12/100\n", "Free:            88\n", "Next slot free:  now\n",
		"\nNothing is queued, and no results of queued pins are kept.\n"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("jobs @bob_pins lacks %q:\n%s", w, r.stdout)
		}
	}
	if byID := pinbot(t, "", nil, "jobs", "bob", "--data-dir", dir); byID.stdout != r.stdout {
		t.Errorf("jobs bob:\n%s\nwant what jobs @bob_pins wrote", byID.stdout)
	}
	// carol has pins but no link.
	if r := pinbot(t, "", nil, "jobs", "--json", "--data-dir", dir, "carol"); r.code != exitOK || !strings.Contains(r.stdout, `"used": 100`) {
		t.Errorf("jobs --json carol: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"jobs"}, exitUsage, "jobs: want one ACCOUNT (an account id, or @ and its username), got 0 arguments"},
		{[]string{"jobs", "a", "b"}, exitUsage, "got 2 arguments"},
		{[]string{"jobs", "zed"}, exitFailure, "pinbot: account zed is neither stored nor linked\n"},
		{[]string{"jobs", "@nobody"}, exitFailure, "pinbot: no linked account has the username nobody\n"},
		{[]string{"jobs", "--data-dir", filepath.Join(dir, "missing"), "bob"}, exitFailure, "does not exist"},
		{[]string{"jobs", "--data-dir", t.TempDir(), "bob"}, exitFailure, "no account is stored in"},
	} {
		args := tt.args
		if !slices.Contains(args, "--data-dir") {
			args = append(args, "--data-dir", dir)
		}
		r := pinbot(t, "", nil, args...)
		r.wantCode(t, strings.Join(tt.args, " "), tt.code)
		if !strings.Contains(r.stderr, tt.want) || r.stdout != "" {
			t.Errorf("%q: stderr %q, want %q; stdout %q", tt.args, r.stderr, tt.want, r.stdout)
		}
	}
	// Without the key, a username cannot be looked up: jobs says why.
	if err := os.Remove(filepath.Join(dir, sandboxKeyName)); err != nil {
		t.Fatal(err)
	}
	r = pinbot(t, "", nil, "jobs", "--data-dir", dir, "@bob_pins")
	r.wantCode(t, "jobs @bob_pins without the key", exitFailure)
	if want := "pinbot: cannot look up the username bob_pins: no key for the token store (set PINBOT_ENCRYPTION_KEY_FILE)\n"; !strings.HasPrefix(r.stderr, want) {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
}
