package bot

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/persistence"
)

// TestPinNoImageSkipped: a message without an image is skipped, not
// failed, in the reply and in the metrics.
func TestPinNoImageSkipped(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	words, err := w.dc.AddMessage(discordtest.Message{ChannelID: w.channel.ID, Content: "just words"})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := w.pin(alice, words.ID.String())
	must(t, text, "Pinterest account @alicepins, board **Board of alicepins**: 0 pinned, 1 skipped.\n",
		fmt.Sprintf("⏭️ <https://discord.com/channels/%d/%d/%d> · skipped: this message has no image", w.guild.ID, w.channel.ID, words.ID))
	mustNot(t, text, "failed")
	w.checkMetrics("a message without an image",
		metric{"pinbot_pins_total", []string{"result", "skipped"}, 1},
		metric{"pinbot_pins_total", []string{"result", "failed"}, 0},
		metric{"pinbot_pin_failures_total", []string{"reason", "no_image"}, 1},
	)
}

// TestPinQueuePartlyFull: at the limit with when_full:queue, what the
// account's queue takes is queued and said to be, what it has no room for
// is said to be skipped, with counts in agreement ("1 pin").
func TestPinQueuePartlyFull(t *testing.T) {
	w := newWorld(t, worldOptions{jobs: true, engine: func(c *actors.Config) { c.MaxQueue = 1 }})
	user := w.addUser("alice")
	w.link(user, "acct", "alice")
	w.fill("acct", 99)
	m := w.addImages(w.channel.ID, 4, "four cats")
	text, _ := w.run(queueInvocation(user, m.ID.String()))
	due := t0.Add(w.engine.Config().Window)
	must(t, text, "1 pinned, 1 queued, 2 skipped.\n",
		"Pin limit reached (100/12h). Queued 1 of the remaining 3 pins: it starts at "+timeText(due)+
			". Pinbot will send you the results in a direct message; /queue shows and cancels queued pins."+
			" 2 more did not fit in the account's queue (1 pin) and were skipped.",
		"(image 2 of 4) · queued: starts at "+timeText(due),
		"(image 3 of 4) · skipped: this account's queue is full (1 pin)",
		"(image 4 of 4) · skipped: this account's queue is full (1 pin)")
	mustNot(t, text, "Skipped remaining pins")
}

// TestPinQueueWhileHeld: with when_full:queue, pins that wait for
// Pinterest's hold, not for the limit, are said to.
func TestPinQueueWhileHeld(t *testing.T) {
	w := newWorld(t, worldOptions{jobs: true})
	user := w.addUser("alice")
	w.link(user, "acct", "alice")
	until := t0.Add(10 * time.Minute)
	if _, err := w.engine.Hold(w.ctx, "acct", until); err != nil {
		t.Fatal(err)
	}
	m := w.addImages(w.channel.ID, 2, "two cats")
	text, _ := w.run(queueInvocation(user, m.ID.String()))
	must(t, text, "0 pinned, 2 queued.\n",
		"Pinterest asked Pinbot to pause pinning with @alice, so nothing more was pinned. Queued 2 pins: the first starts at "+timeText(until)+", the last at "+timeText(until)+".")
	mustNot(t, text, "Pin limit reached", "Skipped")
}

// TestQueueTimesAgree: a queued pin's start, due at a fraction of a
// second, reads the same in the /pin reply, the /queue list (Discord's
// exact and relative times of the second it falls in, rounded up) and
// the cancel menu (that second in UTC, and the wait to it, to the
// second).
func TestQueueTimesAgree(t *testing.T) {
	w := newQueueWorld(t)
	alice := w.addUser("alice")
	w.link(alice, "1001", "first")
	w.eclock.Set(t0.Add(600 * time.Millisecond))
	w.fill("1001", 100)
	due := t0.Add(12*time.Hour + 600*time.Millisecond)
	w.eclock.Set(due.Add(-77400 * time.Millisecond))
	m := w.addImages(w.channel.ID, 1, "")

	want := fmt.Sprintf("<t:%d:T> (<t:%d:R>)", due.Unix()+1, due.Unix()+1)
	text, _ := w.run(queueInvocation(alice, m.ID.String()))
	must(t, text, "0 pinned, 1 queued.", "Queued 1 pin: it starts at "+want+".", jump(w, m)+" · queued: starts at "+want)
	if js := w.jobs("1001", actors.JobWaiting); len(js) != 1 || !js[0].Due.Equal(due) {
		t.Fatalf("waiting jobs %+v, want one due %v", js, due)
	}

	text, msg := w.queue(alice)
	must(t, text, "⏳ `1` "+jump(w, m)+" · starts at "+want)
	o := componentsOf(t, msg).option(t, "1001/"+m.ID.String())
	if o.Description != "@first · the first starts at 21:00:01 UTC (in 1m 18s)" {
		t.Errorf("menu option %+v", o)
	}
}

