package bot

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/internal/limit/schedule/scheduletest"
)

// digestWorld is a world whose engine hands its queued pins to the test
// (see onJobTo), whose digests keep their lines in the links store's
// outbox, as the program's do, on a fake clock; cfg is the bot's
// configuration, to build the bot of a later run on the same stores.
type digestWorld struct {
	*world
	started chan actors.Job
	clock   *scheduletest.Clock
	cfg     Config
}

func newDigestWorld(t *testing.T, opts ...func(*worldOptions)) *digestWorld {
	t.Helper()
	dw := &digestWorld{clock: scheduletest.NewClock(t0)}
	var o worldOptions
	for _, f := range opts {
		f(&o)
	}
	dw.started = onJobTo(&o)
	o.bot = func(c *Config) {
		c.DigestClock = dw.clock
		c.Outbox = c.Links.Outbox()
		dw.cfg = *c
	}
	dw.world = newWorld(t, o)
	return dw
}

// restart builds the bot of the next run on the world's stores, with a
// digest clock of its own, closed at the test's end.
func (dw *digestWorld) restart() (*Bot, *scheduletest.Clock) {
	dw.t.Helper()
	cfg := dw.cfg
	clock := scheduletest.NewClock(dw.clock.Now())
	cfg.DigestClock = clock
	b, err := New(cfg)
	if err != nil {
		dw.t.Fatal(err)
	}
	dw.t.Cleanup(func() { _ = b.Close(context.Background()) })
	return b, clock
}

// queuePins fills the account "acct" and queues, straight through the
// engine, one pin of a new one-image message per channel, each run from
// that channel by user; it returns the jobs once the engine handed them
// out, in that order.
func (dw *digestWorld) queuePins(user snowflake.ID, channels ...discordtest.Channel) []actors.Job {
	dw.t.Helper()
	dw.fill("acct", 100)
	var payloads [][]byte
	for _, ch := range channels {
		m := dw.addImages(ch.ID, 1, "a cat in "+ch.Name)
		q := queuedPin{Guild: ch.GuildID, Channel: ch.ID, Message: m.ID, Image: 1, Images: 1, User: user, From: ch.ID, Board: "bacct"}
		payloads = append(payloads, q.encode())
	}
	qd, err := dw.engine.Enqueue(dw.ctx, "acct", payloads)
	if err != nil || len(qd.Jobs) != len(channels) {
		dw.t.Fatalf("Enqueue: %+v, %v", qd, err)
	}
	dw.setClocks(qd.Jobs[len(qd.Jobs)-1].Due)
	byID := make(map[uint64]actors.Job)
	for range channels {
		select {
		case j := <-dw.started:
			byID[j.ID] = j
		case <-dw.ctx.Done():
			dw.t.Fatal("the queued pins did not start")
		}
	}
	out := make([]actors.Job, len(qd.Jobs))
	for i, j := range qd.Jobs {
		out[i] = byID[j.ID]
	}
	return out
}

// outboxLines returns the lines the links store's outbox holds.
func (dw *digestWorld) outboxLines() []digest.Line {
	dw.t.Helper()
	var out []digest.Line
	if err := dw.links.Outbox().Lines(dw.ctx, func(l digest.Line) error {
		out = append(out, l)
		return nil
	}); err != nil {
		dw.t.Fatal(err)
	}
	return out
}

// sendDigests lets the digests' gathering delay pass, then closes the
// bot, which waits until they are sent.
func (dw *digestWorld) sendDigests() {
	dw.t.Helper()
	if err := dw.clock.WaitTimers(dw.ctx, 1); err != nil {
		dw.t.Fatal(err)
	}
	dw.clock.Advance(digest.DefaultGather)
	if err := dw.bot.Close(dw.ctx); err != nil {
		dw.t.Fatal(err)
	}
}

// otherServer adds a second guild with a public channel, and user as a
// member.
func (dw *digestWorld) otherServer(user snowflake.ID) discordtest.Channel {
	dw.t.Helper()
	g, err := dw.dc.AddGuild(discordtest.Guild{Name: "other"})
	if err != nil {
		dw.t.Fatal(err)
	}
	if _, err := dw.dc.AddMember(discordtest.Member{GuildID: g.ID, UserID: user}); err != nil {
		dw.t.Fatal(err)
	}
	ch, err := dw.dc.AddChannel(discordtest.Channel{GuildID: g.ID, Name: "public"})
	if err != nil {
		dw.t.Fatal(err)
	}
	return ch
}

// privateChannel adds a channel of the world's guild that only user and
// the bot may view.
func (dw *digestWorld) privateChannel(user snowflake.ID) discordtest.Channel {
	dw.t.Helper()
	ch, err := dw.dc.AddChannel(discordtest.Channel{GuildID: dw.guild.ID, Name: "private", Overwrites: []discordtest.Overwrite{
		discordtest.RoleOverwrite(dw.guild.ID, 0, discord.PermissionViewChannel),
		discordtest.MemberOverwrite(dw.dc.BotUserID(), discord.PermissionViewChannel, 0),
		discordtest.MemberOverwrite(user, discord.PermissionViewChannel, 0),
	}})
	if err != nil {
		dw.t.Fatal(err)
	}
	return ch
}

