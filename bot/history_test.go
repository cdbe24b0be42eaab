package bot

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/internal/discordio/discordiotest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// TestPinNeverTwice: a picture pinned to a board is not pinned there again
// (the reply gives the pin's address, and no slot is used), unless /pin
// says again:true; another board is another matter.
func TestPinNeverTwice(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "alicepins")
	w.ps.AddAccount("1001", "alicepins", pinteresttest.Board{ID: "b2", Name: "Other"})
	m := w.images(2, "")
	jump := fmt.Sprintf("https://discord.com/channels/%d/%d/%d", w.guild, w.channel, m.ID)
	pin := func(opts ...discordiotest.Opt) string {
		return w.run(w.dc.SlashCommand(w.at(alice), cmdPin, append([]discordiotest.Opt{{Name: optMessages, Value: m.ID.String()}}, opts...)...))
	}
	must(t, pin(), "2 pinned.")
	pins := w.ps.PinsFor("1001")

	text := pin()
	must(t, text, "0 pinned, 2 pinned before.",
		"↩️ <"+jump+"> (image 1 of 2) · already pinned → <"+pinPage(pins[0])+">",
		"↩️ <"+jump+"> (image 2 of 2) · already pinned → <"+pinPage(pins[1])+">")
	if n := len(w.ps.PinsFor("1001")); n != 2 {
		t.Fatalf("%d pins, want 2", n)
	}
	if st := w.status("1001"); st.Used != 2 {
		t.Fatalf("count %d, want 2: no slot for a picture pinned before", st.Used)
	}

	must(t, pin(discordiotest.Opt{Name: optAgain, Bool: new(true)}), "2 pinned.")
	must(t, pin(discordiotest.Opt{Name: optBoard, Value: "b2"}), "board **Other**: 2 pinned.")
	if n := len(w.ps.PinsFor("1001")); n != 6 {
		t.Fatalf("%d pins, want 6", n)
	}
}

// TestPinNeverTwiceSignedURL: an image embed is known by its address
// without the signed query of Discord's CDN, which changes every time a
// message is read.
func TestPinNeverTwiceSignedURL(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "alicepins")
	embed := func(query string) discord.Message {
		u := "https://cdn.discordapp.com/attachments/1/2/cat.png?" + query
		return w.dc.AddMessage(w.channel, discord.Message{Embeds: []discord.Embed{{Type: discord.EmbedTypeImage, URL: u, Thumbnail: &discord.EmbedResource{URL: u}}}})
	}
	pin := func(m discord.Message) string {
		return w.run(w.dc.SlashCommand(w.at(alice), cmdPin, discordiotest.Opt{Name: optMessages, Value: m.ID.String()}))
	}
	must(t, pin(embed("ex=7fffffff&is=1&hm=aa")), "1 pinned.")
	must(t, pin(embed("ex=7ffffffe&is=2&hm=bb")), "0 pinned, 1 pinned before.", "already pinned → <")
	// Elsewhere a query is part of the picture's address.
	other := func(q string) discord.Message {
		u := "https://images.example/cat.png?v=" + q
		return w.dc.AddMessage(w.channel, discord.Message{Embeds: []discord.Embed{{Type: discord.EmbedTypeImage, URL: u, Thumbnail: &discord.EmbedResource{URL: u}}}})
	}
	must(t, pin(other("1")), "1 pinned.")
	must(t, pin(other("2")), "1 pinned.")
}

// TestQueuedPinNeverTwice: the same picture queued twice is pinned once:
// the second finds it pinned when it runs, gives its slot back and
// reports the pin's address.
func TestQueuedPinNeverTwice(t *testing.T) {
	started := make(chan actors.Job, 16)
	w := newFakeWorld(t, func(o *worldOptions) { o.onJob = func(j actors.Job) { started <- j } })
	alice := w.user("alice")
	w.link(alice, "1001", "alicepins")
	m := w.images(1, "")
	w.queueFull(alice, "1001", m)
	text := w.run(w.dc.SlashCommand(w.at(alice), cmdPin,
		discordiotest.Opt{Name: optMessages, Value: m.ID.String()}, discordiotest.Opt{Name: optWhenFull, Value: whenFullQueue}))
	must(t, text, "queued")
	w.eclock.Advance(12 * time.Hour)
	w.pclock.Advance(12 * time.Hour)
	first, second := <-started, <-started
	w.bot.RunJob(first)
	w.bot.RunJob(second)
	dms := w.dms(alice)
	pins := w.ps.PinsFor("1001")
	if len(pins) != 1 {
		t.Fatalf("%d pins, want 1", len(pins))
	}
	jump := fmt.Sprintf("https://discord.com/channels/%d/%d/%d", w.guild, w.channel, m.ID)
	must(t, dms, "✅ <"+jump+"> · @alicepins → <"+pinPage(pins[0])+">", "↩️ <"+jump+"> · @alicepins · already pinned → <"+pinPage(pins[0])+">")
	if st := w.status("1001"); st.Used != 1 || st.Pending != 0 {
		t.Fatalf("status %+v, want one pin counted and the second slot given back", st)
	}
	if strings.Count(dms, "already pinned") != 1 {
		t.Fatalf("DMs:\n%s", dms)
	}
}
