package bot

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// eventWorld is a world whose gateway client identifies with the intents
// the bot's gateway asks for, reactions and messages, and hands each
// event to the bot on its reading goroutine as discordio.Gateway does:
// messages (created, edited, deleted) to HandleMessage, reactions to
// HandleReaction.
type eventWorld struct {
	*world
	done chan string // every auto-pin lane event's result
}

func newEventWorld(t *testing.T) *eventWorld {
	t.Helper()
	return newEventWorldWith(t, worldOptions{})
}

// newEventWorldWith is newEventWorld with o (jobs and the gateway on).
func newEventWorldWith(t *testing.T, o worldOptions) *eventWorld {
	t.Helper()
	o.jobs, o.gateway = true, true
	w := &eventWorld{world: newWorld(t, o)}
	w.done = w.watchAutopin()
	var gc discordio.GatewayConfig
	w.bot.reactionGateway(&gc)
	w.bot.autopinGateway(&gc)
	p := startEventPump(t, w.dc, w.bot, gc.Intents())
	t.Cleanup(p.close)
	return w
}

// startEventPump connects shard 0 of 1 with intents (see
// startGatewayPump).
func startEventPump(t testing.TB, dc *discordtest.Server, b *Bot, intents gateway.Intents) *pump {
	t.Helper()
	return startGatewayPump(t, dc, b, 0, 1, intents)
}

// setRule stores rules of the world's server.
func (w *eventWorld) setRule(rules ...links.AutopinRule) {
	w.t.Helper()
	if err := w.links.UpdateAutopinRules(w.ctx, w.guild.ID.String(), func([]links.AutopinRule) ([]links.AutopinRule, error) {
		return rules, nil
	}); err != nil {
		w.t.Fatal(err)
	}
}

// result waits for the next lane event's result and checks it.
func (w *eventWorld) result(what, want string) {
	w.t.Helper()
	if got := w.autopinResult(w.done); got != want {
		w.t.Fatalf("%s: result %q, want %q", what, got, want)
	}
}

// waiting returns the payloads of account's waiting jobs.
func (w *eventWorld) waiting(account string) []queuedPin {
	w.t.Helper()
	var out []queuedPin
	for _, j := range w.jobs(account) {
		if j.State != actors.JobWaiting {
			continue
		}
		q, err := decodeQueuedPin(j.Payload)
		if err != nil {
			w.t.Fatal(err)
		}
		out = append(out, q)
	}
	return out
}

// digestTo lets the digests' timers run and returns the DMs user got.
func (w *eventWorld) digestTo(user snowflake.ID, n int) []discordtest.Message {
	w.t.Helper()
	if err := w.digestClock.WaitTimers(w.ctx, 1); err != nil {
		w.t.Fatal(err)
	}
	w.digestClock.Advance(time.Minute)
	dms, err := w.dc.WaitDMs(w.ctx, user, n)
	if err != nil {
		w.t.Fatal(err)
	}
	return dms
}

