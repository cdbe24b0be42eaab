package digest

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/rest"

	"github.com/disgoorg/snowflake/v2"
	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/internal/limit/schedule/scheduletest"
	"github.com/pinbot/pinbot/internal/logtest"
)

var t0 = time.Date(2026, time.November, 16, 12, 0, 0, 0, time.UTC)

// harness is a Sender on a fake clock, talking to a Discord stand-in on
// the same clock that enforces Discord's per-channel message limit, with
// an Outbox in memory and an Access that reads the stand-in's
// permissions. The world has one guild, a channel everyone may post in
// (general), and members.
type harness struct {
	t       *testing.T
	clock   *scheduletest.Clock
	srv     *discordtest.Server
	api     *discordio.REST
	s       *Sender
	log     zerolog.Logger
	cfg     Config
	logs    *logtest.Buffer
	outbox  *memOutbox
	guild   discordtest.Guild
	general discordtest.Channel

	mu         sync.Mutex
	guildOf    map[snowflake.ID]snowflake.ID // channel → guild, for CanRead
	checks     int                           // CanRead calls
	checkFails int                           // CanRead calls still to fail
	jobs       uint64                        // the last key's job ID
}

// newHarness starts a stand-in and a Sender with cfg, whose REST client
// takes opts after the harness's own; Close runs at the test's end if the
// test did not call it.
func newHarness(t *testing.T, cfg Config, opts ...rest.ClientConfigOpt) *harness {
	t.Helper()
	h := &harness{t: t, clock: scheduletest.NewClock(t0), logs: &logtest.Buffer{}, cfg: cfg,
		outbox: newMemOutbox(), guildOf: make(map[snowflake.ID]snowflake.ID)}
	h.srv = discordtest.NewServer(
		discordtest.WithClock(h.clock.Now),
		discordtest.WithChannelRateLimit(discordtest.ChannelMessageLimit, discordtest.ChannelMessageWindow),
	)
	t.Cleanup(h.srv.Close)
	// disgo's own rate limiter would wait out X-RateLimit-Reset-After in
	// real time; the Sender's schedule is what is under test, and a 429
	// reaches it at once.
	h.api = discordio.NewRESTOver(0, rest.NewClient(h.srv.Token(), append([]rest.ClientConfigOpt{
		rest.WithURL(h.srv.APIURL()),
		rest.WithRateLimiter(rest.NewNoopRateLimiter()),
		rest.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	}, opts...)...), noMentions)
	var err error
	if h.guild, err = h.srv.AddGuild(discordtest.Guild{}); err != nil {
		t.Fatal(err)
	}
	h.general = h.channel(discordtest.Channel{GuildID: h.guild.ID, Name: "general"})
	h.log = zerolog.New(zerolog.MultiLevelWriter(h.logs, zerolog.NewTestWriter(t))).Level(zerolog.InfoLevel)
	h.s = h.newSender()
	return h
}

// newSender starts a Sender on the harness's API, clock, Outbox and
// Access, closed at the test's end if the test did not close it.
func (h *harness) newSender() *Sender {
	h.t.Helper()
	s, err := New(h.api, h.clock, h.log, h.cfg, WithOutbox(h.outbox), WithAccess(h))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // nothing is left to send in a test that did not close
		_ = s.Close(ctx)
	})
	return s
}

// channel adds a channel to the stand-in, known to CanRead.
func (h *harness) channel(c discordtest.Channel) discordtest.Channel {
	h.t.Helper()
	c, err := h.srv.AddChannel(c)
	if err != nil {
		h.t.Fatal(err)
	}
	h.mu.Lock()
	h.guildOf[c.ID] = c.GuildID
	h.mu.Unlock()
	return c
}

// CanRead is the harness's Access: whether the stand-in gives the user
// VIEW_CHANNEL and READ_MESSAGE_HISTORY in a channel of that guild. The
// first checkFails calls fail.
func (h *harness) CanRead(_ context.Context, guildID, channelID, userID snowflake.ID) (bool, error) {
	h.mu.Lock()
	h.checks++
	fail := h.checkFails > 0
	if fail {
		h.checkFails--
	}
	g, ok := h.guildOf[channelID]
	h.mu.Unlock()
	if fail {
		return false, errors.New("harness: the check failed")
	}
	if !ok || g != guildID {
		return false, nil
	}
	p, err := h.srv.Permissions(channelID, userID)
	if errors.Is(err, discordtest.ErrUnknownMember) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return p.Has(discord.PermissionViewChannel | discord.PermissionReadMessageHistory), nil
}

// add keeps and adds a line for user, from a command run in channel (in
// the harness's guild, or the one it was added to), under a fresh key, as
// the bot does; it reports what Add does.
func (h *harness) add(user, channel snowflake.ID, text string) bool {
	h.t.Helper()
	h.mu.Lock()
	h.jobs++
	key := Key{Account: "acct", Job: h.jobs}
	guild, ok := h.guildOf[channel]
	h.mu.Unlock()
	if !ok && channel != 0 {
		guild = h.guild.ID
	}
	l := Line{Key: key, User: user, Guild: guild, Channel: channel, Text: text}
	if kept, err := h.s.Keep(context.Background(), l); err == nil {
		l = kept
	}
	return h.s.Add(l)
}

