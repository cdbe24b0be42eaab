package bot

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/pinbot/pinbot/internal/limit/gcra"
	"github.com/pinbot/pinbot/internal/metrics"
)

// reactionWorld is a world whose gateway client identifies with the
// intents the bot's gateway asks for and hands reactions to
// Bot.HandleReaction, on its reading goroutine, as discordio.Gateway
// does; done receives every reaction the bot is done with.
type reactionWorld struct {
	*world
	done chan reactionEnd
}

type reactionEnd struct {
	r      discordio.Reaction
	result string
}

func newReactionWorld(t *testing.T, o worldOptions) *reactionWorld {
	t.Helper()
	o.gateway = true // the pump below replaces the world's
	rw := &reactionWorld{world: newWorld(t, o), done: make(chan reactionEnd, 64)}
	rw.bot.reactions.onDone = func(r discordio.Reaction, result string) { rw.done <- reactionEnd{r, result} }
	p := startReactionPump(t, rw.dc, rw.bot)
	t.Cleanup(p.close)
	return rw
}

// reacted waits for the bot to be done with the next reaction and returns
// what became of it.
func (w *reactionWorld) reacted() reactionEnd {
	w.t.Helper()
	select {
	case e := <-w.done:
		return e
	case <-w.ctx.Done():
		w.t.Fatal("no reaction handled")
		return reactionEnd{}
	}
}

// react adds (or, with add false, removes) user's reaction with emoji on
// m and waits for the bot to be done with it.
func (w *reactionWorld) react(m discordtest.Message, user snowflake.ID, emoji string, add bool) reactionEnd {
	w.t.Helper()
	var err error
	if add {
		err = w.dc.AddReaction(m.ChannelID, m.ID, user, emoji)
	} else {
		err = w.dc.RemoveReaction(m.ChannelID, m.ID, user, emoji)
	}
	if err != nil {
		w.t.Fatal(err)
	}
	e := w.reacted()
	if e.r.MessageID != m.ID || e.r.UserID != user || e.r.Added != add {
		w.t.Fatalf("handled %+v, want user %d's reaction on %d (added %v)", e.r, user, m.ID, add)
	}
	return e
}

// queuingUser adds a user who links account, with used pins of its
// window taken, and queues pins when it is full.
func (w *reactionWorld) queuingUser(name, account string, used int) snowflake.ID {
	w.t.Helper()
	u := w.addUser(name)
	w.link(u, account, name+"_art")
	if err := w.links.SetQueueWhenFull(w.ctx, u.String(), true); err != nil {
		w.t.Fatal(err)
	}
	w.fill(account, used)
	return u
}

// gatewayIntents are the intents the bot's gateway identifies with.
func gatewayIntents(b *Bot) gateway.Intents {
	var gc discordio.GatewayConfig
	b.reactionGateway(&gc)
	return gc.Intents()
}

// startReactionPump connects shard 0 of 1 to the stand-in with the bot's
// intents (see startGatewayPump).
func startReactionPump(t testing.TB, dc *discordtest.Server, b *Bot) *pump {
	t.Helper()
	return startGatewayPump(t, dc, b, 0, 1, gatewayIntents(b))
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Fatalf("%s does not say %q:\n%s", what, sub, s)
		}
	}
}

