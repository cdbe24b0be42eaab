//go:build !race && unix

// The bot process this test starts opens a real disgo gateway
// connection, whose close races with its heartbeat (upstream): the child
// is this test binary, so it must be built without -race. The test runs
// in `make gateway` (4 cycles) and `make soak` (BOT_SOAK_CYCLES).

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/bot/web/webtest"
)

// Environment of TestDisgoGatewayCrashSoak.
const (
	// soakCyclesEnv is the number of SIGKILL cycles; default
	// defaultSoakCycles (the short run of `make gateway`); `make soak`
	// runs BOT_SOAK_CYCLES of them.
	soakCyclesEnv     = "PINBOT_BOT_SOAK_CYCLES"
	defaultSoakCycles = 4
	// soakSeedEnv replays a run's random choices: the seed its log shows.
	soakSeedEnv = "PINBOT_BOT_SOAK_SEED"
)

// pinLimit is the promise the test checks: at most pinLimit pins per
// account in any rolling pinWindow.
const (
	pinLimit  = 100
	pinWindow = 12 * time.Hour
)

// msgOutcomeUnknown is why a pin whose answer was lost failed.
const msgOutcomeUnknown = "Pinterest did not answer clearly (a server error or a timeout); the pin may exist, so it counts toward the limit"

// settingsAnyN and pinCountAnyN are settingsN and pinCountN whatever the
// limit shown, which the test checks on its own.
var (
	settingsAnyN = regexp.MustCompile(`12-hour pins: (\d+)/(\d+)`)
	pinCountAnyN = regexp.MustCompile(`12-hour pin count: (\d+)/(\d+)`)
)

// linkWithBoard links the Pinterest account the stand-in signs in (see
// pinteresttest.Server.SetLoggedIn) to the Discord user inv invokes as,
// through /link and the real OAuth flow, and makes boardID, named
// boardName, its default board through the /settings menu. username is
// the Pinterest account's username. It returns the interactions it ran.
func linkWithBoard(ctx context.Context, t *testing.T, dc *discordtest.Server, inv func(discordtest.InvocationData) discordtest.Invocation,
	username, boardID, boardName string) []*discordtest.Interaction {
	t.Helper()
	var all []*discordtest.Interaction
	in, r := reply(ctx, t, dc, inv(discordtest.ChatInput{Name: "link"}))
	all = append(all, in)
	mm := linkURL.FindStringSubmatch(r.Data.Content)
	if mm == nil {
		t.Fatalf("/link answered %q, want an address", r.Data.Content)
	}
	// The stand-in approves and redirects to the bot's callback, which
	// shows its confirmation page; the browser confirms.
	b := webtest.NewBrowser(nil)
	page, err := b.Get(ctx, mm[1])
	if err != nil || page.Title != "Confirm the link" {
		t.Fatalf("OAuth callback: %v %d %q", err, page.Status, page.Message)
	}
	if page, err = b.Submit(ctx, page, webtest.Confirm); err != nil || page.Status != http.StatusOK ||
		!strings.Contains(page.Message, "Linked Pinterest account "+username) {
		t.Fatalf("confirmation: %v %d %q", err, page.Status, page.Message)
	}
	in, r = reply(ctx, t, dc, inv(discordtest.ChatInput{Name: "settings"}))
	all = append(all, in)
	var rows []struct {
		Components []struct {
			CustomID string `json:"custom_id"`
		} `json:"components"`
	}
	if err := json.Unmarshal(r.Data.Components, &rows); err != nil {
		t.Fatal(err)
	}
	boardMenu := ""
	for _, row := range rows {
		for _, c := range row.Components {
			if strings.HasPrefix(c.CustomID, "/settings/board/") {
				boardMenu = c.CustomID
			}
		}
	}
	if boardMenu == "" {
		t.Fatalf("/settings has no board menu: %s", r.Data.Components)
	}
	in, r = reply(ctx, t, dc, inv(discordtest.SelectMenu{CustomID: boardMenu, Values: []string{boardID}, MessageID: r.MessageID}))
	all = append(all, in)
	if want := fmt.Sprintf("Default board for @%s is now **%s**", username, boardName); !strings.Contains(r.Data.Content, want) {
		t.Fatalf("board menu: %q, want %q", r.Data.Content, want)
	}
	return all
}

