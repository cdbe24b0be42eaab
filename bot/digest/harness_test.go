package digest

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/disgoorg/disgo/rest"
	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors/schedule/scheduletest"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/internal/logtest"
)

var t0 = time.Date(2026, time.November, 16, 12, 0, 0, 0, time.UTC)

// harness is a Sender on a fake clock, talking to a Discord stand-in on
// the same clock that enforces Discord's per-channel message limit. The
// world has one guild, a channel everyone may post in (general), and
// members.
type harness struct {
	t       *testing.T
	clock   *scheduletest.Clock
	srv     *discordtest.Server
	api     rest.Rest
	s       *Sender
	logs    *logtest.Buffer
	guild   discordtest.Guild
	general discordtest.Channel
}

// newHarness starts a stand-in and a Sender with cfg, whose REST client
// takes opts after the harness's own; Close runs at the test's end if the
// test did not call it.
func newHarness(t *testing.T, cfg Config, opts ...rest.ClientConfigOpt) *harness {
	t.Helper()
	h := &harness{t: t, clock: scheduletest.NewClock(t0), logs: &logtest.Buffer{}}
	h.srv = discordtest.NewServer(
		discordtest.WithClock(h.clock.Now),
		discordtest.WithChannelRateLimit(discordtest.ChannelMessageLimit, discordtest.ChannelMessageWindow),
	)
	t.Cleanup(h.srv.Close)
	// disgo's own rate limiter would wait out X-RateLimit-Reset-After in
	// real time; the Sender's schedule is what is under test, and a 429
	// reaches it at once.
	h.api = rest.New(rest.NewClient(h.srv.Token(), append([]rest.ClientConfigOpt{
		rest.WithURL(h.srv.APIURL()),
		rest.WithRateLimiter(rest.NewNoopRateLimiter()),
		rest.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	}, opts...)...))
	var err error
	if h.guild, err = h.srv.AddGuild(discordtest.Guild{}); err != nil {
		t.Fatal(err)
	}
	if h.general, err = h.srv.AddChannel(discordtest.Channel{GuildID: h.guild.ID, Name: "general"}); err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(zerolog.MultiLevelWriter(h.logs, zerolog.NewTestWriter(t))).Level(zerolog.InfoLevel)
	if h.s, err = New(h.api, h.clock, log, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // nothing is left to send in a test that did not close
		_ = h.s.Close(ctx)
	})
	return h
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
// clock moves: no request in flight, none due in the runner, no wakeup
// due. The caller holds s.mu.
func (s *Sender) quietLocked(now time.Time) bool {
	if s.inflight > 0 {
		return false
	}
	for _, at := range s.queued {
		if !at.After(now) {
			return false
		}
	}
	return len(s.wakeups) == 0 || s.wakeups[0].at.After(now)
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
	if len(s.wakeups) > 0 && (!ok || s.wakeups[0].at.Before(next)) {
		next, ok = s.wakeups[0].at, true
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
