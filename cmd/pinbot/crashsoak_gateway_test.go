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
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/bot/web/webtest"
	"github.com/pinbot/pinbot/internal/control"
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

// The rule the soak runs the bot under, and checks on Pinterest's side:
// at most soakLimit pins per account in any rolling soakWindow. The
// window is short so that slots free, and queued pins come due, within
// every cycle.
const (
	soakLimit  = 10
	soakWindow = 5 * time.Second
)

// The timing of unknown outcomes the soak runs the bot under
// (PINBOT_LEASE, PINBOT_SLOT_MARGIN, PINBOT_LISTING_LAG): short, so that
// a job a kill left running is looked for on Pinterest soakLease plus
// soakListingLag after its slot was reserved, within the last run at
// least. soakLease is the shortest lease the bot takes (a request to
// Pinterest is sent only while its whole timeout is left in the slot).
// The slow proxy acts on a request within half a second of its arrival,
// and the stand-in lists a pin as soon as it is made: the assumptions
// hold. soakResolveWait bounds the last run's wait for every job to end.
const (
	soakLease       = 45 * time.Second
	soakSlotMargin  = time.Second
	soakListingLag  = time.Second
	soakResolveWait = soakLease + time.Minute
)

// Log lines of the bot the soak watches for.
const (
	// logRecovered is logged for each running job a start finds: a job a
	// killed run had started, whose outcome is unknown.
	logRecovered = "was running when the engine stopped"
	// logEngine marks the engine's lines: the first comes once the
	// engine runs, before the bot is built and serves queued pins.
	logEngine = `"component":"engine"`
	// logBuilt is logged once the program is built (its stores open, its
	// queued pins served), before the bot connects to Discord.
	logBuilt = `"message":"starting the bot"`
)

// When stopKill sends SIGTERM: as the run's engine starts (before the
// bot is built and serves queued pins), once the bot is built (while its
// queued pins start), at the first job a killed run left running that
// the run finds, or once the bot runs (while the queued pins that came
// due at the start hold the workers, and the jobs found running may wait
// for one). Each falls back to the last.
var stopMarks = []struct{ mark, name string }{
	{logEngine, "as its engine started"},
	{logBuilt, "once built"},
	{logRecovered, "at its first job found running"},
	{"", "once running"},
}

// What the replies of the bot show, whatever the texts around them.
var (
	// settingsCount is an account's count in /settings, pinCount the
	// count after a pin: the count and the limit.
	settingsCount = regexp.MustCompile(`pins: (\d+)/(\d+)`)
	pinCount      = regexp.MustCompile(`pin count: (\d+)/(\d+)`)
	// resultLine is a line about one picture, in a /pin reply or in a
	// digest: its mark, the message's guild, channel and ID, and the
	// picture's position.
	resultLine = regexp.MustCompile(`^\s*(✅|❌|❔|⏳|⏭️)\s*<https://discord\.com/channels/(\d+)/(\d+)/(\d+)>(?: \(image (\d+) of \d+\))?`)
	// accountInLine is the account a digest line names.
	accountInLine = regexp.MustCompile(`· @(\w+)`)
	// mentionAtStart is the user a digest in a channel is for.
	mentionAtStart = regexp.MustCompile(`^<@(\d+)>`)
)

// imagesPerMessage is how many pictures each of the soak's messages holds.
const imagesPerMessage = 5

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
	boardMenu := menuID(t, r, "/settings/board/")
	in, r = reply(ctx, t, dc, inv(discordtest.SelectMenu{CustomID: boardMenu, Values: []string{boardID}, MessageID: r.MessageID}))
	all = append(all, in)
	if want := fmt.Sprintf("Default board for @%s is now **%s**", username, boardName); !strings.Contains(r.Data.Content, want) {
		t.Fatalf("board menu: %q, want %q", r.Data.Content, want)
	}
	return all
}

// menuID returns the custom ID of the component of reply r whose ID
// starts with prefix.
func menuID(t *testing.T, r discordtest.Response, prefix string) string {
	t.Helper()
	var rows []struct {
		Components []struct {
			CustomID string `json:"custom_id"`
		} `json:"components"`
	}
	if err := json.Unmarshal(r.Data.Components, &rows); err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		for _, c := range row.Components {
			if strings.HasPrefix(c.CustomID, prefix) {
				return c.CustomID
			}
		}
	}
	t.Fatalf("no component %s… in %s", prefix, r.Data.Components)
	return ""
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

// soakUser is a Discord user, a member of every guild of the soak, with
// a Pinterest account of their own linked.
type soakUser struct {
	name               string // Discord and Pinterest username
	account            string // Pinterest account ID
	boardID, boardName string
	id                 snowflake.ID
	// dmsOpen says whether the user takes direct messages from the bot:
	// the results of their queued pins go to a channel otherwise.
	dmsOpen bool
	// queueByDefault says the user chose "queue the rest" in /settings
	// and runs /pin without when_full; the others pass when_full:queue.
	queueByDefault bool
	// used is the count /settings showed last.
	used int
}