// slowPins is the bot's way to the Pinterest stand-in, in a reverse
// proxy: it delays every POST /v5/pins by 100–400 ms before forwarding
// it, and forwards about half of them detached from the bot's request,
// as Pinterest goes on with a request it received: such a pin is made
// even when the bot dies (or gives up) meanwhile. And one answer in
// loseOneIn is lost once the pin is made (the bot gets a 502 from the
// proxy): the bot must count that pin, whose outcome it cannot know.
type slowPins struct {
	next http.RoundTripper

	mu       sync.Mutex
	rng      *rand.Rand
	detached int // POSTs forwarded detached
	dropped  int // POSTs the bot gave up on before they were forwarded
	lost     int // answers lost after the pin was made
}

// loseOneIn is how rare a lost answer is.
const loseOneIn = 15

// errAnswerLost is how slowPins loses an answer.
var errAnswerLost = errors.New("the answer of POST /v5/pins was lost")

func (s *slowPins) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.URL.Path != pinteresttest.PathPins {
		return s.next.RoundTrip(req)
	}
	s.mu.Lock()
	delay := 100*time.Millisecond + time.Duration(s.rng.Int64N(int64(300*time.Millisecond)))
	detach := s.rng.IntN(2) == 0
	lose := s.rng.IntN(loseOneIn) == 0
	s.mu.Unlock()
	// The whole request has arrived: read it now, a dead client cannot
	// take it back.
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	ctx := req.Context()
	if detach {
		ctx = context.WithoutCancel(ctx)
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		s.mu.Lock()
		s.dropped++
		s.mu.Unlock()
		return nil, ctx.Err()
	}
	if detach {
		s.mu.Lock()
		s.detached++
		s.mu.Unlock()
	}
	out := req.Clone(ctx)
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	resp, err := s.next.RoundTrip(out)
	if err != nil || !lose {
		return resp, err
	}
	resp.Body.Close()
	s.mu.Lock()
	s.lost++
	s.mu.Unlock()
	return nil, errAnswerLost
}

func (s *slowPins) counts() (detached, dropped, lost int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.detached, s.dropped, s.lost
}

// openConns counts the proxy's open client connections. A connection is
// closed only once the request it serves is done, forward included, and
// a dead bot's connections all close: when the count is back to zero
// after a kill, every request the bot sent has reached the stand-in or
// been dropped.
type openConns struct {
	mu      sync.Mutex
	n       int
	changed chan struct{} // closed and replaced at every change of n
}

func newOpenConns() *openConns { return &openConns{changed: make(chan struct{})} }

// hook is the proxy server's http.Server.ConnState.
func (o *openConns) hook(_ net.Conn, st http.ConnState) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch st {
	case http.StateNew:
		o.n++
	case http.StateClosed, http.StateHijacked:
		o.n--
	default:
		return
	}
	close(o.changed)
	o.changed = make(chan struct{})
}

// waitZero waits until no connection is open.
func (o *openConns) waitZero(ctx context.Context) error {
	for {
		o.mu.Lock()
		n, ch := o.n, o.changed
		o.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%d connections to the Pinterest proxy still open: %w", n, ctx.Err())
		}
	}
}

// soakUser is a Discord user with a linked Pinterest account.
type soakUser struct {
	name               string // Discord and Pinterest username
	account            string // Pinterest account ID
	boardID, boardName string
	member             discordtest.Member

	refusedIn string // where the bot first refused a pin for the limit, "" before
	fullIn    string // where its count first reached the limit, "" before
}

// soak is the state of TestDisgoGatewayCrashSoak.
type soak struct {
	t     *testing.T
	ctx   context.Context
	dc    *discordtest.Server
	ps    *pinteresttest.Server
	ch    discordtest.Channel
	msgs  []string // message IDs, five images each
	users []*soakUser
	rng   *rand.Rand
	all   []*discordtest.Interaction
	phase string // for the record of where the limit was reached
	// badLimit is set once the bot showed another limit than pinLimit.
	badLimit bool
}