// TestReactionPinsQueuesAndCancels: a 📌 on a message with 3 images by a
// linked user at 98/100 who queues at the limit pins 2 and queues 1, and
// the DM names all 3; taking the reaction off before the queued pin ran
// cancels it, and the pins made stay.
func TestReactionPinsQueuesAndCancels(t *testing.T) {
	w := newReactionWorld(t, worldOptions{jobs: true})
	alice := w.queuingUser("alice", "a1", 98)
	m := w.addImages(w.channel.ID, 3, "three cats")

	if e := w.react(m, alice, "📌", true); e.result != reactionRan {
		t.Fatalf("reaction result %q, want %q", e.result, reactionRan)
	}
	dms := w.dc.DMs(alice)
	if len(dms) != 1 {
		t.Fatalf("%d DMs, want 1: %+v", len(dms), dms)
	}
	mustContain(t, "the DM", dms[0].Content, "Your 📌 on", "2 pinned", "1 queued",
		"(image 1 of 3)", "(image 2 of 3)", "(image 3 of 3)", "⏳")
	if got := len(w.ps.PinsFor("a1")); got != 2 {
		t.Fatalf("Pinterest holds %d pins, want 2", got)
	}
	if got := w.used("a1"); got != 100 {
		t.Fatalf("count %d, want 100", got)
	}
	for _, line := range strings.Split(w.logs.String(), "\n") {
		if strings.Contains(line, "pin reaction worked on") {
			for _, f := range []string{`"user_id":"` + alice.String(), `"guild_id":"` + w.guild.ID.String(),
				`"channel_id":"` + w.channel.ID.String(), `"message_id":"` + m.ID.String()} {
				mustContain(t, "the log line", line, f)
			}
		}
	}
	mustContain(t, "the log", w.logs.String(), "pin reaction worked on")
	waiting := func() int {
		n := 0
		for _, j := range w.jobs("a1") {
			if j.State == actors.JobWaiting {
				n++
			}
		}
		return n
	}
	if n := waiting(); n != 1 {
		t.Fatalf("%d waiting pins, want 1", n)
	}

	if e := w.react(m, alice, "📌", false); e.result != reactionCanceled {
		t.Fatalf("removal result %q, want %q", e.result, reactionCanceled)
	}
	if n := waiting(); n != 0 {
		t.Fatalf("%d waiting pins after the removal, want 0", n)
	}
	dms = w.dc.DMs(alice)
	if len(dms) != 2 {
		t.Fatalf("%d DMs, want 2", len(dms))
	}
	mustContain(t, "the cancel DM", dms[1].Content, "canceled 1 queued pin", "Pins already made stay")
	if got := len(w.ps.PinsFor("a1")); got != 2 {
		t.Fatalf("Pinterest holds %d pins after the removal, want 2", got)
	}
	for _, d := range dms {
		if d.AllowedMentions == nil || len(d.AllowedMentions.Parse)+len(d.AllowedMentions.Users)+len(d.AllowedMentions.Roles) != 0 {
			t.Fatalf("DM allowed_mentions %+v, want none", d.AllowedMentions)
		}
	}

	// Put back, it queues the picture not pinned again (the two pinned
	// are "already pinned"), and taken off, cancels it again.
	if e := w.react(m, alice, "📌", true); e.result != reactionRan {
		t.Fatalf("second add: %q", e.result)
	}
	mustContain(t, "the second report", w.dc.DMs(alice)[2].Content, "1 queued", "2 pinned before")
	if e := w.react(m, alice, "📌", false); e.result != reactionCanceled {
		t.Fatalf("second removal: %q, want %q", e.result, reactionCanceled)
	}
	if n := waiting(); n != 0 {
		t.Fatalf("%d waiting pins after the second removal, want 0", n)
	}
	if got := len(w.ps.PinsFor("a1")); got != 2 {
		t.Fatalf("Pinterest holds %d pins, want 2", got)
	}
}