// pinKey names one picture pinned to one account. The soak asks for each
// at most once: Pinterest holding two is a pin sent twice.
type pinKey struct {
	account string
	message snowflake.ID
	image   int // its position in the message, from 1
}

func (k pinKey) String() string {
	return fmt.Sprintf("image %d of message %d on account %s", k.image, k.message, k.account)
}

// picture is one of the pictures of the soak's messages.
type picture struct {
	message snowflake.ID
	image   int
}

// soakQueued is a pin a /pin reply said was queued.
type soakQueued struct {
	user  *soakUser
	from  discordtest.Channel // where /pin ran
	cycle int
}

// soak is the state of TestDisgoGatewayCrashSoak.
type soak struct {
	t   *testing.T
	ctx context.Context
	dc  *discordtest.Server
	ps  *pinteresttest.Server
	rng *rand.Rand
	// chans are the guild channels users pin from: two of one guild,
	// then one of another. Each /pin names messages of the channel it
	// runs in.
	chans  []discordtest.Channel
	guilds map[snowflake.ID]string // names
	users  []*soakUser
	// pictures are the pictures of the soak's messages, by attachment URL
	// without its query (Discord signs it afresh on every read).
	pictures map[string]picture
	// pinners are the users of the soak's messages: only one user pins
	// each message.
	pinners map[snowflake.ID]*soakUser
	// queued are the pins /pin replies said were queued.
	queued map[pinKey]*soakQueued
	// all are the interactions run, owners the user of each /pin.
	all    []*discordtest.Interaction
	owners map[snowflake.ID]*soakUser
	phase  string
	cycle  int
	// badLimit is set once the bot showed another limit than soakLimit.
	badLimit bool
	// movingCounts lets count ask again, for a while, a count that reads
	// unknown (a cluster's partitions moving).
	movingCounts bool
}

// soakGuild is a guild to add to the Discord stand-in: its name and its
// channels' names.
type soakGuild struct {
	name  string
	chans []string
}

// addGuilds adds the guilds, and their channels in order, to the Discord
// stand-in and to s (s.guilds, s.chans), and returns them.
func (s *soak) addGuilds(gs ...soakGuild) []discordtest.Guild {
	s.t.Helper()
	var guilds []discordtest.Guild
	for _, g := range gs {
		gd, err := s.dc.AddGuild(discordtest.Guild{Name: g.name})
		if err != nil {
			s.t.Fatal(err)
		}
		guilds = append(guilds, gd)
		s.guilds[gd.ID] = g.name
		for _, name := range g.chans {
			ch, err := s.dc.AddChannel(discordtest.Channel{GuildID: gd.ID, Name: name})
			if err != nil {
				s.t.Fatal(err)
			}
			s.chans = append(s.chans, ch)
		}
	}
	return guilds
}

// addUsers adds n users, members of every guild of guilds, each with a
// Pinterest account of its own (IDs from firstAccount on) and one board;
// every other one takes no direct messages, every other pair queues by
// default.
func (s *soak) addUsers(n int, prefix string, firstAccount int, guilds []discordtest.Guild) {
	s.t.Helper()
	for i := range n {
		u := &soakUser{name: fmt.Sprintf("%s%02d", prefix, i+1), account: strconv.Itoa(firstAccount + i),
			dmsOpen: i%2 == 0, queueByDefault: i%4 < 2}
		u.boardID, u.boardName = u.account+"1", "Board of "+u.name
		s.ps.AddAccount(u.account, u.name, pinteresttest.Board{ID: u.boardID, Name: u.boardName})
		for _, g := range guilds {
			m, err := s.dc.AddMember(discordtest.Member{GuildID: g.ID, UserID: u.id, Username: u.name})
			if err != nil {
				s.t.Fatal(err)
			}
			u.id = m.UserID
		}
		if !u.dmsOpen {
			s.dc.SetDMsOpen(u.id, false)
		}
		s.users = append(s.users, u)
	}
}

// queueByDefault has u, when u queues by default, choose "queue the
// rest" in /settings.
func (s *soak) queueByDefault(u *soakUser, inv func(discordtest.InvocationData) discordtest.Invocation) {
	s.t.Helper()
	if !u.queueByDefault {
		return
	}
	in, r := reply(s.ctx, s.t, s.dc, inv(discordtest.ChatInput{Name: "settings"}))
	s.all = append(s.all, in)
	in, r = reply(s.ctx, s.t, s.dc, inv(discordtest.SelectMenu{CustomID: menuID(s.t, r, "/settings/whenfull"), Values: []string{"queue"}, MessageID: r.MessageID}))
	s.all = append(s.all, in)
	if !strings.Contains(r.Data.Content, "now queue the rest") {
		s.t.Fatalf("when-full menu for %s: %q, want queueing", u.name, r.Data.Content)
	}
}

func (s *soak) inv(u *soakUser, ch discordtest.Channel, data discordtest.InvocationData) discordtest.Invocation {
	return discordtest.Invocation{ChannelID: ch.ID, UserID: u.id, Data: data}
}