func (s *soak) inv(u *soakUser, data discordtest.InvocationData) discordtest.Invocation {
	return discordtest.Invocation{ChannelID: s.ch.ID, UserID: u.member.UserID, Data: data}
}

// limitShown checks the limit a count shows (in text), once.
func (s *soak) limitShown(text, limit string) {
	s.t.Helper()
	if limit != strconv.Itoa(pinLimit) && !s.badLimit {
		s.badLimit = true
		s.t.Errorf("%s: the bot shows %q, want a limit of %d", s.phase, text, pinLimit)
	}
}

// count is the 12-hour count /settings shows u.
func (s *soak) count(u *soakUser) int {
	s.t.Helper()
	in, r := reply(s.ctx, s.t, s.dc, s.inv(u, discordtest.ChatInput{Name: "settings"}))
	s.all = append(s.all, in)
	mm := settingsAnyN.FindAllStringSubmatch(r.Data.Content, -1)
	if len(mm) != 1 {
		s.t.Fatalf("/settings for %s: %q, want one 12-hour count", u.name, r.Data.Content)
	}
	s.limitShown(mm[0][0], mm[0][2])
	n, _ := strconv.Atoi(mm[0][1])
	if n >= pinLimit && u.fullIn == "" {
		u.fullIn = s.phase
	}
	return n
}

// pin fires a /pin of images pictures (rounded up to whole messages of
// five, at most ten) for u and returns it unanswered.
func (s *soak) pin(u *soakUser, images int) *discordtest.Interaction {
	s.t.Helper()
	n := min((images+4)/5, 2)
	var ids []string
	for _, i := range s.rng.Perm(len(s.msgs))[:n] {
		ids = append(ids, s.msgs[i])
	}
	in, err := s.dc.Interact(s.inv(u, discordtest.ChatInput{Name: "pin", Options: []discordtest.CommandOption{
		{Name: "messages", Value: strings.Join(ids, " ")},
	}}))
	if err != nil {
		s.t.Fatalf("/pin for %s: %v", u.name, err)
	}
	s.all = append(s.all, in)
	return in
}

// check reads a /pin reply the bot sent for u: no pin may fail but for a
// lost answer (the only fault while a bot runs), no count may exceed the
// limit, and a refusal for the limit is recorded.
func (s *soak) check(u *soakUser, in *discordtest.Interaction, content string) {
	s.t.Helper()
	if strings.Contains(content, "limit reached") && u.refusedIn == "" {
		u.refusedIn = s.phase
	}
	for line := range strings.Lines(content) {
		if strings.HasPrefix(line, "❌") && !strings.Contains(line, "failed: "+msgOutcomeUnknown) {
			s.t.Errorf("%s: /pin %d (%s) has a failed pin:\n%s", s.phase, in.ID, u.name, content)
			break
		}
	}
	for _, mm := range pinCountAnyN.FindAllStringSubmatch(content, -1) {
		s.limitShown(mm[0], mm[2])
		if n, _ := strconv.Atoi(mm[1]); n > pinLimit {
			s.t.Errorf("%s: /pin %d (%s) shows %q, over the limit of %d", s.phase, in.ID, u.name, mm[0], pinLimit)
		}
	}
}

// answered checks the reply of each of batches (whose user is in
// owners) that has one, and returns how many had one.
func (s *soak) answered(batches []*discordtest.Interaction, owners []*soakUser) int {
	s.t.Helper()
	n := 0
	for i, in := range batches {
		for _, r := range in.Responses() {
			if r.Kind == discordtest.KindEditOriginal && r.OK() && r.Data != nil && r.Data.HasContent {
				s.check(owners[i], in, r.Data.Content)
				n++
			}
		}
	}
	return n
}

