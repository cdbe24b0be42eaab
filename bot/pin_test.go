package bot

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// must fails the test unless text holds every want, in order.
func must(t testing.TB, text string, want ...string) {
	t.Helper()
	rest := text
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("reply lacks %q (in order); reply:\n%s", w, text)
		}
		rest = rest[i+len(w):]
	}
}

// markedLink reports whether a pin's link is link with a pinbot mark.
func markedLink(got, link string) bool {
	rest, ok := strings.CutPrefix(got, link+"?"+pinterest.MarkParam+"=")
	return ok && rest != "" && pinterest.MarkOf(got) == rest
}

// mustNot fails the test if text holds any of bad.
func mustNot(t *testing.T, text string, bad ...string) {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(text, b) {
			t.Fatalf("reply holds %q; reply:\n%s", b, text)
		}
	}
}

func TestPinOneMessage(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	m := w.addImages(w.channel.ID, 2, "Two cats\nsecond line")

	text, _ := w.pin(alice, m.ID.String())
	must(t, text,
		"Pinterest account @alicepins, board **Board of alicepins**: 2 pinned.",
		"(image 1 of 2) → <https://www.pinterest.com/pin/", "12-hour pin count: 1/100",
		"(image 2 of 2) → <https://www.pinterest.com/pin/", "12-hour pin count: 2/100")
	pins := w.ps.PinsFor("1001")
	if len(pins) != 2 {
		t.Fatalf("%d pins on Pinterest, want 2", len(pins))
	}
	jump := fmt.Sprintf("https://discord.com/channels/%d/%d/%d", w.guild.ID, w.channel.ID, m.ID)
	for i, p := range pins {
		if p.BoardID != "b1001" || !markedLink(p.Link, jump) || p.Title != "Two cats" || p.AltText == "" || p.ImageURL != m.Attachments[i].URL {
			t.Errorf("pin %d = %+v; want board b1001, link %s, title %q, the attachment's fresh URL", i, p, jump, "Two cats")
		}
	}
	if n := w.used("1001"); n != 2 {
		t.Fatalf("engine count %d, want 2", n)
	}
}

// TestPinTenImagesAt95 is the first "done when": at 95/100, a /pin
// of 10 images makes exactly 5 pins, counted 96/100 to 100/100, then
// stops with the limit message; /settings then shows 100/100, and after
// switching to a second account the next /pin lands there.
func TestPinTenImagesAt95(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "2002", "second")
	w.link(alice, "1001", "first") // linked last: active
	w.fill("1001", 95)

	var msgs []discordtest.Message
	for i := range 10 {
		msgs = append(msgs, w.addImages(w.channel.ID, 1, fmt.Sprintf("picture %d", i)))
	}
	text, _ := w.pin(alice, ids(msgs...))
	want := []string{"Pinterest account @first, board **Board of first**: 5 pinned, 5 skipped."}
	for i := range 5 {
		want = append(want, fmt.Sprintf("/%d> → <https://www.pinterest.com/pin/", msgs[i].ID), fmt.Sprintf("12-hour pin count: %d/100", 96+i))
	}
	want = append(want, "Pin limit reached (100/12h). Skipped remaining pins.")
	for i := 5; i < 10; i++ {
		want = append(want, fmt.Sprintf("⏭️ <https://discord.com/channels/%d/%d/%d> · skipped: limit reached", w.guild.ID, w.channel.ID, msgs[i].ID))
	}
	must(t, text, want...)
	if n := len(w.ps.PinsFor("1001")); n != 5 {
		t.Fatalf("%d pins on Pinterest, want exactly 5", n)
	}
	if n := w.used("1001"); n != 100 {
		t.Fatalf("engine count %d, want 100", n)
	}

	text, in := w.settings(alice)
	must(t, text, "▶ @first (active) — 12-hour pins: 100/100", "next slot frees at <t:")
	must(t, text, "• @second — 12-hour pins: 0/100")
	orig, ok := in.Original()
	if !ok {
		t.Fatal("no /settings message")
	}
	if !strings.Contains(string(orig.Components), idSwitch) {
		t.Fatalf("/settings has no switch menu: %s", orig.Components)
	}

	text, _ = w.run(discordtest.Invocation{UserID: alice, Data: discordtest.SelectMenu{CustomID: idSwitch, Values: []string{"2002"}, MessageID: orig.ID}})
	must(t, text, "Active account is now @second. 12-hour pins: 0/100.")

	m := w.addImages(w.channel.ID, 1, "after the switch")
	text, _ = w.pin(alice, m.ID.String())
	must(t, text, "Pinterest account @second", "12-hour pin count: 1/100")
	if n := len(w.ps.PinsFor("2002")); n != 1 {
		t.Fatalf("%d pins on the second account, want 1", n)
	}
	if n := len(w.ps.PinsFor("1001")); n != 5 {
		t.Fatalf("%d pins on the first account, want still 5", n)
	}
}