// TestSettingsCountsEarlierRule: after a change of the window, /settings,
// its account menu, the account switch, /queue and /pin count the slots the earlier rule
// still holds, as /pin refuses them, and say why.
func TestSettingsCountsEarlierRule(t *testing.T) {
	w := newWorld(t, worldOptions{
		jobs:   true,
		engine: func(c *actors.Config) { c.Limit, c.Window = 5, time.Hour },
		store: func(s persistence.Store) {
			// The last run pinned at most 5 per 12 hours.
			earlier := persistence.Rules{Current: persistence.Rule{Limit: 5, Window: (12 * time.Hour).Milliseconds()},
				Lease: actors.DefaultConfig().Lease.Milliseconds()}
			if err := s.(persistence.RuleKeeper).SetRules(t.Context(), earlier); err != nil {
				t.Fatal(err)
			}
		},
	})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	w.fill("1001", 2)
	w.setClocks(t0.Add(time.Hour + time.Second))
	w.fill("1001", 2)
	st, err := w.engine.Status(w.ctx, "1001")
	if err != nil || st.Used != 2 || st.Blocked != 2 {
		t.Fatalf("status %+v, %v; want 2 used, 2 blocked", st, err)
	}

	text, in := w.settings(alice)
	must(t, text, "▶ @alicepins (active) — 1-hour pins: 4/5 (2 of them under the earlier rule) — default board:", "\n"+msgEarlierRule)
	orig, _ := in.Original()
	must(t, string(orig.Components), "1-hour pins: 4/5 (2 of them under the earlier rule)")
	text, _ = w.pin(alice, w.addImages(w.channel.ID, 2, "").ID.String())
	must(t, text, "1 pinned, 1 skipped.", "1-hour pin count: 5/5 (2 of them under the earlier rule)",
		"Pin limit reached (5/1h). Skipped remaining pins. The next slot frees at", msgEarlierRule)
	text, _ = w.settings(alice)
	must(t, text, "1-hour pins: 5/5 (2 of them under the earlier rule)", msgEarlierRule, "Your active account is at its limit")
	text, _ = w.run(queueInvocation(alice, w.addImages(w.channel.ID, 1, "").ID.String()))
	must(t, text, "0 pinned, 1 queued.", "Pin limit reached (5/1h), so nothing was pinned. Queued 1 pin: it starts at", msgEarlierRule)
	text, _ = w.run(discordtest.Invocation{UserID: alice, Data: discordtest.ChatInput{Name: cmdQueue}})
	must(t, text, "**@alicepins** — 1-hour pins: 5/5 (2 of them under the earlier rule)\n⏳ ")
	text, _ = w.run(discordtest.Invocation{UserID: alice, Data: discordtest.SelectMenu{CustomID: idSwitch, Values: []string{"1001"}, MessageID: orig.ID}})
	must(t, text, "Active account is now @alicepins. 1-hour pins: 5/5 (2 of them under the earlier rule). It is at its limit; its next slot frees at", msgEarlierRule)
}

// TestUnlinkCancelFailsCount: when the pins queued with an unlinked
// account cannot be canceled, the reply counts them in agreement.
func TestUnlinkCancelFailsCount(t *testing.T) {
	w := newWorld(t, worldOptions{jobs: true, faults: true})
	user := w.addUser("alice")
	w.link(user, "acct", "alice")
	w.fill("acct", 100)
	w.run(queueInvocation(user, w.addImages(w.channel.ID, 1, "a cat").ID.String()))
	w.faults.FailWrites(errors.New("disk on fire"))
	text, _ := w.run(discordtest.Invocation{UserID: user, Data: discordtest.ChatInput{Name: cmdUnlink, Options: []discordtest.CommandOption{{Name: optAccount, Value: "acct"}}}})
	w.faults.FailWrites(nil)
	must(t, text, "Unlinked @alice.", " Its 1 queued pin will not run.")
}