// limitShown checks the limit a count shows (in text), once.
func (s *soak) limitShown(text, limit string) {
	s.t.Helper()
	if limit != strconv.Itoa(soakLimit) && !s.badLimit {
		s.badLimit = true
		s.t.Errorf("%s: the bot shows %q, want a limit of %d", s.phase, text, soakLimit)
	}
}

// fresh adds n messages of imagesPerMessage pictures each to ch, for u
// to pin, and returns their IDs. No message is pinned twice: Pinterest
// holding a picture twice on an account is a pin sent twice.
func (s *soak) fresh(u *soakUser, ch discordtest.Channel, n int) []string {
	s.t.Helper()
	var ids []string
	for range n {
		atts := make([]discordtest.Attachment, imagesPerMessage)
		for j := range atts {
			atts[j] = discordtest.Attachment{Filename: fmt.Sprintf("p%d-%d.png", len(s.pictures), j+1), ContentType: "image/png", Width: 64, Height: 64}
		}
		msg, err := s.dc.AddMessage(discordtest.Message{ChannelID: ch.ID, Content: "five images", Attachments: atts})
		if err != nil {
			s.t.Fatal(err)
		}
		for j, a := range msg.Attachments {
			p := picture{message: msg.ID, image: j + 1}
			for _, link := range []string{a.URL, a.ProxyURL} {
				base, _, _ := strings.Cut(link, "?")
				s.pictures[base] = p
			}
		}
		s.pinners[msg.ID] = u
		ids = append(ids, msg.ID.String())
	}
	return ids
}

// keyOf names the picture p, a pin Pinterest made, was made of.
func (s *soak) keyOf(p pinteresttest.Pin) (pinKey, bool) {
	base, _, _ := strings.Cut(p.ImageURL, "?")
	pic, ok := s.pictures[base]
	return pinKey{account: p.AccountID, message: pic.message, image: pic.image}, ok
}

// pin fires a /pin for u in ch of n fresh messages, and returns it
// unanswered. whenFull is the when_full option, "" for none.
func (s *soak) pin(u *soakUser, ch discordtest.Channel, n int, whenFull string) *discordtest.Interaction {
	s.t.Helper()
	opts := []discordtest.CommandOption{{Name: "messages", Value: strings.Join(s.fresh(u, ch, n), " ")}}
	if whenFull != "" {
		opts = append(opts, discordtest.CommandOption{Name: "when_full", Value: whenFull})
	}
	in, err := s.dc.Interact(s.inv(u, ch, discordtest.ChatInput{Name: "pin", Options: opts}))
	if err != nil {
		s.t.Fatalf("/pin for %s: %v", u.name, err)
	}
	s.all = append(s.all, in)
	s.owners[in.ID] = u
	return in
}

// queuePin fires a /pin for u in ch of n fresh messages that queues
// what the limit refuses: through the user's default or the option.
func (s *soak) queuePin(u *soakUser, ch discordtest.Channel, n int) *discordtest.Interaction {
	if u.queueByDefault {
		return s.pin(u, ch, n, "")
	}
	return s.pin(u, ch, n, "queue")
}

// count is the count /settings shows u.
func (s *soak) count(u *soakUser) int {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var mm [][]string
	for {
		in, r := reply(s.ctx, s.t, s.dc, s.inv(u, s.chans[0], discordtest.ChatInput{Name: "settings"}))
		s.all = append(s.all, in)
		mm = settingsCount.FindAllStringSubmatch(r.Data.Content, -1)
		if len(mm) == 1 {
			break
		}
		// A cluster's partitions may be moving between members (after
		// their start, or a member's return): the count reads unknown
		// for a few seconds, and a user asks again.
		if !s.movingCounts || time.Now().After(deadline) || !strings.Contains(r.Data.Content, "pins: unknown") {
			s.t.Fatalf("%s: /settings for %s: %q, want one count", s.phase, u.name, r.Data.Content)
		}
		select {
		case <-time.After(500 * time.Millisecond): // as a user tries again
		case <-s.ctx.Done():
			s.t.Fatal(s.ctx.Err())
		}
	}
	s.limitShown(mm[0][0], mm[0][2])
	n, _ := strconv.Atoi(mm[0][1])
	return n
}

// check reads a /pin reply the bot sent for in: no pin may fail but for
// a lost answer (the only fault while a bot runs), no count may exceed
// the limit; the pins it says were queued are recorded.
func (s *soak) check(in *discordtest.Interaction, content string) {
	s.t.Helper()
	u := s.owners[in.ID]
	for line := range strings.Lines(content) {
		mm := resultLine.FindStringSubmatch(line)
		if mm == nil {
			continue
		}
		switch mm[1] {
		case "❌":
			if !strings.Contains(line, "the pin may exist") {
				s.t.Errorf("%s: /pin %d (%s) has a failed pin: %s", s.phase, in.ID, u.name, line)
			}
		case "⏳":
			msg, _ := snowflake.Parse(mm[4])
			image, _ := strconv.Atoi(mm[5])
			ch, _ := snowflake.Parse(mm[3])
			k := pinKey{account: u.account, message: msg, image: image}
			if s.queued[k] != nil {
				s.t.Errorf("%s: /pin %d (%s) queued %v a second time", s.phase, in.ID, u.name, k)
			}
			s.queued[k] = &soakQueued{user: u, from: s.channel(ch), cycle: s.cycle}
		}
	}
	for _, mm := range pinCount.FindAllStringSubmatch(content, -1) {
		s.limitShown(mm[0], mm[2])
		if n, _ := strconv.Atoi(mm[1]); n > soakLimit {
			s.t.Errorf("%s: /pin %d (%s) shows %q, over the limit of %d", s.phase, in.ID, u.name, mm[0], soakLimit)
		}
	}
}