// TestReactionRemoveCancelsOnlyOwnPins: taking the reaction off cancels
// the pins of that message the user queued, not another user's on the
// same message (on another account, or on an account both link), nor
// the user's on another message.
func TestReactionRemoveCancelsOnlyOwnPins(t *testing.T) {
	w := newReactionWorld(t, worldOptions{jobs: true})
	alice, bob, carol := w.addUser("alice"), w.addUser("bob"), w.addUser("carol")
	w.link(alice, "a1", "alice_art")
	w.link(bob, "b1", "bob_art")
	w.link(carol, "a1", "alice_art")
	for _, u := range []snowflake.ID{alice, bob, carol} {
		if err := w.links.SetQueueWhenFull(w.ctx, u.String(), true); err != nil {
			t.Fatal(err)
		}
	}
	w.fill("a1", 100)
	w.fill("b1", 100)
	m, other := w.addImages(w.channel.ID, 1, "cat"), w.addImages(w.channel.ID, 1, "dog")
	for _, r := range []struct {
		m    discordtest.Message
		user snowflake.ID
	}{{m, alice}, {other, alice}, {m, bob}, {m, carol}} {
		if e := w.react(r.m, r.user, "📌", true); e.result != reactionRan {
			t.Fatalf("add: %q", e.result)
		}
	}
	if e := w.react(m, alice, "📌", false); e.result != reactionCanceled {
		t.Fatalf("removal: %q", e.result)
	}
	left := func(account string) []snowflake.ID {
		var ids []snowflake.ID
		for _, j := range w.jobs(account) {
			if j.State == actors.JobWaiting {
				q, err := decodeQueuedPin(j.Payload)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, q.Message)
			}
		}
		return ids
	}
	if got := left("a1"); !slices.Equal(got, []snowflake.ID{other.ID, m.ID}) {
		t.Fatalf("the waiting pins of alice's account are of %v, want %d (alice's) and %d (carol's)", got, other.ID, m.ID)
	}
	if got := left("b1"); !slices.Equal(got, []snowflake.ID{m.ID}) {
		t.Fatalf("bob's waiting pins are of %v, want %d", got, m.ID)
	}
}

// TestReactionNotLinkedOnceADay: a user who linked nothing gets one DM
// about /link, not a second on a second reaction the same day, and one
// again a day later; nothing else happens.
func TestReactionNotLinkedOnceADay(t *testing.T) {
	w := newReactionWorld(t, worldOptions{})
	bob := w.addUser("bob")
	m1, m2 := w.addImages(w.channel.ID, 1, "one"), w.addImages(w.channel.ID, 1, "two")

	if e := w.react(m1, bob, "📌", true); e.result != reactionNotLinked {
		t.Fatalf("result %q, want %q", e.result, reactionNotLinked)
	}
	dms := w.dc.DMs(bob)
	if len(dms) != 1 {
		t.Fatalf("%d DMs, want 1", len(dms))
	}
	mustContain(t, "the notice", dms[0].Content, "/link", "📌")

	w.pclock.Advance(noticeEvery - time.Second)
	if e := w.react(m2, bob, "📌", true); e.result != reactionNotLinked {
		t.Fatalf("result %q, want %q", e.result, reactionNotLinked)
	}
	if got := len(w.dc.DMs(bob)); got != 1 {
		t.Fatalf("%d DMs after a second reaction the same day, want 1", got)
	}

	w.pclock.Advance(time.Second)
	if e := w.react(m2, bob, "📌", false); e.result != reactionNone {
		t.Fatalf("removal: %q", e.result)
	}
	if e := w.react(m1, bob, "📌", false); e.result != reactionNone {
		t.Fatalf("removal: %q", e.result)
	}
	if e := w.react(m1, bob, "📌", true); e.result != reactionNotLinked {
		t.Fatalf("result %q, want %q", e.result, reactionNotLinked)
	}
	if got := len(w.dc.DMs(bob)); got != 2 {
		t.Fatalf("%d DMs a day later, want 2", got)
	}
	if got := len(w.ps.Pins()); got != 0 {
		t.Fatalf("%d pins made for a user who linked nothing", got)
	}
	if got := len(w.dc.Messages(w.channel.ID)); got != 2 {
		t.Fatalf("%d messages in the channel, want the 2 posted by the test", got)
	}
	w.checkMetrics("reactions", metric{"pinbot_reactions_total", []string{"result", reactionNotLinked}, 3},
		metric{"pinbot_reactions_total", []string{"result", reactionNone}, 2},
		metric{"pinbot_pins_total", []string{"result", pinPinned}, 0})
}