// channelTexts returns the contents of a channel's messages.
func (dw *digestWorld) channelTexts(ch discordtest.Channel) []string {
	var out []string
	for _, m := range dw.dc.Messages(ch.ID) {
		if !strings.HasPrefix(m.Content, "a cat in ") {
			out = append(out, m.Content)
		}
	}
	return out
}

// TestQueuedPinResultsInOwnChannels: with DMs closed, the results of pins
// queued from a private channel of one server and a public channel of
// another each go to the channel where their command ran, never to the
// other server's.
func TestQueuedPinResultsInOwnChannels(t *testing.T) {
	dw := newDigestWorld(t)
	user := dw.addUser("alice")
	dw.link(user, "acct", "alice")
	dw.dc.SetDMsOpen(user, false)
	private, public := dw.privateChannel(user), dw.otherServer(user)
	jobs := dw.queuePins(user, private, public)
	for _, j := range jobs {
		dw.bot.RunJob(j)
	}
	dw.sendDigests()

	for _, c := range []struct {
		ch           discordtest.Channel
		mine, theirs actors.Job
	}{{private, jobs[0], jobs[1]}, {public, jobs[1], jobs[0]}} {
		got := dw.channelTexts(c.ch)
		mineQ, _ := decodeQueuedPin(c.mine.Payload)
		theirsQ, _ := decodeQueuedPin(c.theirs.Payload)
		if len(got) != 1 || !strings.HasPrefix(got[0], "<@"+user.String()+">, Pinbot could not send you a direct message:\nQueued pins that ran:\n✅ ") ||
			!strings.Contains(got[0], mineQ.ref().jumpURL()) || strings.Contains(got[0], theirsQ.ref().jumpURL()) {
			t.Errorf("channel %s holds %q, want its own result only", c.ch.Name, got)
		}
	}
	if got := dw.channelTexts(dw.channel); len(got) != 0 {
		t.Errorf("#general holds %q", got)
	}
	if left := dw.outboxLines(); len(left) != 0 {
		t.Errorf("outbox holds %+v after delivery", left)
	}
}

// TestQueuedPinResultNotWhereUnreadable: with DMs closed, a result is not
// posted in the channel where its command ran once the user can no
// longer read it (nor anywhere else); the results of the user's other
// channels still go to theirs.
func TestQueuedPinResultNotWhereUnreadable(t *testing.T) {
	dw := newDigestWorld(t)
	user := dw.addUser("alice")
	dw.link(user, "acct", "alice")
	dw.dc.SetDMsOpen(user, false)
	private := dw.privateChannel(user)
	jobs := dw.queuePins(user, private, dw.channel)
	for _, j := range jobs {
		dw.bot.RunJob(j)
	}
	// Alice loses the private channel before the digest goes; Pinbot
	// keeps it.
	private.Overwrites = private.Overwrites[:2]
	if _, err := dw.dc.AddChannel(private); err != nil {
		t.Fatal(err)
	}
	dw.sendDigests()

	if got := dw.channelTexts(private); len(got) != 0 {
		t.Errorf("the channel alice can no longer read holds %q", got)
	}
	q, _ := decodeQueuedPin(jobs[0].Payload)
	if got := dw.channelTexts(dw.channel); len(got) != 1 || strings.Contains(got[0], q.ref().jumpURL()) {
		t.Errorf("#general holds %q, want its own result only", got)
	}
	if !strings.Contains(dw.logs.String(), "digest not posted in the channel where the commands ran") {
		t.Errorf("no log line for the result not posted:\n%s", dw.logs.String())
	}
	// It remains in /queue.
	if js := dw.jobs("acct"); len(js) != 2 || js[0].State != actors.JobDone {
		t.Errorf("jobs %+v", js)
	}
}

// commitWatch is an engine Observer that also calls onCommit whenever the
// engine records a pin.
type commitWatch struct {
	actors.Observer
	onCommit func()
}

func (c commitWatch) Committed() {
	c.Observer.Committed()
	c.onCommit()
}

// TestQueuedPinLineKeptBeforeFinish: a queued pin's line is in the outbox
// before the engine records its outcome, so that a crash between the two
// loses no news.
func TestQueuedPinLineKeptBeforeFinish(t *testing.T) {
	var (
		dw    *digestWorld
		armed atomic.Bool
		seen  = make(chan []digest.Line, 1)
	)
	dw = newDigestWorld(t, func(o *worldOptions) {
		o.engine = func(c *actors.Config) {
			c.Observer = commitWatch{Observer: c.Observer, onCommit: func() {
				if armed.Load() {
					seen <- dw.outboxLines()
				}
			}}
		}
	})
	user := dw.addUser("alice")
	dw.link(user, "acct", "alice")
	j := dw.queuePins(user, dw.channel)[0]
	armed.Store(true)
	dw.bot.RunJob(j)
	select {
	case lines := <-seen:
		if len(lines) != 1 || lines[0].Key != (digest.Key{Account: "acct", Job: j.ID}) {
			t.Fatalf("when the engine recorded the pin, the outbox held %+v; want the job's line", lines)
		}
	default:
		t.Fatal("the engine recorded no pin")
	}
}