// TestAutopinEditQueuesNewPictures: an edited message of an auto-pin
// channel queues its new pictures only: an edit of the text, or Discord
// unfolding the embed the message was read with, queues nothing; an
// added attachment is queued once; an edit that takes a picture out
// leaves the queued pins of the others to pin what they were queued
// for. Each picture is pinned once.
func TestAutopinEditQueuesNewPictures(t *testing.T) {
	w := newEventWorld(t)
	owner := w.addUser("owner")
	w.link(owner, "a1", "owner_art")
	w.setRule(links.AutopinRule{Channel: w.channel.ID.String(), Owner: owner.String(), Account: "a1", Board: "ba1"})
	w.fill("a1", 100)
	w.setClocks(t0.Add(time.Minute))
	poster := w.addUser("poster")
	link := "https://images.example.com/cat.png"
	embed := []discord.Embed{{Type: discord.EmbedTypeImage, URL: link, Thumbnail: &discord.EmbedResource{URL: link}}}
	m, err := w.dc.AddMessage(discordtest.Message{ChannelID: w.channel.ID, AuthorID: poster, Content: "look " + link,
		Attachments: []discordtest.Attachment{{Filename: "a.png", ContentType: "image/png"}}, Embeds: embed})
	if err != nil {
		t.Fatal(err)
	}
	w.result("the new message", autopinQueued)
	if n := len(w.waiting("a1")); n != 2 {
		t.Fatalf("%d pins queued, want 2 (the attachment and the link)", n)
	}

	text := "look again " + link
	if _, err := w.dc.EditMessage(w.channel.ID, m.ID, discordtest.MessageEdit{Content: &text}); err != nil {
		t.Fatal(err)
	}
	w.result("an edit of the text", autopinUnchanged)
	if _, err := w.dc.EditMessage(w.channel.ID, m.ID, discordtest.MessageEdit{Embeds: &embed}); err != nil {
		t.Fatal(err)
	}
	w.result("the embed unfolding again", autopinUnchanged)

	first := m.Attachments[0]
	more := []discordtest.Attachment{{ID: first.ID}, {Filename: "b.png", ContentType: "image/png"}}
	edited, err := w.dc.EditMessage(w.channel.ID, m.ID, discordtest.MessageEdit{Attachments: &more})
	if err != nil {
		t.Fatal(err)
	}
	w.result("an added attachment", autopinQueued)
	qs := w.waiting("a1")
	if len(qs) != 3 {
		t.Fatalf("%d pins queued, want 3", len(qs))
	}
	if q := qs[2]; q.Key != imageKey(edited.Attachments[1].ID.String(), "") || q.Image != 2 || q.Images != 3 {
		t.Fatalf("the added picture's pin: %+v", q)
	}
	// Delivered again (a RESUME replays it): nothing more.
	w.bot.HandleMessage(discordio.Message{Kind: discordio.MessageUpdated, GuildID: w.guild.ID, ChannelID: w.channel.ID, MessageID: m.ID, AuthorID: poster})
	w.result("the same edit again", autopinUnchanged)

	// The first attachment taken out: the second is now the first
	// picture, and its pin finds it by its key.
	second := []discordtest.Attachment{{ID: edited.Attachments[1].ID}}
	if _, err := w.dc.EditMessage(w.channel.ID, m.ID, discordtest.MessageEdit{Attachments: &second}); err != nil {
		t.Fatal(err)
	}
	w.result("an attachment taken out", autopinUnchanged)

	w.setClocks(t0.Add(w.engine.Config().Window))
	outcomes := map[string]string{} // by key
	for range 3 {
		j := w.nextJob()
		q, _ := decodeQueuedPin(j.Payload)
		r, _ := decodeJobResult(w.jobOf("a1", j.ID).Result)
		outcomes[q.Key] = r.Outcome
	}
	if got := outcomes[imageKey(first.ID.String(), "")]; got != jobFailed {
		t.Errorf("the pin of the attachment taken out ended %q, want %q", got, jobFailed)
	}
	if got := outcomes[imageKey(edited.Attachments[1].ID.String(), "")]; got != jobPinned {
		t.Errorf("the pin of the added attachment ended %q, want %q", got, jobPinned)
	}
	pins := w.ps.PinsFor("a1")
	if len(pins) != 2 {
		t.Fatalf("%d pins, want 2: %+v", len(pins), pins)
	}
	urls := map[string]bool{}
	for _, p := range pins {
		urls[imageKey("", p.ImageURL)] = true
	}
	if !urls[imageKey("", link)] || len(urls) != 2 {
		t.Fatalf("pinned %v, want the link and the added attachment once each", pins)
	}
	w.checkLedger("a1")
}