// TestReactionIgnored: another emoji, and a bot's 📌, do nothing.
func TestReactionIgnored(t *testing.T) {
	w := newReactionWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "a1", "alice_art")
	robot, err := w.dc.AddMember(discordtest.Member{GuildID: w.guild.ID, Username: "robot", Bot: true})
	if err != nil {
		t.Fatal(err)
	}
	w.link(robot.UserID, "r1", "robot_art")
	m := w.addImages(w.channel.ID, 1, "cat")

	for _, c := range []struct {
		user  snowflake.ID
		emoji string
	}{{alice, "👍"}, {alice, "pin:123456789012345678"}, {robot.UserID, "📌"}} {
		if e := w.react(m, c.user, c.emoji, true); e.result != reactionIgnored {
			t.Fatalf("%s by %d: result %q, want %q", c.emoji, c.user, e.result, reactionIgnored)
		}
	}
	if n := len(w.dc.DMs(alice)) + len(w.dc.DMs(robot.UserID)) + len(w.ps.Pins()); n != 0 {
		t.Fatalf("ignored reactions sent DMs or made pins (%d)", n)
	}
	// The bot's own reaction, and one outside a guild, are ignored too.
	for _, r := range []discordio.Reaction{
		{Added: true, UserID: w.dc.BotUserID(), GuildID: w.guild.ID, ChannelID: m.ChannelID, MessageID: m.ID, Emoji: "📌"},
		{Added: true, UserID: alice, ChannelID: m.ChannelID, MessageID: m.ID, Emoji: "📌"},
	} {
		w.bot.HandleReaction(r)
		if e := w.reacted(); e.result != reactionIgnored {
			t.Fatalf("%+v: result %q, want %q", r, e.result, reactionIgnored)
		}
	}
}

// TestReactionCustomEmoji: with a custom pin emoji, its reaction pins and
// 📌 does nothing.
func TestReactionCustomEmoji(t *testing.T) {
	w := newReactionWorld(t, worldOptions{bot: func(c *Config) { c.PinEmoji = "<:pinit:123456789012345678>" }})
	alice := w.addUser("alice")
	w.link(alice, "a1", "alice_art")
	m := w.addImages(w.channel.ID, 1, "cat")
	if e := w.react(m, alice, "📌", true); e.result != reactionIgnored {
		t.Fatalf("📌: %q, want %q", e.result, reactionIgnored)
	}
	if e := w.react(m, alice, "pinit:123456789012345678", true); e.result != reactionRan {
		t.Fatalf("custom emoji: %q, want %q", e.result, reactionRan)
	}
	dms := w.dc.DMs(alice)
	if len(dms) != 1 {
		t.Fatalf("%d DMs, want 1", len(dms))
	}
	mustContain(t, "the DM", dms[0].Content, "Your <:pinit:123456789012345678> on", "1 pinned")
}

// TestReactionDuplicateEvent: the same add delivered again (as a RESUME
// replays it) pins nothing more and sends no second DM; an add after the
// removal is new.
func TestReactionDuplicateEvent(t *testing.T) {
	w := newReactionWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "a1", "alice_art")
	m := w.addImages(w.channel.ID, 2, "cats")
	e := w.react(m, alice, "📌", true)
	if e.result != reactionRan {
		t.Fatalf("result %q", e.result)
	}
	w.bot.HandleReaction(e.r)
	if again := w.reacted(); again.result != reactionDuplicate {
		t.Fatalf("the same event again: %q, want %q", again.result, reactionDuplicate)
	}
	if got := len(w.dc.DMs(alice)); got != 1 {
		t.Fatalf("%d DMs, want 1", got)
	}
	if got := len(w.ps.PinsFor("a1")); got != 2 {
		t.Fatalf("%d pins, want 2", got)
	}
	// Put back after taking it off: worked on, and the board's history
	// answers "already pinned".
	w.react(m, alice, "📌", false)
	if e := w.react(m, alice, "📌", true); e.result != reactionRan {
		t.Fatalf("re-add: %q", e.result)
	}
	dms := w.dc.DMs(alice)
	if len(dms) != 2 {
		t.Fatalf("%d DMs, want 2", len(dms))
	}
	mustContain(t, "the second report", dms[1].Content, "2 pinned before", "already pinned")
	if got := len(w.ps.PinsFor("a1")); got != 2 {
		t.Fatalf("%d pins, want 2", got)
	}
}