// settle brings every user's count to at least floor (or to the limit)
// with /pin batches on the running bot, waiting for their replies: up to
// six batches of five pictures at once per user, as needed.
func (s *soak) settle(floor int) {
	s.t.Helper()
	for round := 0; ; round++ {
		if round == 20 {
			s.t.Fatalf("%s: 20 rounds of /pin did not bring every count to %d", s.phase, floor)
		}
		var batches []*discordtest.Interaction
		var owners []*soakUser
		for _, u := range s.users {
			if u.refusedIn != "" {
				continue
			}
			need := floor - s.count(u)
			for k := 0; need > 0 && k < 6; k++ {
				batches = append(batches, s.pin(u, 5))
				owners = append(owners, u)
				need -= 5
			}
		}
		if len(batches) == 0 {
			return
		}
		for i, in := range batches {
			rs, err := in.Wait(s.ctx, 2)
			if err != nil {
				s.t.Fatalf("%s: /pin %d (%s): %v; responses %+v", s.phase, in.ID, owners[i].name, err, in.Responses())
			}
			if !rs[0].OK() || rs[0].Type != discord.InteractionResponseTypeDeferredCreateMessage || !rs[1].OK() || rs[1].Data == nil {
				s.t.Fatalf("%s: /pin %d (%s): responses %+v, want a deferral and an edit", s.phase, in.ID, owners[i].name, rs)
			}
			s.check(owners[i], in, rs[1].Data.Content)
		}
	}
}

// ledger checks, after a restart, that Pinterest never held more than the
// limit in a rolling window and that the bot counts every pin Pinterest
// holds (all of them are within the window here), and returns a line for
// the log.
func (s *soak) ledger() string {
	s.t.Helper()
	var parts []string
	for _, u := range s.users {
		held := len(s.ps.PinsFor(u.account))
		if m := s.ps.MaxInWindow(u.account, pinWindow); m > pinLimit {
			s.t.Errorf("%s: Pinterest holds %d pins of %s in one %v window, over the limit of %d", s.phase, m, u.name, pinWindow, pinLimit)
		}
		n := s.count(u)
		if n < held {
			s.t.Errorf("%s: the bot counts %d pins for %s, but Pinterest holds %d: a pin went uncounted", s.phase, n, u.name, held)
		}
		if n > pinLimit {
			s.t.Errorf("%s: the bot counts %d pins for %s, over the limit", s.phase, n, u.name)
		}
		parts = append(parts, fmt.Sprintf("%s: Pinterest %d, bot %d/%d", u.name, held, n, pinLimit))
	}
	return strings.Join(parts, "; ")
}