// channel returns the soak's channel id.
func (s *soak) channel(id snowflake.ID) discordtest.Channel {
	for _, ch := range s.chans {
		if ch.ID == id {
			return ch
		}
	}
	return discordtest.Channel{ID: id}
}

// settle waits for the replies of batches and checks them.
func (s *soak) settle(batches []*discordtest.Interaction) {
	s.t.Helper()
	for _, in := range batches {
		rs, err := in.Wait(s.ctx, 2)
		if err != nil {
			s.t.Fatalf("%s: /pin %d (%s): %v; responses %+v", s.phase, in.ID, s.owners[in.ID].name, err, in.Responses())
		}
		if !rs[0].OK() || rs[0].Type != discord.InteractionResponseTypeDeferredCreateMessage || !rs[1].OK() || rs[1].Data == nil {
			s.t.Fatalf("%s: /pin %d (%s): responses %+v, want a deferral and an edit", s.phase, in.ID, s.owners[in.ID].name, rs)
		}
		s.check(in, rs[1].Data.Content)
	}
}

// answered checks the reply of each of batches that has one, and returns
// how many had one.
func (s *soak) answered(batches []*discordtest.Interaction) int {
	s.t.Helper()
	n := 0
	for _, in := range batches {
		for _, r := range in.Responses() {
			if r.Kind == discordtest.KindEditOriginal && r.OK() && r.Data != nil && r.Data.HasContent {
				s.check(in, r.Data.Content)
				n++
			}
		}
	}
	return n
}

// ledger checks, after a restart, that Pinterest never held more than
// the limit in a rolling window and that the bot counts every pin
// Pinterest made in the last window, records each user's count, and
// returns the counts for the log.
func (s *soak) ledger() string {
	s.t.Helper()
	var parts []string
	for _, u := range s.users {
		if m := s.ps.MaxInWindow(u.account, soakWindow); m > soakLimit {
			s.t.Errorf("%s: Pinterest holds %d pins of %s in one %v window, over the limit of %d", s.phase, m, u.name, soakWindow, soakLimit)
		}
		// Every pin Pinterest made before /settings was asked had its
		// slot reserved by then; those made since the window before the
		// answer count at the answer's instant (with a margin for the
		// engine's clock reading a little later than Pinterest's).
		before := time.Now()
		n := s.count(u)
		since := time.Now().Add(-soakWindow + 100*time.Millisecond)
		held := 0
		for _, p := range s.ps.PinsFor(u.account) {
			if p.CreatedAt.After(since) && !p.CreatedAt.After(before) {
				held++
			}
		}
		if n < held {
			s.t.Errorf("%s: the bot counts %d pins for %s, but Pinterest made %d in the last %v: a pin went uncounted", s.phase, n, u.name, held, soakWindow)
		}
		if n > soakLimit {
			s.t.Errorf("%s: the bot counts %d pins for %s, over the limit", s.phase, n, u.name)
		}
		u.used = n
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, " ")
}

// roles picks the users of a cycle by their counts, the least used
// first: up to two who queue (they have room for at least three pins,
// which they pin before the rest queues) and up to two who fire batches
// of immediate pins just before the kill.
func (s *soak) roles() (queuers, bursters []*soakUser) {
	us := slices.Clone(s.users)
	s.rng.Shuffle(len(us), func(i, j int) { us[i], us[j] = us[j], us[i] })
	slices.SortStableFunc(us, func(a, b *soakUser) int { return a.used - b.used })
	for _, u := range us {
		switch {
		case len(queuers) < 2 && u.used <= soakLimit-3:
			queuers = append(queuers, u)
		case len(bursters) < 2 && u.used < soakLimit:
			bursters = append(bursters, u)
		}
	}
	return queuers, bursters
}

// maxQueueBatches bounds the /pin batches of a user in a cycle's queue.
const maxQueueBatches = 4