// TestQueuedPinResultSurvivesRestart: a result gathered and not yet sent
// when the bot stopped (a crash: its digest never went) is sent by the
// next run, once; the run after sends nothing.
func TestQueuedPinResultSurvivesRestart(t *testing.T) {
	dw := newDigestWorld(t)
	user := dw.addUser("alice")
	dw.link(user, "acct", "alice")
	j := dw.queuePins(user, dw.channel)[0]
	dw.bot.RunJob(j)
	kept := dw.outboxLines()
	if len(kept) != 1 || kept[0].Key != (digest.Key{Account: "acct", Job: j.ID}) || !strings.HasPrefix(kept[0].Text, "✅ ") {
		t.Fatalf("outbox holds %+v, want the job's line", kept)
	}

	b2, clock2 := dw.restart()
	if err := clock2.WaitTimers(dw.ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock2.Advance(digest.DefaultGather)
	dms, err := dw.dc.WaitDMs(dw.ctx, user, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(dms) != 1 || dms[0].Content != "Queued pins that ran:\n"+kept[0].Text {
		t.Fatalf("DMs %+v", dms)
	}
	if err := b2.Close(dw.ctx); err != nil {
		t.Fatal(err)
	}
	if left := dw.outboxLines(); len(left) != 0 {
		t.Fatalf("outbox holds %+v after delivery", left)
	}

	b3, _ := dw.restart()
	if st := b3.digest.Stats(); st.Resumed != 0 || st.Users != 0 {
		t.Errorf("the third run's digests: %+v, want nothing to send", st)
	}
	if err := b3.Close(dw.ctx); err != nil {
		t.Fatal(err)
	}
	if dms := dw.dc.DMs(user); len(dms) != 1 {
		t.Errorf("%d DMs, want the result once", len(dms))
	}
}

// TestRecoveredJobReportsFirstLine: a job whose result was kept before a
// crash stopped its run (the pin made) is handed out again as recovered
// and, Pinterest's listing failing, ends unknown; the user reads the
// result kept first, not "the pin may exist".
func TestRecoveredJobReportsFirstLine(t *testing.T) {
	dw := newDigestWorld(t)
	user := dw.addUser("alice")
	dw.link(user, "acct", "alice")
	j := dw.queuePins(user, dw.channel)[0]
	q, _ := decodeQueuedPin(j.Payload)
	first := jobLine(q, jobResult{Outcome: jobPinned, PinURL: "https://www.pinterest.com/pin/1/"}, "alice")
	if _, err := dw.links.Outbox().Put(dw.ctx, digest.Line{Key: digest.Key{Account: "acct", Job: j.ID}, User: user,
		Guild: q.Guild, Channel: q.From, Text: first}); err != nil {
		t.Fatal(err)
	}
	j.Recovered = true
	dw.failLookups()
	dw.bot.RunJob(j)
	dw.bot.resolving.Wait()
	dw.sendDigests()
	dms := dw.dc.DMs(user)
	if len(dms) != 1 || dms[0].Content != "Queued pins that ran:\n"+first {
		t.Fatalf("DMs %+v, want the line kept first", dms)
	}
	if r, ok := decodeJobResult(dw.jobs("acct")[0].Result); !ok || r.Outcome != jobUnknown {
		t.Errorf("the job's result %+v, want unknown (its slot kept)", r)
	}
}

// TestRecoveredJobNamesAccount: the line of a recovered job that ends
// unknown (Pinterest's listing failing) names the account it may have
// been pinned on.
func TestRecoveredJobNamesAccount(t *testing.T) {
	dw := newDigestWorld(t)
	user := dw.addUser("alice")
	dw.link(user, "acct", "alice_pins")
	j := dw.queuePins(user, dw.channel)[0]
	j.Recovered = true
	dw.failLookups()
	dw.bot.RunJob(j)
	dw.bot.resolving.Wait()
	dw.sendDigests()
	dms := dw.dc.DMs(user)
	if len(dms) != 1 || !strings.Contains(dms[0].Content, "· @alice\\_pins · Pinbot restarted while sending it") {
		t.Fatalf("DMs %+v, want the recovered pin's line naming @alice_pins", dms)
	}
}

// TestRetriedJobKeepsNoLine: a queued pin that goes back to the queue
// (the bot closing) tells nobody and keeps nothing in the outbox.
func TestRetriedJobKeepsNoLine(t *testing.T) {
	dw := newDigestWorld(t)
	user := dw.addUser("alice")
	dw.link(user, "acct", "alice")
	j := dw.queuePins(user, dw.channel)[0]
	if err := dw.bot.Close(dw.ctx); err != nil {
		t.Fatal(err)
	}
	dw.bot.RunJob(j)
	if js := dw.jobs("acct"); len(js) != 1 || js[0].State != actors.JobWaiting {
		t.Fatalf("jobs %+v, want it waiting again", js)
	}
	if left := dw.outboxLines(); len(left) != 0 {
		t.Errorf("outbox holds %+v", left)
	}
}
