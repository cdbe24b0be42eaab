package bot

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/disgoorg/disgo/discord"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// TestPinPreflightSaysNothingWasPinned: at the limit the whole batch is
// refused with the limit and when the next slot frees; the spec's
// "Skipped remaining pins." is for a batch the limit stops after some
// pins (TestPinEachPictureTakesASlot), and would not be true here.
func TestPinPreflightSaysNothingWasPinned(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	w.fill("1001", 100)
	m := w.addImages(w.channel.ID, 2, "")
	text, _ := w.pin(alice, m.ID.String())
	must(t, text, "Pin limit reached (100/12h), so nothing was pinned with @alicepins: the next slot frees at <t:")
	mustNot(t, text, "Skipped remaining pins")
	if n := len(w.ps.PinsFor("1001")); n != 0 {
		t.Fatalf("%d pins, want 0", n)
	}
}

// TestPinEachPictureTakesASlot: at 98/100 one
// message with two image attachments, a non-image file and an image embed
// makes exactly two pins (99/100, 100/100), then stops with the spec's
// limit message and skips its third picture.
func TestPinEachPictureTakesASlot(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	w.fill("1001", 98)
	m, err := w.dc.AddMessage(discordtest.Message{ChannelID: w.channel.ID, Attachments: []discordtest.Attachment{
		{Filename: "a.png", ContentType: "image/png", Width: 10, Height: 10},
		{Filename: "notes.pdf", ContentType: "application/pdf"},
		{Filename: "b.jpg", ContentType: "image/jpeg", Width: 10, Height: 10},
	}, Embeds: []discord.Embed{{Type: discord.EmbedTypeImage, URL: "https://i.example/c.png", Thumbnail: &discord.EmbedResource{URL: "https://i.example/c.png"}}}})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := w.pin(alice, m.ID.String())
	must(t, text, "2 pinned, 1 skipped.",
		"(image 1 of 3) → <https://www.pinterest.com/pin/", "12-hour pin count: 99/100",
		"(image 2 of 3) → <https://www.pinterest.com/pin/", "12-hour pin count: 100/100",
		"Pin limit reached (100/12h). Skipped remaining pins. The next slot frees at <t:",
		fmt.Sprintf("%d> (image 3 of 3) · skipped: limit reached", m.ID))
	if n := len(w.ps.PinsFor("1001")); n != 2 {
		t.Fatalf("%d pins, want 2", n)
	}
	if n := w.used("1001"); n != 100 {
		t.Fatalf("count %d, want 100", n)
	}
}

// endingCtx is a context that ends while a call is under way: its Err is
// nil for the first check (pin's own ctx.Err before Reserve) and Canceled
// from then on; Done is closed from the start. It pins down the window in
// which a handler's deadline or Close's cancellation lands while Reserve
// waits for the account actor's answer.
type endingCtx struct {
	context.Context
	done   chan struct{}
	checks atomic.Int32
}

func (c *endingCtx) Done() <-chan struct{} { return c.done }
func (c *endingCtx) Err() error {
	if c.checks.Add(1) == 1 {
		return nil
	}
	return context.Canceled
}

// TestPinCancelledReserveLeavesNoSlot: when the handler's context ends
// while Reserve waits for its answer, the slot the actor granted must not
// be left neither committed nor released (pending, then counted as a pin
// for 12 hours at the end of its lease, though no pin was made): Reserve
// does not run on a context that can end before its answer is read.
func TestPinCancelledReserveLeavesNoSlot(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	w.fill("1001", 1) // the account's actor is resident
	sess, err := w.bot.session(w.ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	acct, refusal := w.bot.activeAccount(w.ctx, alice.String())
	if refusal != "" {
		t.Fatal(refusal)
	}
	m := w.addImages(w.channel.ID, 1, "")
	ref := messageRef{GuildID: w.guild.ID, ChannelID: w.channel.ID, MessageID: m.ID, Raw: m.ID.String()}
	msg := discord.Message{ID: m.ID, ChannelID: w.channel.ID}
	im := image{URL: m.Attachments[0].URL}
	for attempt := 0; attempt < 50; attempt++ {
		ctx := &endingCtx{Context: context.Background(), done: make(chan struct{})}
		close(ctx.done)
		p := pinner{b: w.bot, inv: invocation{ctx: ctx, log: zerolog.Nop()}, acct: acct, name: "@alicepins", sess: sess, boardID: "b1001"}
		e := entry{ref: ref, image: 1, images: 1}
		p.pin(msg, im, &e)
		st, err := w.engine.Status(w.ctx, "1001")
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending != 0 {
			if n := len(w.ps.PinsFor("1001")); n != 0 {
				t.Fatalf("%d pins made", n)
			}
			t.Fatalf("after a /pin whose context ended during Reserve (entry %q: %s): %d slot(s) neither committed nor released, count %d/%d with no pin made",
				e.why, p.rep.stop, st.Pending, st.Used, st.Limit)
		}
	}
}