// TestPinAtLimitRefusesBatch checks the pre-flight: an account at its
// limit refuses the whole batch, saying when the next slot frees.
func TestPinAtLimitRefusesBatch(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	w.fill("1001", 100)
	m := w.addImages(w.channel.ID, 1, "")
	text, _ := w.pin(alice, m.ID.String())
	next := t0.Add(12 * time.Hour).Unix()
	must(t, text, "Pin limit reached (100/12h), so nothing was pinned with @alicepins", fmt.Sprintf("<t:%d:T> (<t:%d:R>)", next, next))
	if n := w.ps.Count("POST", pinteresttest.PathPins); n != 0 {
		t.Fatalf("%d pin requests reached Pinterest", n)
	}
}

// TestPinContextMenu pins one message through the message command.
func TestPinContextMenu(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	m := w.addImages(w.channel.ID, 3, "three")
	text, _ := w.run(discordtest.Invocation{UserID: alice, Data: discordtest.MessageCommand{Name: cmdPinMessage, TargetID: m.ID}})
	must(t, text, "3 pinned.", "12-hour pin count: 1/100", "12-hour pin count: 2/100", "12-hour pin count: 3/100")
	if n := len(w.ps.PinsFor("1001")); n != 3 {
		t.Fatalf("%d pins, want 3", n)
	}
}

// TestPinBatchCap: ten messages of ten images make ten pins; the other
// ninety are listed as skipped, and the long reply is split into an edit
// and followups of at most 2000 characters.
func TestPinBatchCap(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	var msgs []discordtest.Message
	for range 10 {
		msgs = append(msgs, w.addImages(w.channel.ID, 10, ""))
	}
	text, in := w.pin(alice, ids(msgs...))
	must(t, text, "10 pinned, 90 skipped.", "12-hour pin count: 10/100", "skipped: one command pins at most 10 images")
	if got := strings.Count(text, "skipped: one command pins at most 10 images"); got != 90 {
		t.Fatalf("%d skipped lines, want 90", got)
	}
	if n := len(w.ps.PinsFor("1001")); n != 10 {
		t.Fatalf("%d pins, want 10", n)
	}
	var followups int
	for _, r := range in.Responses() {
		if r.Kind == discordtest.KindFollowup {
			followups++
			if !r.Data.Flags.Has(discord.MessageFlagEphemeral) {
				t.Errorf("followup not ephemeral")
			}
		}
		if r.Data != nil && len([]rune(r.Data.Content)) > 2000 {
			t.Errorf("%s of %d characters", r.Kind, len([]rune(r.Data.Content)))
		}
	}
	if followups == 0 {
		t.Fatal("no followups for a long reply")
	}
}