// member adds a guild member, a user the bot can open a DM with.
func (h *harness) member(name string) snowflake.ID {
	h.t.Helper()
	m, err := h.srv.AddMember(discordtest.Member{GuildID: h.guild.ID, Username: name})
	if err != nil {
		h.t.Fatal(err)
	}
	return m.UserID
}

// quietLocked reports whether the Sender has nothing to do before the
// clock moves: no request in flight, none due in the runner, no alarm
// due. The caller holds s.mu.
func (s *Sender) quietLocked(now time.Time) bool {
	if s.inflight > 0 || s.deleting > 0 || s.claiming {
		return false
	}
	for _, at := range s.queued {
		if !at.After(now) {
			return false
		}
	}
	for _, a := range s.alarms {
		if !a.At().After(now) {
			return false
		}
	}
	return true
}

// nextLocked returns the next instant the Sender has something to do at,
// and false when it has nothing. The caller holds s.mu.
func (s *Sender) nextLocked() (time.Time, bool) {
	var next time.Time
	ok := false
	for _, at := range s.queued {
		if !ok || at.Before(next) {
			next, ok = at, true
		}
	}
	for _, a := range s.alarms {
		if at := a.At(); !ok || at.Before(next) {
			next, ok = at, true
		}
	}
	return next, ok
}

// settle waits, without moving the clock, until the Sender has done all
// it can at the clock's time. 10 s of real time is a hang, not a timing
// assumption.
func (h *harness) settle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.s.waitFor(ctx, func() bool { return h.s.quietLocked(h.clock.Now()) }); err != nil {
		h.t.Fatalf("the Sender did not settle at %v: %v", h.clock.Now().Sub(t0), err)
	}
}

// step settles, then moves the clock to the Sender's next instant; it
// reports false when there is none.
func (h *harness) step() bool {
	h.t.Helper()
	h.settle()
	h.s.mu.Lock()
	next, ok := h.s.nextLocked()
	h.s.mu.Unlock()
	if ok {
		h.clock.Set(next)
	}
	return ok
}

// runUntil steps the clock until done reports true, or fails the test
// after too many steps.
func (h *harness) runUntil(done func() bool) {
	h.t.Helper()
	for i := 0; ; i++ {
		h.settle()
		if done() {
			return
		}
		if i == 100_000 || !h.step() {
			h.t.Fatalf("at %v: stuck with stats %+v", h.clock.Now().Sub(t0), h.s.Stats())
		}
	}
}

// idle reports whether the Sender has no user left.
func (h *harness) idle() bool { return h.s.Stats().Users == 0 }

// checkNoMentions fails the test unless every message carried
// allowed_mentions that allow nothing.
func checkNoMentions(t *testing.T, msgs []discordtest.Message) {
	t.Helper()
	for _, m := range msgs {
		am := m.AllowedMentions
		if am == nil || am.Parse == nil || am.Users == nil || am.Roles == nil ||
			len(am.Parse)+len(am.Users)+len(am.Roles) != 0 || am.RepliedUser {
			t.Fatalf("message %d allowed_mentions = %+v, want none at all", m.ID, am)
		}
	}
}

// contents returns the content of each message.
func contents(msgs []discordtest.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Content
	}
	return out
}

// requests returns the requests the stand-in received for route with the
// given path (empty: any).
func (h *harness) requests(route, path string) []discordtest.Request {
	var out []discordtest.Request
	for _, rq := range h.srv.Requests() {
		if rq.Route == route && (path == "" || rq.Path == path) {
			out = append(out, rq)
		}
	}
	return out
}

func messagesPath(channel snowflake.ID) string { return "/channels/" + channel.String() + "/messages" }

// linesOf returns the lines of a digest's messages after the header.
func linesOf(msgs []string) []string {
	all := strings.Split(strings.Join(msgs, "\n"), "\n")
	return all[1:]
}

// memOutbox is an Outbox in memory. Its calls fail with fail when set.
type memOutbox struct {
	mu    sync.Mutex
	lines map[Key]Line
	fail  error
}

var _ Outbox = (*memOutbox)(nil)

func newMemOutbox() *memOutbox { return &memOutbox{lines: make(map[Key]Line)} }

func (o *memOutbox) Put(_ context.Context, l Line) (Line, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fail != nil {
		return Line{}, o.fail
	}
	if first, ok := o.lines[l.Key]; ok {
		return first, nil
	}
	o.lines[l.Key] = l
	return l, nil
}

func (o *memOutbox) Delete(_ context.Context, keys []Key) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fail != nil {
		return o.fail
	}
	for _, k := range keys {
		delete(o.lines, k)
	}
	return nil
}

func (o *memOutbox) Lines(_ context.Context, fn func(Line) error) error {
	o.mu.Lock()
	if o.fail != nil {
		o.mu.Unlock()
		return o.fail
	}
	ls := make([]Line, 0, len(o.lines))
	for _, l := range o.lines {
		ls = append(ls, l)
	}
	o.mu.Unlock()
	slices.SortFunc(ls, func(a, b Line) int {
		return cmp.Or(cmp.Compare(a.Key.Account, b.Key.Account), cmp.Compare(a.Key.Job, b.Key.Job))
	})
	for _, l := range ls {
		if err := fn(l); err != nil {
			return err
		}
	}
	return nil
}

// stored returns the texts the Outbox holds, in key order.
func (o *memOutbox) stored() []string {
	var out []string
	_ = o.Lines(context.Background(), func(l Line) error {
		out = append(out, l.Text)
		return nil
	})
	return out
}