// TestReactionDMsClosedRepliesInChannel: a user whose DMs are closed gets
// the report in the channel, mentioning them without a ping; a second
// report within channelReplyGap goes to their digest instead, and one
// after it to the channel again.
func TestReactionDMsClosedRepliesInChannel(t *testing.T) {
	w := newReactionWorld(t, worldOptions{jobs: true})
	alice := w.addUser("alice")
	w.link(alice, "a1", "alice_art")
	w.dc.SetDMsOpen(alice, false)
	ms := []discordtest.Message{w.addImages(w.channel.ID, 1, "one"), w.addImages(w.channel.ID, 1, "two"), w.addImages(w.channel.ID, 1, "three")}
	posted := func() []discordtest.Message {
		var out []discordtest.Message
		for _, m := range w.dc.Messages(w.channel.ID) {
			if m.AuthorID == w.dc.BotUserID() {
				out = append(out, m)
			}
		}
		return out
	}

	if e := w.react(ms[0], alice, "📌", true); e.result != reactionRan {
		t.Fatalf("result %q", e.result)
	}
	got := posted()
	if len(got) != 1 {
		t.Fatalf("%d replies in the channel, want 1", len(got))
	}
	mustContain(t, "the channel reply", got[0].Content, "<@"+alice.String()+">", "could not send you a direct message", "1 pinned")
	if am := got[0].AllowedMentions; am == nil || len(am.Parse)+len(am.Users)+len(am.Roles) != 0 {
		t.Fatalf("channel reply allowed_mentions %+v, want none", am)
	}

	lines := w.bot.digest.Stats().Lines
	w.pclock.Advance(channelReplyGap - time.Millisecond)
	if e := w.react(ms[1], alice, "📌", true); e.result != reactionRan {
		t.Fatalf("result %q", e.result)
	}
	if n := len(posted()); n != 1 {
		t.Fatalf("%d replies in the channel within the gap, want 1", n)
	}
	if st := w.bot.digest.Stats(); st.Lines <= lines {
		t.Fatalf("digest lines %d, want more than %d: the report went nowhere", st.Lines, lines)
	}

	w.pclock.Advance(time.Millisecond)
	if e := w.react(ms[2], alice, "📌", true); e.result != reactionRan {
		t.Fatalf("result %q", e.result)
	}
	if n := len(posted()); n != 2 {
		t.Fatalf("%d replies in the channel after the gap, want 2", n)
	}
}

// TestReactionIntentsOff: with reactions off, the bot's gateway asks for
// no intent, so the stand-in sends no reaction, and one handed over all
// the same is ignored. With them on, it asks for GUILD_MESSAGE_REACTIONS
// alone: a fetched message's pictures need the application's message
// content intent, not the gateway's.
func TestReactionIntentsOff(t *testing.T) {
	w := newReactionWorld(t, worldOptions{bot: func(c *Config) { c.NoReactions = true }})
	if got := gatewayIntents(w.bot); got != gateway.IntentsNone {
		t.Fatalf("intents %v with reactions off, want none", got)
	}
	if s, ok := w.dc.Session(0); !ok || s.Intents != 0 {
		t.Fatalf("session %+v, want one with no intent", s)
	}
	alice := w.addUser("alice")
	w.link(alice, "a1", "alice_art")
	m := w.addImages(w.channel.ID, 1, "cat")
	w.bot.HandleReaction(discordio.Reaction{Added: true, UserID: alice, GuildID: w.guild.ID, ChannelID: m.ChannelID, MessageID: m.ID, Emoji: "📌"})
	if e := w.reacted(); e.result != reactionIgnored {
		t.Fatalf("result %q, want %q", e.result, reactionIgnored)
	}
	if n := len(w.dc.DMs(alice)) + len(w.ps.Pins()); n != 0 {
		t.Fatalf("reactions off, yet %d DMs or pins", n)
	}

	on := newReactionWorld(t, worldOptions{})
	if got := gatewayIntents(on.bot); got != gateway.IntentGuildMessageReactions {
		t.Fatalf("intents %v with reactions on, want GUILD_MESSAGE_REACTIONS alone", got)
	}
	if s, ok := on.dc.Session(0); !ok || s.Intents != discordtest.IntentGuildMessageReactions {
		t.Fatalf("session %+v, want GUILD_MESSAGE_REACTIONS", s)
	}
}