// TestPinBoardOption pins to the board named in the option, by id or by
// name, and refuses a board the account does not have.
func TestPinBoardOption(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	w.ps.AddAccount("1001", "alicepins", pinteresttest.Board{ID: "b2", Name: "Dogs"})
	m := w.addImages(w.channel.ID, 1, "")

	text, _ := w.pin(alice, m.ID.String(), "b2")
	must(t, text, "board **Dogs**: 1 pinned.")
	text, _ = w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String(), "dogs")
	must(t, text, "board **Dogs**: 1 pinned.")
	text, _ = w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String(), "Birds")
	must(t, text, "`Birds` is not one of @alicepins's boards.")
	for _, p := range w.ps.PinsFor("1001") {
		if p.BoardID != "b2" {
			t.Errorf("pin on board %s, want b2", p.BoardID)
		}
	}
	if n := w.used("1001"); n != 2 {
		t.Fatalf("count %d, want 2", n)
	}
}

// TestPinLinksAndPermissions: links into other channels of the server pin
// when the user can read them; a channel the user cannot view refuses the
// whole batch, whether the bot could read it or not.
func TestPinLinksAndPermissions(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	role, err := w.dc.AddRole(discordtest.Role{GuildID: w.guild.ID, Name: "staff"})
	if err != nil {
		t.Fatal(err)
	}
	staff, err := w.dc.AddMember(discordtest.Member{GuildID: w.guild.ID, Username: "staffer", Roles: []snowflake.ID{role.ID}})
	if err != nil {
		t.Fatal(err)
	}
	w.link(staff.UserID, "3003", "staffpins")
	open := w.addChannel("open")
	botView := discordtest.MemberOverwrite(w.dc.BotUserID(), discord.PermissionViewChannel, 0)
	secret := w.addChannel("secret", discordtest.RoleOverwrite(w.guild.ID, 0, discord.PermissionViewChannel),
		discordtest.RoleOverwrite(role.ID, discord.PermissionViewChannel, 0), botView)
	hidden := w.addChannel("hidden", discordtest.RoleOverwrite(w.guild.ID, 0, discord.PermissionViewChannel))
	mHidden := w.addImages(hidden.ID, 1, "")
	noHistory := w.addChannel("nohistory", discordtest.RoleOverwrite(w.guild.ID, 0, discord.PermissionReadMessageHistory))
	mOpen := w.addImages(open.ID, 1, "")
	mSecret := w.addImages(secret.ID, 1, "")
	mNoHist := w.addImages(noHistory.ID, 1, "")
	link := func(c snowflake.ID, m discordtest.Message) string {
		return fmt.Sprintf("https://discord.com/channels/%d/%d/%d", w.guild.ID, c, m.ID)
	}

	text, _ := w.pin(alice, link(open.ID, mOpen))
	must(t, text, "1 pinned.")

	text, _ = w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String()+" "+link(secret.ID, mSecret))
	must(t, text, "Nothing was pinned: you cannot view that channel (`"+link(secret.ID, mSecret)+"`).")
	text, _ = w.pin(alice, link(hidden.ID, mHidden))
	must(t, text, "Nothing was pinned: Pinbot cannot view that channel")
	text, _ = w.pin(alice, link(noHistory.ID, mNoHist))
	must(t, text, "Nothing was pinned: you cannot read the message history of that channel")
	// A bare ID names a message of the invoking channel: the secret
	// message is not found there.
	text, _ = w.pin(alice, mSecret.ID.String())
	must(t, text, "failed: message not found")
	if n := len(w.ps.PinsFor("1001")); n != 1 {
		t.Fatalf("%d pins, want 1", n)
	}
	if n := w.used("1001"); n != 1 {
		t.Fatalf("count %d, want 1", n)
	}

	// The staff role sees the secret channel.
	text, _ = w.pin(staff.UserID, link(secret.ID, mSecret))
	must(t, text, "1 pinned.")
}

// addChannel adds a text channel to the world's guild.
func (w *world) addChannel(name string, ow ...discordtest.Overwrite) discordtest.Channel {
	w.t.Helper()
	c, err := w.dc.AddChannel(discordtest.Channel{GuildID: w.guild.ID, Name: name, Overwrites: ow})
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}