// TestDisgoGatewayCrashSoak runs the bot as a child process against
// stand-ins living in the test, with two users each pinning to their own
// Pinterest account through a slow Pinterest (slowPins: 100–400 ms a pin,
// half the requests carried on after the bot dies, one answer in
// loseOneIn lost), and SIGKILLs it again and again while /pin batches
// run (and now and then again right after a start, while the engine may
// be recovering). After each restart on the same data directory it
// checks the promise from Pinterest's side, whose ledger outlives every
// bot: no account ever holds more than 100 pins in a rolling 12 hours,
// and the bot's count never falls below what Pinterest holds.
//
// Each cycle first brings the counts up to a floor that rises with the
// cycles (settled batches, whose replies are waited for): the limit less
// ten in the last cycle, so that its batches cross the limit as the kill
// comes, unless earlier cycles did. Then it fires two or three batches of
// ten pictures per user and kills the bot after 0–2 s (at once one time
// in six), mostly while they are in flight. After the last cycle the
// counts are brought to the limit, and one more /pin must be refused.
//
// PINBOT_BOT_SOAK_CYCLES sets the number of cycles (default 4);
// PINBOT_BOT_SOAK_SEED replays a run's random choices (not its timing).
func TestDisgoGatewayCrashSoak(t *testing.T) {
	t.Parallel()
	cycles := defaultSoakCycles
	if v := os.Getenv(soakCyclesEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of cycles", soakCyclesEnv, v)
		}
		cycles = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(soakSeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned number", soakSeedEnv, v)
		}
		seed = n
	}
	t.Logf("%d cycles, seed %d (%s=%d replays it)", cycles, seed, soakSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0x70696e626f74))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+time.Duration(cycles)*30*time.Second)
	defer cancel()

	dc := discordtest.NewServer()
	defer dc.Close()
	ps := pinteresttest.NewServer()
	defer ps.Close()
	users := []*soakUser{
		{name: "ada", account: "5151", boardID: "51511", boardName: "Soak A"},
		{name: "bo", account: "6262", boardID: "62621", boardName: "Soak B"},
	}
	for _, u := range users {
		ps.AddAccount(u.account, u.name, pinteresttest.Board{ID: u.boardID, Name: u.boardName})
	}

	// The slow proxy between the bot and Pinterest. Its transport is its
	// own, so that its idle connections go with the test; closing the
	// proxy server (deferred, before the stand-in's Close) waits for every
	// request still being forwarded.
	target, err := url.Parse(ps.URL)
	if err != nil {
		t.Fatal(err)
	}
	upstream := http.DefaultTransport.(*http.Transport).Clone()
	defer upstream.CloseIdleConnections()
	slow := &slowPins{next: upstream, rng: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = slow
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	conns := newOpenConns()
	api := httptest.NewUnstartedServer(proxy)
	api.Config.ConnState = conns.hook
	api.Start()
	defer api.Close()

	g, err := dc.AddGuild(discordtest.Guild{Name: "soak"})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := dc.AddChannel(discordtest.Channel{GuildID: g.ID, Name: "general"})
	if err != nil {
		t.Fatal(err)
	}
	s := &soak{t: t, ctx: ctx, dc: dc, ps: ps, ch: ch, users: users, rng: rng, phase: "start"}
	for _, u := range users {
		if u.member, err = dc.AddMember(discordtest.Member{GuildID: g.ID, Username: u.name}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 12 {
		atts := make([]discordtest.Attachment, 5)
		for j := range atts {
			atts[j] = discordtest.Attachment{Filename: fmt.Sprintf("s%d-%d.png", i, j), ContentType: "image/png", Width: 64, Height: 64}
		}
		msg, err := dc.AddMessage(discordtest.Message{ChannelID: ch.ID, Content: fmt.Sprintf("five images, %d", i), Attachments: atts})
		if err != nil {
			t.Fatal(err)
		}
		s.msgs = append(s.msgs, msg.ID.String())
	}

	dir := t.TempDir()
	keyFile := writeKey(t, dir, 32, 0o600)
	env := standInEnv(t, dc, ps, api.URL+"/v5", keyFile, filepath.Join(dir, "data"))

	// start starts a bot run; one still running when the test ends (it
	// failed) is killed, after the stand-ins' defers are registered, so
	// before they close.
	var runs []*child
	defer func() {
		for _, r := range runs {
			select {
			case <-r.exited:
			default:
				_ = r.cmd.Process.Kill()
				<-r.exited
			}
		}
	}()
	start := func() *child {
		t.Helper()
		c := startChild(ctx, t, env)
		runs = append(runs, c)
		return c
	}
	cur := start()
	var last *child // the run killed last, for the log of a failure
	defer func() {
		if t.Failed() {
			if last != nil {
				t.Logf("the run killed last:\n%s", last.stderr())
			}
			t.Logf("the current run:\n%s", cur.stderr())
		}
	}()
	for _, u := range users {
		ps.SetLoggedIn(u.account)
		s.all = append(s.all, linkWithBoard(ctx, t, dc, func(d discordtest.InvocationData) discordtest.Invocation { return s.inv(u, d) },
			u.name, u.boardID, u.boardName)...)
	}
	started := time.Now() // when cur began to serve

	// killed waits, after a kill, until every request the dead bot sent
	// Pinterest has been forwarded or dropped.
	killed := func() {
		t.Helper()
		if err := conns.waitZero(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// pause waits out a random kill delay (the point of the test, not a
	// wait for something to happen).
	pause := func(d time.Duration) {
		t.Helper()
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			t.Fatalf("%s: %v", s.phase, ctx.Err())
		}
	}

	late := 0 // pins Pinterest made after the bot that asked for them died
	for c := 1; c <= cycles; c++ {
		// Settled batches bring the counts to the cycle's floor, which
		// rises to the limit less ten in the last cycle: its batches
		// then cross the limit, unless earlier ones did.
		s.phase = fmt.Sprintf("cycle %d settle", c)
		floor := (pinLimit*c+cycles-1)/cycles - 10
		s.settle(floor)

		// Batches in flight, then the kill.
		s.phase = fmt.Sprintf("cycle %d batches", c)
		var batches []*discordtest.Interaction
		var owners []*soakUser
		for _, u := range users {
			for range 2 + s.rng.IntN(2) {
				batches = append(batches, s.pin(u, 10))
				owners = append(owners, u)
			}
		}
		fired := time.Now()
		var delay time.Duration
		if s.rng.IntN(6) != 0 {
			delay = time.Duration(s.rng.Int64N(int64(2 * time.Second)))
		}
		pause(delay)
		cur.kill()
		ranFor, upFor := time.Since(fired), time.Since(started)
		before := make(map[string]int)
		for _, u := range users {
			before[u.account] = len(ps.PinsFor(u.account))
		}
		killed()
		after := 0
		for _, u := range users {
			after += len(ps.PinsFor(u.account)) - before[u.account]
		}
		late += after
		done := s.answered(batches, owners)
		last = cur

		// Now and then a kill right after the start, while the engine
		// may still be recovering what the last one left.
		startup := ""
		if s.rng.IntN(4) == 0 {
			s.phase = fmt.Sprintf("cycle %d start-up kill", c)
			early := start()
			wait := time.Duration(s.rng.Int64N(int64(50 * time.Millisecond)))
			pause(wait)
			early.kill()
			killed()
			last = early
			startup = fmt.Sprintf(", then a start-up kill %v after running", wait.Round(time.Millisecond))
		}

		s.phase = fmt.Sprintf("cycle %d restart", c)
		cur = start()
		started = time.Now()
		t.Logf("cycle %d: killed %v after %d batches were fired (run up %v), %d answered, %d pins made after the kill%s; %s",
			c, ranFor.Round(time.Millisecond), len(batches), upFor.Round(time.Millisecond), done, after, startup, s.ledger())
	}

	// Whatever the cycles left, the limit is reached on the last run; the
	// next /pin must be refused, and Pinterest gets nothing more.
	s.phase = "final settle"
	s.settle(pinLimit)
	s.phase = "final refusal"
	for _, u := range users {
		held := len(ps.PinsFor(u.account))
		in, r := reply(ctx, t, dc, s.inv(u, discordtest.ChatInput{Name: "pin", Options: []discordtest.CommandOption{
			{Name: "messages", Value: s.msgs[0]},
		}}))
		s.all = append(s.all, in)
		if !strings.Contains(r.Data.Content, "Pin limit reached (100/12h)") {
			t.Errorf("/pin for %s at the limit: %q, want a refusal", u.name, r.Data.Content)
		}
		s.check(u, in, r.Data.Content)
		if n := s.count(u); n != pinLimit {
			t.Errorf("the bot counts %d pins for %s at the end, want %d", n, u.name, pinLimit)
		}
		if n := len(ps.PinsFor(u.account)); n != held {
			t.Errorf("Pinterest holds %d pins of %s after a /pin at the limit, had %d", n, u.name, held)
		}
	}
	cur.stop(ctx)
	killed()
	s.phase = "end"
	detached, dropped, lost := slow.counts()
	var parts []string
	for _, u := range users {
		held, m := len(ps.PinsFor(u.account)), ps.MaxInWindow(u.account, pinWindow)
		if m > pinLimit {
			t.Errorf("Pinterest holds %d pins of %s in one %v window, over the limit of %d", m, u.name, pinWindow, pinLimit)
		}
		if u.refusedIn == "" && u.fullIn == "" {
			t.Errorf("%s: the test never reached the limit: it tested nothing", u.name)
		}
		parts = append(parts, fmt.Sprintf("%s: Pinterest holds %d (busiest window %d), count first full in %q, first refusal in %q",
			u.name, held, m, u.fullIn, u.refusedIn))
	}
	t.Logf("end: %s; %d pins made after their bot died, %d POSTs forwarded detached, %d dropped, %d answers lost", strings.Join(parts, "; "), late, detached, dropped, lost)

	// No interaction was acknowledged twice, across every run.
	if n := dc.DuplicateAcks(); n != 0 {
		t.Errorf("%d initial responses refused as duplicates", n)
	}
	for _, in := range s.all {
		callbacks := 0
		for _, r := range in.Responses() {
			if r.Kind == discordtest.KindCallback {
				callbacks++
			}
		}
		if callbacks > 1 {
			t.Errorf("interaction %d got %d initial responses: %+v", in.ID, callbacks, in.Responses())
		}
	}
}