// queueWave has each of queuers fire /pin batches that queue what the
// limit refuses, from a channel of one guild and then of the other, in
// turns, until each has queued pins from both guilds, at most
// maxQueueBatches each: batches of ten pictures until one queues (a
// batch Pinterest stops with a lost answer leaves room: the next pins
// first), then of five. It returns how many pins they queued.
func (s *soak) queueWave(queuers []*soakUser) int {
	s.t.Helper()
	here, there := s.chans[s.rng.IntN(2)], s.chans[2]
	if s.rng.IntN(2) == 0 {
		here, there = there, here
	}
	for round := range maxQueueBatches {
		ch := here
		if round%2 == 1 {
			ch = there
		}
		guilds := map[*soakUser]map[snowflake.ID]bool{}
		for _, q := range s.queued {
			if q.cycle == s.cycle {
				if guilds[q.user] == nil {
					guilds[q.user] = map[snowflake.ID]bool{}
				}
				guilds[q.user][q.from.GuildID] = true
			}
		}
		var wave []*discordtest.Interaction
		for _, u := range queuers {
			switch len(guilds[u]) {
			case 0:
				wave = append(wave, s.queuePin(u, ch, 2))
			case 1:
				// The account is full: five more pictures queue.
				wave = append(wave, s.queuePin(u, ch, 1))
			}
		}
		if len(wave) == 0 {
			break
		}
		s.settle(wave)
	}
	n := 0
	for _, q := range s.queued {
		if q.cycle == s.cycle {
			n++
		}
	}
	return n
}

// firstDue returns when the first of the pins queuers just queued runs:
// one window after the oldest pin of their accounts still in the window
// (the slots of the pins of the last kill count until their leases end).
// It is the zero time when none of them holds a pin in the window.
func (s *soak) firstDue(queuers []*soakUser) time.Time {
	since := time.Now().Add(-soakWindow)
	var first time.Time
	for _, u := range queuers {
		for _, p := range s.ps.PinsFor(u.account) {
			if p.CreatedAt.After(since) && (first.IsZero() || p.CreatedAt.Before(first)) {
				first = p.CreatedAt
			}
		}
	}
	if first.IsZero() {
		return first
	}
	return first.Add(soakWindow)
}

// missing returns the pins queued in the current cycle that Pinterest
// does not hold.
func (s *soak) missing() []pinKey { return s.missingOf(s.ps.Pins()) }

// missingOf is missing as of pins, Pinterest's pins at one instant.
func (s *soak) missingOf(pins []pinteresttest.Pin) []pinKey {
	held := map[pinKey]bool{}
	for _, p := range pins {
		if k, ok := s.keyOf(p); ok {
			held[k] = true
		}
	}
	var out []pinKey
	for k, q := range s.queued {
		if q.cycle == s.cycle && !held[k] {
			out = append(out, k)
		}
	}
	return out
}

// waitResolved waits, the bot running on data directory dir, until no
// job of any account is running or waiting: every job a kill left
// running has been looked for on Pinterest and ended, or gone back to
// the queue and run again. It polls the bot's queue through its control
// socket (as `pinbot jobs` does), at most soakResolveWait.
func (s *soak) waitResolved(dir layout) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, soakResolveWait)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		var open []string
		for _, u := range s.users {
			jobs, err := control.FetchJobs(ctx, dir.control(), u.account)
			if err != nil {
				s.t.Fatalf("%s: the queue of %s: %v", s.phase, u.name, err)
			}
			for _, j := range jobs.Jobs {
				if j.State == control.Running || j.State == control.Waiting {
					open = append(open, fmt.Sprintf("job %d of %s %s (recovered %v, lease ends %v)", j.ID, u.name, j.State, j.Recovered, j.Deadline.Format(time.TimeOnly)))
				}
			}
		}
		if len(open) == 0 {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			s.t.Fatalf("%s: %d jobs still open after %v, such as %s", s.phase, len(open), soakResolveWait, open[0])
		}
	}
}

// waitQueued waits until Pinterest holds every pin queued in the current
// cycle, on a run that is not killed: each runs once a slot frees for
// it (a lost answer too, whose pin Pinterest made). A pin whose run met
// etcd or Discord unavailable is tried again a minute later
// (jobRetryUnreachable), behind which the queue waits.
func (s *soak) waitQueued() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 3*time.Minute)
	defer cancel()
	for {
		// One reading of Pinterest's pins for both: a pin made between
		// two readings would otherwise be waited for as one more.
		pins := s.ps.Pins()
		missing := s.missingOf(pins)
		if len(missing) == 0 {
			return
		}
		acct := missing[0].account
		had := 0
		for _, p := range pins {
			if p.AccountID == acct {
				had++
			}
		}
		if _, err := s.ps.WaitPins(ctx, acct, had+1); err != nil {
			s.t.Fatalf("%s: %d queued pins never made, such as %v: %v", s.phase, len(missing), missing[0], err)
		}
	}
}

// soakRuns starts the bot's runs on one data directory and ends them.
type soakRuns struct {
	t     *testing.T
	ctx   context.Context
	env   []string
	conns *openConns
	runs  []*child
}

// start starts a run and waits until the bot runs.
func (r *soakRuns) start() *child {
	r.t.Helper()
	c := startChild(r.ctx, r.t, r.env)
	r.runs = append(r.runs, c)
	return c
}

// settled waits, after a run ended, until every request it sent
// Pinterest has been forwarded or dropped.
func (r *soakRuns) settled() {
	r.t.Helper()
	if err := r.conns.waitZero(r.ctx); err != nil {
		r.t.Fatal(err)
	}
}

