//go:build !race

// The test in this file opens a real disgo gateway connection, which
// races with its own heartbeat under -race (see bot/discordtest): it
// runs in `make gateway`, without -race.

package sandbox

import (
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/actors"
)

// TestDisgoGatewaySandboxEditDelete plays an edit and a delete in an
// auto-pin channel as a person does at the console, under a rule of 2
// pins per hour on an engine clock that frees no slot meanwhile. bob
// makes #art pin itself, uses his 2 slots, and posts a picture, which is
// queued; /edit adds 2 pictures, and the bot queues those 2 only: /queue
// shows 3 waiting pins of the message. /delete then cancels the 3, which
// a DM says; nothing was pinned.
func TestDisgoGatewaySandboxEditDelete(t *testing.T) {
	t.Parallel()
	ecfg := actors.DefaultConfig()
	ecfg.Limit, ecfg.Window = 2, time.Hour
	ecfg.Clock = actors.NewManualClock(time.Now())
	s := startAutopinSession(t, ecfg)
	bob := users[1].ID

	s.run([]step{
		{line: "/as bob", want: []string{"You are bob in #general."}},
		{line: "/autopin add art Studio", want: []string{"Done: the pictures posted in #art from now on are queued for @studio_shared"}},
		{line: "/pin 1001", want: []string{"1 pinned"}},
		{line: "/channel art"},
		{line: "/pin 2001", want: []string{"1 pinned"}},
	})
	out := s.exec("/post One sketch")
	sub := postedID.FindStringSubmatch(out)
	if sub == nil {
		t.Fatalf("/post printed no message ID:\n%s", out)
	}
	id, link := sub[1], "https://discord.com/channels/900/200/"+sub[1]
	s.waitMetrics(t, `pinbot_pins_total{result="queued",source="autopin"} 1`)

	s.run([]step{{line: "/edit " + id + " +2", want: []string{
		"bob edited message " + id + " in #art: 2 images added, 3 now: " + link,
		"#art pins itself: Pinbot queues the new pictures only, for @studio_shared (7003), as bob; bob's /queue shows them",
	}}})
	s.waitMetrics(t, `pinbot_pins_total{result="queued",source="autopin"} 3`)
	s.run([]step{{line: "/queue", want: []string{
		"⏳ 1 " + link + " · starts at",
		"⏳ 1 " + link + " (image 2 of 3)",
		"⏳ 1 " + link + " (image 3 of 3)",
		"Message 1: cancel its 3 waiting pins",
	}}})

	s.run([]step{{line: "/delete " + id, want: []string{
		"bob deleted message " + id + " in #art.",
		"tells whose they were by direct message (/dms)",
	}}})
	// The bot works on a channel's events in order: the delete, after the
	// edit, cancels what the edit queued too, and no more.
	dms := s.waitDMs(t, bob, 1)
	if want := "🗑️ <" + link + "> was deleted, so Pinbot canceled 3 queued pins of it."; !strings.Contains(dms[0].Content, want) {
		t.Errorf("bob's DM %q, want it to say %q", dms[0].Content, want)
	}
	s.run([]step{
		{line: "/dms", want: []string{"🗑️ " + link + " was deleted, so Pinbot canceled 3 queued pins of it."}},
		{line: "/queue", notWant: []string{"⏳"}},
		{line: "/messages", notWant: []string{id}},
		{line: "/pinterest", want: []string{"@studio_shared (7003): 2 pins,"}},
	})
	if n := s.waitingJobs(t, "7003"); n != 0 {
		t.Errorf("%d pins of 7003 wait after /delete, want none", n)
	}
	if got := len(s.sb.discord.DMs(bob)); got != 1 {
		t.Errorf("bob got %d DMs, want the one of the delete", got)
	}
	if strings.Contains(s.exec("/edit "+id), "edited") {
		t.Errorf("/edit of the deleted message edited it")
	}
}
