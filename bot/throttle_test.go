package bot

import (
	"fmt"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/internal/limit/gcra"
)

// TestUserThrottle: each user has an allowance of 5 units per 10 minutes
// (a unit back every 2 minutes) on the engine's clock. A /pin costs a
// unit per image, charged as the images become known; anything else
// costs one. Over it, a command is still acknowledged at once, then told
// when to try again; a batch stops where the allowance ran out. Other
// users are not affected.
func TestUserThrottle(t *testing.T) {
	w := newWorld(t, worldOptions{userRate: gcra.Rate{Limit: 5, Period: 10 * time.Minute}})
	alice, bob := w.addUser("alice"), w.addUser("bob")
	w.link(alice, "1001", "alicepins")
	w.link(bob, "2001", "bobpins")

	text, _ := w.pin(alice, w.addImages(w.channel.ID, 3, "").ID.String()) // 3 units
	must(t, text, "3 pinned.")

	// 1 up front and 1 for the second image; the third is over.
	text, _ = w.pin(alice, w.addImages(w.channel.ID, 4, "").ID.String())
	back := t0.Add(2 * time.Minute).Unix()
	must(t, text, "2 pinned, 2 skipped.", "(image 2 of 4) → ",
		fmt.Sprintf("You have used up what Pinbot allows each user (5 per 10 minutes; a /pin costs one per image), so Pinbot stopped here. You can go on at <t:%d:T> (<t:%d:R>).", back, back),
		"(image 3 of 4) · skipped: "+whyThrottled, "(image 4 of 4) · skipped: "+whyThrottled)
	if n := w.used("1001"); n != 5 {
		t.Fatalf("count %d, want 5", n)
	}

	// Any command is refused now, after its acknowledgement (w.text
	// checks the ephemeral deferral came first).
	refused := fmt.Sprintf("You are asking Pinbot for more than it allows each user (5 per 10 minutes; a /pin costs one per image), so this was not run. Try again at <t:%d:T> (<t:%d:R>).", back, back)
	text, _ = w.settings(alice)
	if text != refused {
		t.Fatalf("settings over the allowance: %q, want %q", text, refused)
	}
	text, _ = w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String())
	if text != refused {
		t.Fatalf("pin over the allowance: %q", text)
	}

	// Bob is not affected.
	text, _ = w.settings(bob)
	must(t, text, "@bobpins (active)")

	// A unit comes back every 2 minutes.
	w.eclock.Advance(2 * time.Minute)
	text, _ = w.settings(alice)
	must(t, text, "@alicepins (active)")
	text, _ = w.settings(alice)
	must(t, text, fmt.Sprintf("Try again at <t:%d:T> (<t:%d:R>).", t0.Add(4*time.Minute).Unix(), t0.Add(4*time.Minute).Unix()))

	// "Pin to Pinterest" costs its images up front.
	w.eclock.Advance(10 * time.Minute)
	m := w.addImages(w.channel.ID, 4, "")
	text, _ = w.run(discordtest.Invocation{UserID: alice, Data: discordtest.MessageCommand{Name: cmdPinMessage, TargetID: m.ID}})
	must(t, text, "4 pinned.")
	text, _ = w.run(discordtest.Invocation{UserID: alice, Data: discordtest.MessageCommand{Name: cmdPinMessage, TargetID: m.ID}})
	must(t, text, "You are asking Pinbot for more than it allows each user")
}

// TestUserThrottleOff: with NoUserRate nothing is counted.
func TestUserThrottleOff(t *testing.T) {
	w := newWorld(t, worldOptions{userRate: gcra.Rate{Limit: 1, Period: time.Hour}, bot: func(c *Config) {
		c.NoUserRate = true
	}})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	for range 3 {
		text, _ := w.settings(alice)
		must(t, text, "@alicepins (active)")
	}
}

func TestPeriodText(t *testing.T) {
	for i, tt := range []struct {
		d    time.Duration
		want string
	}{
		{time.Minute, "minute"}, {10 * time.Minute, "10 minutes"}, {time.Hour, "hour"}, {36 * time.Hour, "36 hours"},
		{48 * time.Hour, "2 days"}, {90 * time.Second, "90 seconds"}, {1500 * time.Millisecond, "1.5s"},
	} {
		if got := periodText(tt.d); got != tt.want {
			t.Errorf("step %d: periodText(%v) = %q want %q", i, tt.d, got, tt.want)
		}
	}
}

// TestUserThrottleComponent: a /queue button over the allowance leaves
// the list as it is and says when to try again beside it, ephemerally.
func TestUserThrottleComponent(t *testing.T) {
	started := make(chan actors.Job, 16)
	w := &queueWorld{world: newWorld(t, worldOptions{
		onJob:    func(j actors.Job) { started <- j },
		userRate: gcra.Rate{Limit: 2, Period: time.Hour},
	}), started: started}
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	w.fill("1001", 100)
	w.enqueue("1001", alice, w.addImages(w.channel.ID, 1, ""), w.addImages(w.channel.ID, 1, ""))

	_, msg := w.queue(alice)
	pick := discordtest.SelectMenu{CustomID: idQueueMessage, Values: []string{"1001/0"}, MessageID: msg.ID}
	before, _ := w.press(alice, msg, pick) // the second unit
	orig, _ := w.dc.Interact(discordtest.Invocation{UserID: alice, Data: pick, ChannelID: w.channel.ID})
	w.waitDone(orig)
	rs := orig.Responses()
	if len(rs) != 2 || rs[0].Type != discord.InteractionResponseTypeDeferredUpdateMessage || rs[1].Kind != discordtest.KindFollowup || !rs[1].OK() {
		t.Fatalf("responses %+v, want a deferred update and a followup", rs)
	}
	if rs[1].Data == nil || !rs[1].Data.Flags.Has(discord.MessageFlagEphemeral) ||
		rs[1].Data.Content != fmt.Sprintf("You are asking Pinbot for more than it allows each user (2 per hour; a /pin costs one per image), so this was not run. Try again at <t:%d:T> (<t:%d:R>).", t0.Add(30*time.Minute).Unix(), t0.Add(30*time.Minute).Unix()) {
		t.Fatalf("followup %+v", rs[1].Data)
	}
	checkNoMentions(t, rs[1])
	if cur, ok := orig.Original(); !ok || cur.Content != before {
		t.Fatalf("the /queue message changed to %q, want %q", cur.Content, before)
	}
	if n := len(w.jobs("1001", actors.JobWaiting)); n != 2 {
		t.Fatalf("%d waiting pins, want 2", n)
	}
}