// pause waits d: a random delay before a signal (the point of the test,
// not a wait for something to happen).
func (r *soakRuns) pause(d time.Duration) {
	r.t.Helper()
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-r.ctx.Done():
		r.t.Fatal(r.ctx.Err())
	}
}

// stopKill starts a run and stops it at once: SIGTERM as soon as it logs
// a line holding mark (when not ""), else once it runs; then SIGKILL wait
// later, during the graceful shutdown the SIGTERM started, unless the run
// ended first (it must then exit 0). It returns the run, whether it found
// jobs a killed run left running, whether the SIGKILL ended it, and how
// long it lived after the SIGTERM.
func (r *soakRuns) stopKill(mark string, wait time.Duration) (c *child, recovered, killed bool, lived time.Duration) {
	r.t.Helper()
	trigger := make(chan struct{}, 1)
	c = spawnChild(r.t, r.env, func(line string) {
		if mark != "" && strings.Contains(line, mark) {
			select {
			case trigger <- struct{}{}:
			default:
			}
		}
	})
	r.runs = append(r.runs, c)
	select {
	case <-trigger:
	case <-c.ready:
	case <-c.exited:
		r.t.Fatalf("pinbot exited before running: %v\n%s", c.err, c.stderr())
	case <-r.ctx.Done():
		r.t.Fatalf("pinbot not running: %v\n%s", r.ctx.Err(), c.stderr())
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		r.t.Fatal(err)
	}
	termAt := time.Now()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-c.exited:
	case <-timer.C:
		// A process that exited but was not waited for yet takes the
		// signal without effect, one waited for refuses it: c.err tells.
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
		<-c.exited
	case <-r.ctx.Done():
		r.t.Fatalf("pinbot did not stop: %v\n%s", r.ctx.Err(), c.stderr())
	}
	lived = time.Since(termAt)
	var ee *exec.ExitError
	if errors.As(c.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			killed = true
		}
	}
	if !killed && c.err != nil {
		r.t.Errorf("pinbot after SIGTERM: %v, want exit status 0\n%s", c.err, c.stderr())
	}
	r.settled()
	return c, strings.Contains(c.stderr(), logRecovered), killed, lived
}

// aboutToRun is how soon a queued pin that is about to run starts: the
// kills come from that long before the first due time on.
const aboutToRun = 200 * time.Millisecond

// soakRun returns a soak's cycles, from the environment variable
// cyclesEnv (def when unset), and its seed, from seedEnv (the clock's
// when unset, for the log to name).
func soakRun(t *testing.T, cyclesEnv string, def int, seedEnv string) (cycles int, seed uint64) {
	t.Helper()
	cycles = def
	if v := os.Getenv(cyclesEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of cycles", cyclesEnv, v)
		}
		cycles = n
	}
	seed = uint64(time.Now().UnixNano())
	if v := os.Getenv(seedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned number", seedEnv, v)
		}
		seed = n
	}
	return cycles, seed
}

// soakUsers is how many users, each with an account, a run of cycles
// needs: every kill leaves a few slots reserved until their leases end
// or their pins are found (soakLease, longer than the window), so that
// accounts fill up within a cycle, and every cycle must still find
// accounts with room.
func soakUsers(cycles int) int { return 6 + cycles }

// soakCounts are what the cycles did, for the checks at the end.
type soakCounts struct {
	// dueKills are SIGKILLs with pins queued in their cycle due (running
	// or about to run) and not all made; runningKills those after which
	// the next run found running jobs.
	dueKills, runningKills int
	// stopKills are SIGKILLs during a graceful shutdown that began right
	// after a start; stopKillsRecovered those of runs that had found
	// running jobs.
	stopKills, stopKillsRecovered int
	// late are pins Pinterest made after the run that asked for them
	// died.
	late int
}