// TestMessageDeleteCancelsQueuedPins: deleting a message before its
// queued pins run cancels them, every user's: an auto-pin channel's and
// a pin reaction's in another channel; each user is told once in their
// digest, and Pinterest never sees them. A delete of a message nobody
// pinned does nothing.
func TestMessageDeleteCancelsQueuedPins(t *testing.T) {
	w := newEventWorld(t)
	owner := w.addUser("owner")
	w.link(owner, "a1", "owner_art")
	alice := w.addUser("alice")
	w.link(alice, "a2", "alice_art")
	if err := w.links.SetQueueWhenFull(w.ctx, alice.String(), true); err != nil {
		t.Fatal(err)
	}
	w.setRule(links.AutopinRule{Channel: w.channel.ID.String(), Owner: owner.String(), Account: "a1", Board: "ba1"})
	w.fill("a1", 100)
	w.fill("a2", 100)
	w.setClocks(t0.Add(time.Minute))
	m := w.addImages(w.channel.ID, 2, "two cats")
	w.result("the auto-pin message", autopinQueued)

	other, err := w.dc.AddChannel(discordtest.Channel{GuildID: w.guild.ID, Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	reacted := make(chan string, 4)
	w.bot.reactions.onDone = func(_ discordio.Reaction, result string) { reacted <- result }
	r := w.addImages(other.ID, 1, "one dog")
	w.result("a message of a channel without a rule", autopinIgnored)
	if err := w.dc.AddReaction(other.ID, r.ID, alice, "📌"); err != nil {
		t.Fatal(err)
	}
	if got := <-reacted; got != reactionRan {
		t.Fatalf("reaction: %q", got)
	}
	if len(w.waiting("a1")) != 2 || len(w.waiting("a2")) != 1 {
		t.Fatalf("queued %d and %d pins, want 2 and 1", len(w.waiting("a1")), len(w.waiting("a2")))
	}

	if err := w.dc.DeleteMessage(m.ID); err != nil {
		t.Fatal(err)
	}
	w.result("the auto-pin message deleted", autopinCanceled)
	if err := w.dc.DeleteMessage(r.ID); err != nil {
		t.Fatal(err)
	}
	w.result("the reacted message deleted", autopinCanceled)
	if n, k := len(w.waiting("a1")), len(w.waiting("a2")); n != 0 || k != 0 {
		t.Fatalf("%d and %d pins still queued, want none", n, k)
	}
	quiet := w.addImages(other.ID, 1, "nobody pins this")
	w.result("a message nobody pins", autopinIgnored)
	if err := w.dc.DeleteMessage(quiet.ID); err != nil {
		t.Fatal(err)
	}
	w.result("a message nobody pinned deleted", autopinIgnored)

	// alice had her reaction's report before.
	before := map[snowflake.ID]int{owner: len(w.dc.DMs(owner)), alice: len(w.dc.DMs(alice))}
	if err := w.digestClock.WaitTimers(w.ctx, 1); err != nil {
		t.Fatal(err)
	}
	w.digestClock.Advance(time.Minute)
	for u, want := range map[snowflake.ID]string{owner: "canceled 2 queued pins", alice: "canceled 1 queued pin"} {
		dms, err := w.dc.WaitDMs(w.ctx, u, before[u]+1)
		if err != nil {
			t.Fatal(err)
		}
		var told []string
		for _, dm := range dms {
			told = append(told, dm.Content)
		}
		if all := strings.Join(told, "\n"); strings.Count(all, "was deleted, so Pinbot canceled") != 1 || !strings.Contains(all, want) {
			t.Errorf("user %d was told:\n%s", u, all)
		}
	}
	// A picture posted after runs when the window frees: it is the only
	// pin Pinterest sees.
	later := w.addImages(w.channel.ID, 1, "later")
	w.result("a later message", autopinQueued)
	w.setClocks(t0.Add(w.engine.Config().Window))
	w.nextJob()
	pins := w.ps.PinsFor("a1")
	if len(pins) != 1 || !strings.Contains(pins[0].Link, later.ID.String()) || len(w.ps.PinsFor("a2")) != 0 {
		t.Fatalf("Pinterest holds %+v and %+v, want the later message's pin alone", pins, w.ps.PinsFor("a2"))
	}
	w.checkLedger("a1")
}

// TestMessageDeleteRacesRunningPin: a message deleted while its queued
// pin is being sent leaves that pin alone: it is sent once, and its slot
// stays counted.
func TestMessageDeleteRacesRunningPin(t *testing.T) {
	w := newEventWorld(t)
	owner := w.addUser("owner")
	w.link(owner, "a1", "owner_art")
	w.setRule(links.AutopinRule{Channel: w.channel.ID.String(), Owner: owner.String(), Account: "a1", Board: "ba1"})
	w.fill("a1", 100)
	w.setClocks(t0.Add(time.Minute))
	m := w.addImages(w.channel.ID, 1, "a cat")
	w.result("the message", autopinQueued)

	arrived, release, done := make(chan struct{}, 1), make(chan struct{}), make(chan struct{}, 1)
	w.ps.Inject(pinteresttest.Fault{Method: "POST", Path: pinteresttest.PathPins, Arrived: arrived, Until: release, Done: done})
	w.setClocks(t0.Add(w.engine.Config().Window))
	select {
	case <-arrived:
	case <-w.ctx.Done():
		t.Fatal("the queued pin was not sent")
	}
	if err := w.dc.DeleteMessage(m.ID); err != nil {
		t.Fatal(err)
	}
	w.result("the message deleted while its pin is sent", autopinNone)
	close(release)
	j := w.nextJob()
	if r, ok := decodeJobResult(w.jobOf("a1", j.ID).Result); !ok || r.Outcome != jobPinned {
		t.Fatalf("the running pin ended %+v, want pinned", r)
	}
	if n := len(w.ps.PinsFor("a1")); n != 1 {
		t.Fatalf("%d pins, want 1", n)
	}
	if n := w.ps.Count("POST", pinteresttest.PathPins); n != 1 {
		t.Fatalf("%d pins sent, want 1", n)
	}
	if used := w.used("a1"); used != 1 {
		t.Fatalf("count %d, want 1: the pin's slot is kept", used)
	}
}

// jobOf returns account's job id.
func (w *eventWorld) jobOf(account string, id uint64) actors.Job {
	w.t.Helper()
	for _, j := range w.jobs(account) {
		if j.ID == id {
			return j
		}
	}
	w.t.Fatalf("no job %d", id)
	return actors.Job{}
}

// TestAutopinPausesWhenUnreadable: an auto-pin channel that Pinbot can no
// longer read pauses itself when its next message comes, and one its
// owner can no longer read pauses itself when a queued pin of it runs;
// the owner is told each time; /autopin resume refuses while either
// cannot read it, and resumes once both can.
func TestAutopinPausesWhenUnreadable(t *testing.T) {
	w := newEventWorld(t)
	if err := w.bot.syncCommands(w.ctx); err != nil {
		t.Fatal(err)
	}
	owner := w.addMemberWith(w.guild.ID, "owner", discord.PermissionManageChannels)
	// resume runs /autopin resume as the owner and checks its answer.
	resume := func(want ...string) {
		t.Helper()
		got := w.autopinCmd(owner, subAutopinGo, w.channel.ID)
		for _, s := range want {
			if !strings.Contains(got, s) {
				t.Fatalf("/autopin resume answered %q", got)
			}
		}
	}
	w.link(owner, "a1", "owner_art")
	w.setRule(links.AutopinRule{Channel: w.channel.ID.String(), Owner: owner.String(), Account: "a1", Board: "ba1"})
	w.fill("a1", 100)
	w.setClocks(t0.Add(time.Minute))
	setOverwrites := func(os ...discordtest.Overwrite) {
		t.Helper()
		ch := w.channel
		ch.Overwrites = os
		if _, err := w.dc.AddChannel(ch); err != nil {
			t.Fatal(err)
		}
	}

	// Pinbot loses View Channel: the next message pauses the channel.
	setOverwrites(discordtest.MemberOverwrite(w.dc.BotUserID(), 0, discord.PermissionViewChannel))
	w.addImages(w.channel.ID, 1, "a cat Pinbot cannot see")
	w.result("a message Pinbot cannot read", autopinPaused)
	if rs := w.storedRules(); len(rs) != 1 || !rs[0].Paused {
		t.Fatalf("rules %+v, want paused", rs)
	}
	dms := w.digestTo(owner, 1)
	mustContain(t, "the owner's DM", dms[len(dms)-1].Content, "paused itself", whyBotLost)
	resume("stays paused: Pinbot cannot view it")

	// Back: resume; a message is queued.
	setOverwrites()
	resume("Resumed:")
	w.addImages(w.channel.ID, 1, "a cat")
	w.result("a message once resumed", autopinQueued)

	// The owner loses Read Message History: the queued pin finds it when
	// it runs, fails unsent, and the channel pauses itself.
	setOverwrites(discordtest.MemberOverwrite(owner, 0, discord.PermissionReadMessageHistory))
	w.setClocks(t0.Add(w.engine.Config().Window))
	w.nextJob()
	if n := len(w.ps.PinsFor("a1")); n != 0 {
		t.Fatalf("%d pins, want none", n)
	}
	if rs := w.storedRules(); len(rs) != 1 || !rs[0].Paused {
		t.Fatalf("rules %+v, want paused", rs)
	}
	dms = w.digestTo(owner, 2)
	mustContain(t, "the owner's DM", dms[len(dms)-1].Content, "paused itself", whyOwnerLost, "you can no longer read that channel")
	if got := w.autopinCmd(owner, subAutopinGo, w.channel.ID); !strings.Contains(got, "stays paused") || !strings.Contains(got, owner.String()) {
		t.Fatalf("/autopin resume answered %q", got)
	}
	setOverwrites()
	resume("Resumed:")

	// The owner's loss found by a message: paused; once resumed, what
	// was found then does not pause it again.
	setOverwrites(discordtest.MemberOverwrite(owner, 0, discord.PermissionViewChannel))
	w.addImages(w.channel.ID, 1, "a cat the owner cannot see")
	w.result("a message its owner cannot read", autopinPaused)
	setOverwrites()
	resume("Resumed:")
	w.addImages(w.channel.ID, 1, "a cat once resumed")
	w.result("a message once resumed again", autopinQueued)
}

// TestAutopinEditOfOldMessage: an edit that adds a picture to a message
// with none is queued while the message is recent (its embed may unfold
// late, its author may add one); an old message of which nothing was
// taken (posted before the rule) queues nothing when edited.
func TestAutopinEditOfOldMessage(t *testing.T) {
	w := newEventWorld(t)
	owner := w.addUser("owner")
	w.link(owner, "a1", "owner_art")
	w.fill("a1", 100)
	poster := w.addUser("poster")
	old, err := w.dc.AddMessage(discordtest.Message{ChannelID: w.channel.ID, AuthorID: poster, Content: "before the rule"})
	if err != nil {
		t.Fatal(err)
	}
	w.result("a message before the rule", autopinIgnored)
	w.setRule(links.AutopinRule{Channel: w.channel.ID.String(), Owner: owner.String(), Account: "a1", Board: "ba1"})
	w.setClocks(t0.Add(recentFor))
	w.bot.autopin.putRules(w.guild.ID, w.storedRules(), w.bot.cfg.Now())
	fresh, err := w.dc.AddMessage(discordtest.Message{ChannelID: w.channel.ID, AuthorID: poster, Content: "words first"})
	if err != nil {
		t.Fatal(err)
	}
	w.result("a message without a picture", autopinNoImage)
	pic := []discordtest.Attachment{{Filename: "a.png", ContentType: "image/png"}}
	for _, c := range []struct {
		m    discordtest.Message
		want string
	}{{old, autopinOld}, {fresh, autopinQueued}} {
		if _, err := w.dc.EditMessage(w.channel.ID, c.m.ID, discordtest.MessageEdit{Attachments: &pic}); err != nil {
			t.Fatal(err)
		}
		w.result("a picture added", c.want)
	}
	if qs := w.waiting("a1"); len(qs) != 1 || qs[0].Message != fresh.ID {
		t.Fatalf("queued %+v, want the recent message's picture", qs)
	}
}

// TestAutopinReplayedMessage: a new message Discord replays to a shard's
// next holder (Replayed: the previous holder may have queued it before
// it died) queues only the pictures neither queued nor pinned: a replay
// of a message queued already queues nothing; one no one worked on is
// queued.
func TestAutopinReplayedMessage(t *testing.T) {
	w := newEventWorld(t)
	owner := w.addUser("owner")
	w.link(owner, "a1", "owner_art")
	rule := links.AutopinRule{Channel: w.channel.ID.String(), Owner: owner.String(), Account: "a1", Board: "ba1"}
	w.setRule(rule)
	w.fill("a1", 100)
	w.setClocks(t0.Add(time.Minute))
	poster := w.addUser("poster")
	two := []discordtest.Attachment{{Filename: "a.png", ContentType: "image/png"}, {Filename: "b.png", ContentType: "image/png"}}
	m, err := w.dc.AddMessage(discordtest.Message{ChannelID: w.channel.ID, AuthorID: poster, Attachments: two})
	if err != nil {
		t.Fatal(err)
	}
	w.result("the new message", autopinQueued)
	if n := len(w.waiting("a1")); n != 2 {
		t.Fatalf("%d pins queued, want 2", n)
	}
	// Another process, which never saw the first delivery.
	forget := func() {
		w.bot.autopin.mu.Lock()
		clear(w.bot.autopin.recent)
		w.bot.autopin.mu.Unlock()
	}
	forget()
	w.bot.HandleMessage(discordio.Message{Kind: discordio.MessageCreated, GuildID: w.guild.ID, ChannelID: w.channel.ID, MessageID: m.ID, AuthorID: poster, Replayed: true})
	w.result("the message replayed", autopinDuplicate)
	if n := len(w.waiting("a1")); n != 2 {
		t.Fatalf("%d pins queued after the replay, want 2", n)
	}

	// A message posted while the rule was paused here is ignored; the
	// rule active again, its replay is queued.
	paused := rule
	paused.Paused = true
	w.bot.autopin.putRules(w.guild.ID, []links.AutopinRule{paused}, w.bot.cfg.Now())
	unseen, err := w.dc.AddMessage(discordtest.Message{ChannelID: w.channel.ID, AuthorID: poster, Attachments: two[:1]})
	if err != nil {
		t.Fatal(err)
	}
	w.result("a message of a paused channel", autopinIgnored)
	w.bot.autopin.putRules(w.guild.ID, []links.AutopinRule{rule}, w.bot.cfg.Now())
	forget()
	w.bot.HandleMessage(discordio.Message{Kind: discordio.MessageCreated, GuildID: w.guild.ID, ChannelID: w.channel.ID, MessageID: unseen.ID, AuthorID: poster, Replayed: true})
	w.result("a replayed message no one queued", autopinQueued)
	if n := len(w.waiting("a1")); n != 3 {
		t.Fatalf("%d pins queued, want 3", n)
	}
}

// TestEventsOfShardNotServed: work on a message or a reaction whose shard
// this process may no longer serve (Config.ShardServing: a cluster member
// past its lease) stops before anything is queued: the shard's next
// holder gets the event replayed.
func TestEventsOfShardNotServed(t *testing.T) {
	var serving atomic.Bool
	serving.Store(true)
	w := newEventWorldWith(t, worldOptions{bot: func(c *Config) {
		c.Shards = 1
		c.ShardServing = func(shard int) bool { return shard == 0 && serving.Load() }
	}})
	reacted := make(chan string, 4)
	w.bot.reactions.onDone = func(_ discordio.Reaction, result string) { reacted <- result }
	owner := w.addUser("owner")
	w.link(owner, "a1", "owner_art")
	if err := w.links.SetQueueWhenFull(w.ctx, owner.String(), true); err != nil {
		t.Fatal(err)
	}
	w.setRule(links.AutopinRule{Channel: w.channel.ID.String(), Owner: owner.String(), Account: "a1", Board: "ba1"})
	w.fill("a1", 100)
	w.setClocks(t0.Add(time.Minute))
	poster := w.addUser("poster")
	pic := []discordtest.Attachment{{Filename: "a.png", ContentType: "image/png"}}

	serving.Store(false)
	m, err := w.dc.AddMessage(discordtest.Message{ChannelID: w.channel.ID, AuthorID: poster, Attachments: pic})
	if err != nil {
		t.Fatal(err)
	}
	w.result("a message of a shard not served", autopinNotServed)
	w.bot.HandleReaction(discordio.Reaction{Added: true, UserID: owner, GuildID: w.guild.ID, ChannelID: m.ChannelID, MessageID: m.ID, Emoji: "📌"})
	if got := <-reacted; got != reactionNotServed {
		t.Fatalf("a reaction of a shard not served: result %q, want %q", got, reactionNotServed)
	}
	if n := len(w.jobs("a1")); n != 0 {
		t.Fatalf("%d pins queued for events of a shard not served", n)
	}

	// Delivered again once served (the shard came back): worked on.
	serving.Store(true)
	w.bot.HandleMessage(discordio.Message{Kind: discordio.MessageCreated, GuildID: w.guild.ID, ChannelID: w.channel.ID, MessageID: m.ID, AuthorID: poster, Replayed: true})
	w.result("the message replayed where served", autopinQueued)
	w.bot.HandleReaction(discordio.Reaction{Added: true, UserID: owner, GuildID: w.guild.ID, ChannelID: m.ChannelID, MessageID: m.ID, Emoji: "📌", Replayed: true})
	if got := <-reacted; got != reactionDuplicate {
		t.Fatalf("the reaction replayed after its message's pin was queued: result %q, want %q", got, reactionDuplicate)
	}
	if n := len(w.waiting("a1")); n != 1 {
		t.Fatalf("%d pins queued, want 1", n)
	}
}
