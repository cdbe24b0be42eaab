//go:build !race

// The test in this file opens a real disgo gateway connection, which
// races with its own heartbeat under -race (see bot/discordtest): it
// runs in `make gateway`, without -race.

package sandbox

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/internal/logtest"
)

// TestDisgoGatewaySandboxAutopin plays the server commands as a person
// does at the console, under a rule of 2 pins per hour on an engine clock
// that moves only when told. alice, without Manage Channels, is refused
// /autopin add and /server; bob, the mods' member, makes #art pin itself
// for his account's board Studio, uses his 2 slots with /pin, then posts 2
// pictures in #art: both are queued (/queue shows them), and run when the
// hour passes: Pinterest's stand-in gets them and /dms shows the digest.
// Then /server pin_emoji:🖼️ makes a 📌 pin nothing and a 🖼️ pin.
func TestDisgoGatewaySandboxAutopin(t *testing.T) {
	t.Parallel()
	clock := actors.NewManualClock(time.Now())
	ecfg := actors.DefaultConfig()
	ecfg.Limit, ecfg.Window, ecfg.Clock = 2, time.Hour, clock
	s := startAutopinSession(t, ecfg)
	bob := users[1].ID

	s.run([]step{
		{line: "/autopin add art Cats", want: []string{"You need the Manage Channels permission in that channel"}},
		{line: "/server pin_emoji:🖼️", want: []string{"Only members who may manage this server (Manage Server)"}},
		{line: "/as bob", want: []string{"You are bob in #general."}},
		{line: "/autopin list", want: []string{"No channel of this server pins itself."}},
		{line: "/autopin add #art Studio", want: []string{"Done: the pictures posted in #art from now on are queued for @studio_shared, board Studio"}},
		{line: "/autopin list", want: []string{"#art", "Studio"}},
		{line: "/autopin pause art", want: []string{"Paused: pictures posted in #art are not queued"}},
		{line: "/autopin resume art", want: []string{"Resumed: the pictures posted in #art"}},
		{line: "/pin 1001", want: []string{"1 pinned"}},
		{line: "/channel art", want: []string{"You are bob in #art."}},
		{line: "/pin 2001", want: []string{"1 pinned"}},
	})
	out := s.exec("/post 2 Two sketches")
	sub := postedID.FindStringSubmatch(out)
	if sub == nil {
		t.Fatalf("/post printed no message ID:\n%s", out)
	}
	link := "https://discord.com/channels/900/200/" + sub[1]
	if want := "#art pins itself (/autopin list): Pinbot queues its pictures for @studio_shared (7003), as bob; bob's /queue shows them"; !strings.Contains(out, want) {
		t.Errorf("/post printed:\n%s\nwant it to say %q", out, want)
	}
	// Auto-pin works on the message in its own time: the bot counts each
	// picture once it is queued.
	s.waitMetrics(t, `pinbot_pins_total{result="queued",source="autopin"} 2`)
	if n := s.waitingJobs(t, "7003"); n != 2 {
		t.Fatalf("%d pins of 7003 wait, want the 2 posted pictures", n)
	}
	s.run([]step{{line: "/queue", want: []string{
		"⏳ 1 " + link + " (image 1 of 2)",
		"⏳ 1 " + link + " (image 2 of 2)",
		"Message 1: cancel its 2 waiting pins",
	}}})

	clock.Advance(time.Hour)
	if _, err := s.sb.pinterest.WaitPins(s.ctx, "7003", 4); err != nil {
		t.Fatalf("the queued pictures were not pinned: %v\nlogs:\n%s", err, s.logs)
	}
	// The digest may come as one DM or as two, in either order.
	dms := s.waitDMs(t, bob, 1)
	if c := dms[0].Content; !strings.Contains(c, "image 1 of 2") || !strings.Contains(c, "image 2 of 2") {
		s.waitDMs(t, bob, 2)
	}
	s.run([]step{
		{line: "/dms", want: []string{link + " (image 1 of 2)", link + " (image 2 of 2)"}},
		{line: "/pinterest", want: []string{"@studio_shared (7003): 4 pins,"}},
	})
	n := len(s.sb.discord.DMs(bob))

	// The server's pin emoji: bob chooses 🖼️; a 📌 then pins nothing.
	s.run([]step{
		{line: "/server", want: []string{"Pin reaction: 📌 (Pinbot's default)"}},
		{line: "/server pin_emoji:🖼️", want: []string{"Done: in this server, a linked member's 🖼️ on a message now pins its pictures"}},
		{line: "/server", want: []string{"Pin reaction: 🖼️ (chosen for this server"}},
		{line: "/as alice", want: []string{"You are alice in #art."}},
		{line: "/react 2001 📌", want: []string{"Pinbot pins on 🖼️ reactions only in this server: it leaves this one alone."}},
		{line: "/react 2001 🖼️", want: []string{"alice reacted with 🖼️ to message 2001 in #art.", "answers by direct message"}},
	})
	alice := users[0].ID
	dms = s.waitDMs(t, alice, 1)
	if got := dms[0].Content; !strings.Contains(got, "Your 🖼️ on") {
		t.Errorf("alice's DM %q, want the answer to her 🖼️", got)
	}
	if got := s.sb.pinterest.PinsFor("7001"); len(got) != 1 {
		t.Errorf("@alice_pins has %d pins, want the one of her 🖼️", len(got))
	}
	if got := len(s.sb.discord.DMs(bob)); got != n {
		t.Errorf("bob got %d more DMs", got-n)
	}
	s.run([]step{
		{line: "/as bob", want: []string{"You are bob in #art."}},
		{line: "/server reset", want: []string{"uses Pinbot's default pin reaction again, 📌"}},
		{line: "/autopin remove art", want: []string{"Done: #art no longer pins itself."}},
		{line: "/autopin list", want: []string{"No channel of this server pins itself."}},
	})
}

// startAutopinSession starts a sandbox whose engine runs under ecfg and
// whose digests go out as soon as a line comes.
func startAutopinSession(t *testing.T, ecfg actors.Config) *session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	logs := &logtest.Buffer{}
	dir := t.TempDir()
	cfg := testConfig(dir, logs)
	cfg.Engine = &ecfg
	cfg.digest = digest.Config{Gather: time.Nanosecond}
	sb, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v\nlogs:\n%s", err, logs)
	}
	s := &session{t: t, ctx: ctx, sb: sb, out: &bytes.Buffer{}, logs: logs}
	s.con = sb.Console(s.out)
	t.Cleanup(func() { s.close() })
	return s
}