// TestDisgoGatewayCrashSoak runs the bot as a child process against
// stand-ins living in the test, under a limit of soakLimit pins per
// soakWindow (a short window, so that slots free and queued pins come
// due within every cycle), with users in two guilds pinning to their own
// Pinterest accounts through a slow Pinterest (slowPins: 100–400 ms a
// pin, half the requests carried on after the bot dies, one answer in
// loseOneIn lost). Half the users take no direct messages, so the
// results of their queued pins go to channels; half queue through their
// /settings default, the others through when_full:queue.
//
// Each cycle, the two users with the most room queue (see queueWave): a
// /pin of ten pictures from a channel of one guild pins what fits and
// queues the rest, then /pin batches from a channel of the other guild
// queue too. Queued pins come due one window after the first of those
// pins; around then, while they run, two other users fire /pin batches
// of immediate pins and the bot is SIGKILLed. The next start finds the
// queued pins it left running. Every third cycle the bot stays down for
// a window first, so that the pins queued on every account come due at
// the start, and that start is stopped at once (SIGTERM as its engine
// starts, once it is built, at the first running job it finds or once it
// runs) and SIGKILLed during its shutdown; now and then a start is
// SIGKILLed right after it runs. After each restart on the same data
// directory the test checks the promise from Pinterest's side, whose
// ledger outlives every bot: no account ever holds more than soakLimit
// pins in a rolling window, and the bot's count never falls below what
// Pinterest made in the last window; and every cycle made pins and
// queued some.
//
// The bot runs with a short lease, slot margin and listing lag
// (soakLease, soakSlotMargin, soakListingLag), so that a job found
// running is looked for on Pinterest within the last run at latest. The
// last run queues too and runs its queue to the end, waits until no job
// is running or waiting, then stops cleanly, and the test checks the
// whole run against Pinterest's ledger, the messages the Discord
// stand-in holds and the queue left in the data directory (see
// soak.audit): no window over the limit, no picture pinned twice to an
// account, every job found running after a kill resolved (done with the
// URL of its pin when Pinterest holds it, run again and done when
// Pinterest lacks it, none "may exist"), every queued pin made, none
// lost, every result in the user's DMs or in the channel where its /pin
// ran. With 24 cycles, at least 20 kills come with queued pins due, and
// some during a shutdown right after a start that found running jobs.
//
// PINBOT_BOT_SOAK_CYCLES sets the number of cycles (default 4);
// PINBOT_BOT_SOAK_SEED replays a run's random choices (not its timing).
func TestDisgoGatewayCrashSoak(t *testing.T) {
	t.Parallel()
	cycles, seed := soakRun(t, soakCyclesEnv, defaultSoakCycles, soakSeedEnv)
	nUsers := soakUsers(cycles)
	t.Logf("%d cycles, %d users, seed %d (%s=%d replays it)", cycles, nUsers, seed, soakSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0x70696e626f74))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+time.Duration(cycles)*30*time.Second)
	defer cancel()

	dc := discordtest.NewServer()
	defer dc.Close()
	ps := pinteresttest.NewServer()
	defer ps.Close()

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

	s := &soak{t: t, ctx: ctx, dc: dc, ps: ps, rng: rng, phase: "start",
		guilds: map[snowflake.ID]string{}, pictures: map[string]picture{},
		pinners: map[snowflake.ID]*soakUser{}, queued: map[pinKey]*soakQueued{}, owners: map[snowflake.ID]*soakUser{}}
	guilds := s.addGuilds(soakGuild{"soak", []string{"general", "art"}}, soakGuild{"elsewhere", []string{"general"}})
	s.addUsers(nUsers, "soak", 5100, guilds)

	dir := t.TempDir()
	keyFile := writeKey(t, dir, 32, 0o600)
	dataDir := filepath.Join(dir, "data")
	env := append(standInEnv(t, dc, ps, api.URL+"/v5", keyFile, dataDir),
		"PINBOT_PIN_LIMIT="+strconv.Itoa(soakLimit), "PINBOT_PIN_WINDOW="+soakWindow.String(),
		// The soak pins far more than a user's allowance, and links more
		// accounts from one address than the listener allows.
		"PINBOT_USER_RATE=off", "PINBOT_HTTP_RATE=off",
		"PINBOT_LEASE="+soakLease.String(), "PINBOT_SLOT_MARGIN="+soakSlotMargin.String(),
		"PINBOT_LISTING_LAG="+soakListingLag.String())
	runs := &soakRuns{t: t, ctx: ctx, env: env, conns: conns}

	// A run still going when the test ends (it failed) is killed, after
	// the stand-ins' defers are registered, so before they close.
	defer func() {
		for _, r := range runs.runs {
			select {
			case <-r.exited:
			default:
				_ = r.cmd.Process.Kill()
				<-r.exited
			}
		}
	}()
	cur := runs.start()
	var last *child // the run killed last, for the log of a failure
	defer func() {
		if t.Failed() {
			if last != nil {
				t.Logf("the run killed last:\n%s", last.stderr())
			}
			t.Logf("the current run:\n%s", cur.stderr())
		}
	}()
	for _, u := range s.users {
		ps.SetLoggedIn(u.account)
		inv := func(d discordtest.InvocationData) discordtest.Invocation { return s.inv(u, s.chans[0], d) }
		s.all = append(s.all, linkWithBoard(ctx, t, dc, inv, u.name, u.boardID, u.boardName)...)
		s.queueByDefault(u, inv)
	}
	s.ledger()

	var n soakCounts
	for c := 1; c <= cycles; c++ {
		s.cycle = c
		pinsBefore := len(ps.Pins())
		queuers, bursters := s.roles()
		if len(queuers) == 0 {
			t.Fatalf("cycle %d: no account has room for three pins (counts %v): the soak needs more users", c, s.ledger())
		}

		s.phase = fmt.Sprintf("cycle %d queue", c)
		queued := s.queueWave(queuers)
		if queued == 0 {
			t.Errorf("cycle %d: nothing was queued: the cycle tested no queue", c)
		}
		due := s.firstDue(queuers)
		if due.IsZero() {
			due = time.Now()
		}

		// Around the first due time, batches of immediate pins, then the
		// kill: mostly while the batches are in flight (at once one time
		// in six), and while queued pins run or are about to.
		s.phase = fmt.Sprintf("cycle %d batches", c)
		killAt := due.Add(-aboutToRun + time.Duration(rng.Int64N(int64(2*time.Second))))
		fireAt := killAt
		if rng.IntN(6) != 0 {
			fireAt = killAt.Add(-time.Duration(rng.Int64N(int64(2 * time.Second))))
		}
		runs.pause(time.Until(fireAt))
		var batches []*discordtest.Interaction
		for _, u := range bursters {
			for range 1 + rng.IntN(2) {
				batches = append(batches, s.pin(u, s.chans[rng.IntN(len(s.chans))], 2, "skip"))
			}
		}
		runs.pause(time.Until(killAt))
		pending := len(s.missing())
		cur.kill()
		killedAt := time.Now()
		if pending > 0 && !killedAt.Before(due.Add(-aboutToRun)) {
			n.dueKills++
		}
		before := len(ps.Pins())
		runs.settled()
		after := len(ps.Pins()) - before
		n.late += after
		done := s.answered(batches)
		last = cur

		// The next start finds what the kill left running. Every third
		// cycle it is stopped at once and SIGKILLed during its shutdown;
		// now and then a start is SIGKILLed right after it runs.
		s.phase = fmt.Sprintf("cycle %d restart", c)
		var next *child
		restart := ""
		switch {
		case c%3 == 2:
			// The bot stays down for a window first: at the start, the
			// pins queued on every account come due at once, and take the
			// workers that the jobs found running wait for.
			runs.pause(soakWindow)
			at := stopMarks[rng.IntN(len(stopMarks))]
			wait := time.Duration(rng.Int64N(int64(40 * time.Millisecond)))
			run, recovered, killed, lived := runs.stopKill(at.mark, wait)
			next, last = run, run
			restart = fmt.Sprintf("down for a window, then stopped at once (SIGTERM %s), ", at.name)
			switch {
			case killed:
				n.stopKills++
				if recovered {
					n.stopKillsRecovered++
				}
				restart += fmt.Sprintf("SIGKILLed %v into its shutdown", lived.Round(time.Millisecond))
			default:
				restart += fmt.Sprintf("it exited after %v", lived.Round(time.Millisecond))
			}
			if recovered {
				restart += ", having found running jobs"
			}
			restart += "; "
		case rng.IntN(4) == 0:
			early := runs.start()
			wait := time.Duration(rng.Int64N(int64(50 * time.Millisecond)))
			runs.pause(wait)
			early.kill()
			runs.settled()
			next, last = early, early
			restart = fmt.Sprintf("a start-up kill %v after running; ", wait.Round(time.Millisecond))
		}
		cur = runs.start()
		if next == nil {
			next = cur
		}
		if strings.Contains(next.stderr(), logRecovered) {
			n.runningKills++
			restart += "the next start found running jobs; "
		}
		counts := s.ledger()
		made := len(ps.Pins()) - pinsBefore
		if made == 0 {
			t.Errorf("cycle %d made no pin: it tested nothing", c)
		}
		t.Logf("cycle %d: %d queued; killed %v after the first due time with %d queued pins not made, %d of %d batches answered, %d pins made after the kill; %s%d pins made in the cycle; counts %s",
			c, queued, killedAt.Sub(due).Round(time.Millisecond), pending, done, len(batches), after, restart, made, counts)
	}

	// The last run queues too, and runs its queue to the end: what it
	// pins, and what the kills left, reaches the users when it stops
	// cleanly, which sends what the bot gathered for them.
	s.cycle++
	s.phase = "final queue"
	queuers, _ := s.roles()
	if len(queuers) == 0 {
		t.Fatalf("no account has room for three pins at the end (counts %v): the soak needs more users", s.ledger())
	}
	t.Logf("final queue: %d queued", s.queueWave(queuers))
	s.waitQueued()
	// Every job the kills left running is due to be looked for within
	// this run: wait until each has ended.
	s.phase = "final resolve"
	s.waitResolved(layout{dir: dataDir})
	s.phase = "end"
	cur.stop(ctx)
	runs.settled()
	detached, dropped, lost := slow.counts()
	t.Logf("end: %d kills with queued pins due, %d after which the next start found running jobs, %d during a shutdown right after a start (%d of runs that had found running jobs); %d pins made after their bot died, %d POSTs forwarded detached, %d dropped, %d answers lost",
		n.dueKills, n.runningKills, n.stopKills, n.stopKillsRecovered, n.late, detached, dropped, lost)
	res := s.audit(layout{dir: dataDir}, runs.runs)
	t.Logf("jobs found running after a kill: %d, resolved: %d found on Pinterest, %d proven absent and run again; %d no longer kept",
		res.running, res.found, res.requeued, res.unkept)

	// The cycles did what they are for: with 24 cycles, 20 kills with
	// queued pins due, some of them during a shutdown right after a start
	// that found running jobs.
	if want := cycles * 5 / 6; n.dueKills < want {
		t.Errorf("%d kills with queued pins due, want at least %d", n.dueKills, want)
	}
	if want := cycles / 8; n.stopKillsRecovered < want {
		t.Errorf("%d kills during a shutdown right after a start that found running jobs, want at least %d", n.stopKillsRecovered, want)
	}

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