// TestParsePinEmoji: the unicode and custom emoji accepted, and the rest
// refused.
func TestParsePinEmoji(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "📌"},
		{"📌", "📌"},
		{" 📍 ", "📍"},
		{"❤️", "❤️"},
		{"👍🏽", "👍🏽"},
		{"👩‍💻", "👩‍💻"},
		{"🇫🇷", "🇫🇷"},
		{"1️⃣", "1️⃣"},
		{"pin:123456789012345678", "pin:123456789012345678"},
		{"<:pin:123456789012345678>", "pin:123456789012345678"},
		{"<a:pin_anim:123456789012345678>", "pin_anim:123456789012345678"},
		{"apin:123456789012345678", "apin:123456789012345678"},
	} {
		got, err := ParsePinEmoji(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParsePinEmoji(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"pin", ":pin:", "pin:", "pin:abc", "p:1", "pin:0", ":pin:1", "<pin:1>", "<:pin:1", "a:pin:1", "<:pin:12", "a b", "1", "📌📌📌📌📌📌📌📌📌📌📌📌📌📌📌📌📌", "é", "x📌"} {
		if got, err := ParsePinEmoji(in); err == nil {
			t.Errorf("ParsePinEmoji(%q) = %q, want an error", in, got)
		}
	}
	c := Config{Token: "MTIwMDAwMDAwMDAwMDAwMDAwMA.x.y", Engine: nonNilEngine, Links: nonNilLinks, Pinterest: nonNilPinterest, PinEmoji: "pin"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "Config.PinEmoji") {
		t.Fatalf("Validate with a bad PinEmoji: %v, want an error naming Config.PinEmoji", err)
	}
}

// TestReactionEmojiMatches: a unicode emoji matches with or without its
// variation selector; a custom one by its ID alone.
func TestReactionEmojiMatches(t *testing.T) {
	heart, _ := parsePinEmoji("❤️")
	custom, _ := parsePinEmoji("pin:42")
	for _, c := range []struct {
		e    pinEmoji
		r    discordio.Reaction
		want bool
	}{
		{heart, discordio.Reaction{Emoji: "❤"}, true},
		{heart, discordio.Reaction{Emoji: "❤️"}, true},
		{heart, discordio.Reaction{Emoji: "❤:42", EmojiID: 42}, false},
		{custom, discordio.Reaction{Emoji: "renamed:42", EmojiID: 42}, true},
		{custom, discordio.Reaction{Emoji: "pin:43", EmojiID: 43}, false},
		{custom, discordio.Reaction{Emoji: "pin"}, false},
	} {
		if got := c.e.matches(c.r); got != c.want {
			t.Errorf("%v matches %+v = %v, want %v", c.e, c.r, got, c.want)
		}
	}
}

// TestReactionResultsMatchMetrics: the results the bot reports are the
// metrics' labels, and the program's observer hears them.
func TestReactionResultsMatchMetrics(t *testing.T) {
	if !slices.Equal(reactionResults, metrics.ReactionResults) {
		t.Fatalf("bot results %v, metrics labels %v", reactionResults, metrics.ReactionResults)
	}
	var _ ReactionObserver = (*metrics.BotObserver)(nil)
}

// TestReactionStateBounds: the notices, the channel replies and the
// recent events stay within their bounds.
func TestReactionStateBounds(t *testing.T) {
	var rs reactionState
	for i := range maxNoticeUsers {
		if !rs.noticeDue(snowflake.ID(i+1), t0) {
			t.Fatalf("user %d not told", i+1)
		}
	}
	if rs.noticeDue(snowflake.ID(maxNoticeUsers+1), t0.Add(time.Hour)) {
		t.Fatal("a new user told while the map is full of users told within the day")
	}
	if !rs.noticeDue(snowflake.ID(maxNoticeUsers+1), t0.Add(noticeEvery)) {
		t.Fatal("a new user not told once the others may be told again")
	}
	if len(rs.notices) > maxNoticeUsers {
		t.Fatalf("%d users remembered, more than %d", len(rs.notices), maxNoticeUsers)
	}
	for i := range maxReplyChannels + 1 {
		rs.mayReply(snowflake.ID(i+1), t0)
	}
	if len(rs.replies) > maxReplyChannels {
		t.Fatalf("%d channels remembered, more than %d", len(rs.replies), maxReplyChannels)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for i := range maxRecentEvents + 1 {
		rs.seenLocked(laneKey{user: 1, message: snowflake.ID(i + 1)}, true, t0)
	}
	if len(rs.recent) > maxRecentEvents {
		t.Fatalf("%d events remembered, more than %d", len(rs.recent), maxRecentEvents)
	}
}

// TestReactionOrderPerMessage: a removal that arrives while the add is
// still being worked on runs after it, and cancels what it queued.
func TestReactionOrderPerMessage(t *testing.T) {
	w := newReactionWorld(t, worldOptions{jobs: true})
	alice := w.addUser("alice")
	w.link(alice, "a1", "alice_art")
	if err := w.links.SetQueueWhenFull(w.ctx, alice.String(), true); err != nil {
		t.Fatal(err)
	}
	w.fill("a1", 100)
	m := w.addImages(w.channel.ID, 1, "cat")
	hold := make(chan struct{})
	if err := w.dc.Inject(discordtest.RouteGetMessage, 1, discordtest.Fault{Hold: hold}); err != nil {
		t.Fatal(err)
	}
	if err := w.dc.AddReaction(m.ChannelID, m.ID, alice, "📌"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.dc.WaitRequests(w.ctx, discordtest.RouteGetMessage, 1); err != nil {
		t.Fatal(err)
	}
	if err := w.dc.RemoveReaction(m.ChannelID, m.ID, alice, "📌"); err != nil {
		t.Fatal(err)
	}
	close(hold)
	if e := w.reacted(); !e.r.Added || e.result != reactionRan {
		t.Fatalf("first done: %+v %q, want the add, ran", e.r, e.result)
	}
	if e := w.reacted(); e.r.Added || e.result != reactionCanceled {
		t.Fatalf("second done: %+v %q, want the removal, canceled", e.r, e.result)
	}
	for _, j := range w.jobs("a1") {
		if j.State == actors.JobWaiting {
			t.Fatalf("job %d still waiting", j.ID)
		}
	}
}

// TestReactionThrottled: a reaction costs one unit of the user's
// allowance per picture, as "Pin to Pinterest" does; over it, the user
// is told when to try again and nothing is pinned.
func TestReactionThrottled(t *testing.T) {
	w := newReactionWorld(t, worldOptions{userRate: gcra.Rate{Limit: 2, Period: time.Hour}})
	alice := w.addUser("alice")
	w.link(alice, "a1", "alice_art")
	two, one := w.addImages(w.channel.ID, 2, "cats"), w.addImages(w.channel.ID, 1, "cat")
	if e := w.react(two, alice, "📌", true); e.result != reactionRan {
		t.Fatalf("within the allowance: %q, want %q", e.result, reactionRan)
	}
	if e := w.react(one, alice, "📌", true); e.result != reactionThrottled {
		t.Fatalf("result %q, want %q", e.result, reactionThrottled)
	}
	dms := w.dc.DMs(alice)
	if len(dms) != 2 {
		t.Fatalf("%d DMs, want 2", len(dms))
	}
	mustContain(t, "the second DM", dms[1].Content, "Try again at")
	if n := len(w.ps.Pins()); n != 2 {
		t.Fatalf("%d pins, want 2", n)
	}
}

// TestReactionMessageGone: a message Discord no longer has pins nothing,
// and the user is told.
func TestReactionMessageGone(t *testing.T) {
	w := newReactionWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "a1", "alice_art")
	m := w.addImages(w.channel.ID, 1, "cat")
	if err := w.dc.DeleteMessage(m.ID); err != nil {
		t.Fatal(err)
	}
	w.bot.HandleReaction(discordio.Reaction{Added: true, UserID: alice, GuildID: w.guild.ID, ChannelID: m.ChannelID, MessageID: m.ID, Emoji: "📌"})
	if e := w.reacted(); e.result != reactionFailed {
		t.Fatalf("result %q, want %q", e.result, reactionFailed)
	}
	dms := w.dc.DMs(alice)
	if len(dms) != 1 {
		t.Fatalf("%d DMs, want 1", len(dms))
	}
	mustContain(t, "the DM", dms[0].Content, "pinned nothing", "it is gone")
}

// TestReactionReplayed: a 📌 Discord replays to a shard's next holder
// (Replayed: the shard's previous holder may have run it before it died)
// pins only what is neither queued nor pinned yet: 2 pinned and 1 queued
// by the first delivery, a replay adds nothing; a replayed 📌 that no one
// ran is worked on.
func TestReactionReplayed(t *testing.T) {
	w := newReactionWorld(t, worldOptions{jobs: true})
	alice := w.queuingUser("alice", "a1", 98)
	m := w.addImages(w.channel.ID, 3, "three cats")
	if e := w.react(m, alice, "📌", true); e.result != reactionRan {
		t.Fatalf("reaction result %q, want %q", e.result, reactionRan)
	}
	jobs := len(w.jobs("a1"))
	if got := len(w.ps.PinsFor("a1")); got != 2 || jobs != 1 {
		t.Fatalf("%d pins and %d queued, want 2 and 1", got, jobs)
	}
	// Another process, which never saw the first delivery.
	forget := func() {
		w.bot.reactions.mu.Lock()
		clear(w.bot.reactions.recent)
		w.bot.reactions.mu.Unlock()
	}
	forget()
	w.bot.HandleReaction(discordio.Reaction{Added: true, UserID: alice, GuildID: w.guild.ID, ChannelID: m.ChannelID, MessageID: m.ID, Emoji: "📌", Replayed: true})
	if e := w.reacted(); e.result != reactionDuplicate {
		t.Fatalf("replayed reaction: result %q, want %q", e.result, reactionDuplicate)
	}
	if got, n := len(w.ps.PinsFor("a1")), len(w.jobs("a1")); got != 2 || n != jobs {
		t.Fatalf("after the replay: %d pins and %d queued, want 2 and %d", got, n, jobs)
	}

	fresh := w.addImages(w.channel.ID, 1, "one more cat")
	forget()
	w.bot.HandleReaction(discordio.Reaction{Added: true, UserID: alice, GuildID: w.guild.ID, ChannelID: fresh.ChannelID, MessageID: fresh.ID, Emoji: "📌", Replayed: true})
	if e := w.reacted(); e.result != reactionRan {
		t.Fatalf("replayed reaction no one ran: result %q, want %q", e.result, reactionRan)
	}
	if n := len(w.jobs("a1")); n != jobs+1 {
		t.Fatalf("%d queued after the new message's replayed reaction, want %d", n, jobs+1)
	}
}
