package bot

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/internal/discordio/discordiotest"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/metrics/metricstest"
)

// The searches for pins whose outcome is unknown, on the in-memory
// Discord, their waits on the engine clock fast-forwarded.

// newResolveWorld is a fakeWorld whose searches do not wait, with alice
// linked to account 1001.
func newResolveWorld(t *testing.T, opts ...func(*worldOptions)) (*fakeWorld, snowflake.ID) {
	w := newFakeWorld(t, opts...)
	w.bot.sleepUntil = w.fastForward
	alice := w.user("alice")
	w.link(alice, "1001", "alicepins")
	return w, alice
}

// pinOne runs /pin on a new message with one image and returns the reply
// and the message's link.
func (w *fakeWorld) pinOne(user snowflake.ID) (string, string) {
	w.t.Helper()
	m := w.images(1, "")
	text := w.run(w.dc.SlashCommand(w.at(user), cmdPin, discordiotest.Opt{Name: optMessages, Value: m.ID.String()}))
	return text, fmt.Sprintf("https://discord.com/channels/%d/%d/%d", w.guild, w.channel, m.ID)
}

// dms waits for the searches under way, closes the bot (which sends the
// digests gathered) and returns user's DMs.
func (w *fakeWorld) dms(user snowflake.ID) string {
	w.t.Helper()
	w.bot.resolving.Wait()
	if err := w.bot.Close(w.ctx); err != nil {
		w.t.Fatal(err)
	}
	var parts []string
	for _, m := range w.dc.DMs(user) {
		parts = append(parts, m.Content)
	}
	return strings.Join(parts, "\n")
}

// status is the account's status, its reservations settled.
func (w *fakeWorld) status(account string) actors.Status {
	w.t.Helper()
	st, err := w.engine.Status(w.ctx, account)
	if err != nil {
		w.t.Fatal(err)
	}
	return st
}

// lookups returns pinbot_unknown_pins_resolved_total by result.
func (w *fakeWorld) lookups(result string) float64 {
	w.t.Helper()
	return metricstest.ScrapeHandler(w.t, w.metrics.Handler()).Get("pinbot_unknown_pins_resolved_total", "result", result)
}

// listings counts the listings of pins the stand-in answered.
func (w *fakeWorld) listings() int {
	n := 0
	for _, r := range w.ps.Requests() {
		if r.Method == http.MethodGet && r.Path == pinteresttest.PathPins {
			n++
		}
	}
	return n
}

// TestResolveLostAnswerFound: a pin Pinterest made whose answer was lost
// is found by its mark: its slot is committed (not left pending), nothing
// is sent twice, and the user learns it was pinned, with its URL.
func TestResolveLostAnswerFound(t *testing.T) {
	w, alice := newResolveWorld(t)
	w.ps.Inject(pinteresttest.CreatedButFailed(http.StatusBadGateway))
	text, link := w.pinOne(alice)
	must(t, text, "the pin may exist", "Pinbot will look for it on Pinterest and tell you what it finds")
	dms := w.dms(alice)
	pins := w.ps.PinsFor("1001")
	if len(pins) != 1 {
		t.Fatalf("%d pins on Pinterest, want 1", len(pins))
	}
	must(t, dms, "✅ <"+link+"> · @alicepins → <"+pinPage(pins[0])+"> (Pinterest's answer was lost; Pinbot found the pin)")
	if st := w.status("1001"); st.Used != 1 || st.Pending != 0 {
		t.Fatalf("status %+v, want the pin counted and nothing pending", st)
	}
	if n := w.listings(); n != 1 {
		t.Errorf("%d listings, want 1 (found at the first)", n)
	}
	if w.lookups("found") != 1 || w.lookups("absent")+w.lookups("failed") != 0 {
		t.Errorf("lookups found %v, absent %v, failed %v; want one found", w.lookups("found"), w.lookups("absent"), w.lookups("failed"))
	}
}

// TestResolveNeverMade: a POST answered 5xx that made nothing is proven
// absent only by a listing begun once Pinterest must have acted and
// listed it; its slot is then given back and the user told.
func TestResolveNeverMade(t *testing.T) {
	w, alice := newResolveWorld(t)
	w.ps.Inject(pinteresttest.Fault{Method: http.MethodPost, Path: pinteresttest.PathPins, Status: http.StatusBadGateway})
	start := w.engine.Now()
	text, link := w.pinOne(alice)
	must(t, text, "the pin may exist")
	dms := w.dms(alice)
	must(t, dms, "❌ <"+link+"> · @alicepins · not pinned: Pinterest never made it")
	if st := w.status("1001"); st.Used != 0 || st.Pending != 0 {
		t.Fatalf("status %+v, want the slot given back", st)
	}
	if n := len(w.ps.PinsFor("1001")); n != 0 {
		t.Fatalf("%d pins, want none (never sent again)", n)
	}
	if now, by := w.engine.Now(), start.Add(DefaultSlotMargin+DefaultListingLag); now.Before(by) {
		t.Fatalf("released at %v, before %v: Pinterest may still have listed it", now, by)
	}
	if n := w.listings(); n != 2 {
		t.Errorf("%d listings, want 2 (after Pinterest acted, then once it must list the pin)", n)
	}
	if w.lookups("absent") != 1 {
		t.Errorf("lookups absent %v, want 1", w.lookups("absent"))
	}
}

// TestResolveListingLag: a pin the listing shows late is not taken for
// absent by a listing begun before it must show: its slot is never freed
// early, and the later listing finds it.
func TestResolveListingLag(t *testing.T) {
	w, alice := newResolveWorld(t)
	w.ps.SetListingLag(DefaultSlotMargin + DefaultListingLag - time.Second)
	w.ps.Inject(pinteresttest.CreatedButFailed(http.StatusBadGateway))
	_, link := w.pinOne(alice)
	dms := w.dms(alice)
	must(t, dms, "✅ <"+link+"> · @alicepins → <")
	if st := w.status("1001"); st.Used != 1 || st.Pending != 0 {
		t.Fatalf("status %+v, want the pin counted", st)
	}
	if n := w.listings(); n != 2 {
		t.Errorf("%d listings, want 2 (the first did not show it)", n)
	}
}

// TestResolveLookupFails: when Pinterest's listing keeps failing, the
// slot stays to count as a pin made at its deadline, and the user is not
// told anything more than the reply said.
func TestResolveLookupFails(t *testing.T) {
	w, alice := newResolveWorld(t)
	f := pinteresttest.ListingFailed(http.StatusServiceUnavailable)
	f.Times = -1
	w.ps.Inject(f)
	w.ps.Inject(pinteresttest.Fault{Method: http.MethodPost, Path: pinteresttest.PathPins, Status: http.StatusBadGateway})
	w.pinOne(alice)
	if dms := w.dms(alice); dms != "" {
		t.Fatalf("DMs %q, want none", dms)
	}
	if st := w.status("1001"); st.Used != 1 {
		t.Fatalf("status %+v, want the slot still counted", st)
	}
	if n := w.listings(); n < maxLookupFailures {
		t.Errorf("%d listings, want %d tries", n, maxLookupFailures)
	}
	if w.lookups("failed") != 1 {
		t.Errorf("lookups failed %v, want 1", w.lookups("failed"))
	}
}

// queuedJobWorld is a resolve world whose engine hands started jobs to
// the returned channel, with one pin of alice's queued behind a full
// window and started.
func queuedJobWorld(t *testing.T) (*fakeWorld, snowflake.ID, chan actors.Job, actors.Job, string) {
	started := make(chan actors.Job, 16)
	w, alice := newResolveWorld(t, func(o *worldOptions) { o.onJob = func(j actors.Job) { started <- j } })
	m := w.images(1, "")
	w.queueFull(alice, "1001", m)
	w.eclock.Advance(12 * time.Hour)
	w.pclock.Advance(12 * time.Hour)
	j := <-started
	return w, alice, started, j, fmt.Sprintf("https://discord.com/channels/%d/%d/%d", w.guild, w.channel, m.ID)
}

// TestResolveQueuedPin: a queued pin whose answer was lost is found and
// done with its URL; one never made goes back to the head of the queue
// and is pinned once when it runs again.
func TestResolveQueuedPin(t *testing.T) {
	t.Run("found", func(t *testing.T) {
		w, alice, _, j, link := queuedJobWorld(t)
		w.ps.Inject(pinteresttest.CreatedButFailed(http.StatusBadGateway))
		w.bot.RunJob(j)
		dms := w.dms(alice)
		pins := w.ps.PinsFor("1001")
		if len(pins) != 1 {
			t.Fatalf("%d pins, want 1", len(pins))
		}
		must(t, dms, "✅ <"+link+"> · @alicepins → <"+pinPage(pins[0])+">")
		if js := w.waiting("1001"); len(js) != 0 {
			t.Fatalf("%d jobs waiting, want none", len(js))
		}
	})
	t.Run("never made", func(t *testing.T) {
		w, alice, started, j, link := queuedJobWorld(t)
		w.ps.Inject(pinteresttest.Fault{Method: http.MethodPost, Path: pinteresttest.PathPins, Status: http.StatusBadGateway})
		w.bot.RunJob(j)
		w.bot.resolving.Wait()
		if js := w.waiting("1001"); len(js) != 1 || js[0].ID != j.ID {
			t.Fatalf("waiting %+v, want the job back in the queue", js)
		}
		w.eclock.Advance(time.Minute)
		again := <-started
		if again.ID != j.ID || again.Slot.ID == j.Slot.ID {
			t.Fatalf("started %+v, want job %d with a new slot", again, j.ID)
		}
		w.bot.RunJob(again)
		dms := w.dms(alice)
		if pins := w.ps.PinsFor("1001"); len(pins) != 1 {
			t.Fatalf("%d pins, want 1", len(pins))
		}
		must(t, dms, "✅ <"+link+"> · @alicepins → <")
	})
}

// TestResolveRecoveredJob: a queued pin a restart left running is looked
// for by its slot's mark: found, it is done with its URL and nothing is
// sent; proven absent, it goes back to the queue instead of "may exist".
func TestResolveRecoveredJob(t *testing.T) {
	t.Run("found", func(t *testing.T) {
		w, alice, _, j, link := queuedJobWorld(t)
		made := w.ps.CreateDirect(pinteresttest.Pin{AccountID: "1001", BoardID: "b1001",
			Link: link + "?" + pinterest.MarkParam + "=" + slotMark(j.Slot)})
		j.Recovered = true
		w.bot.RunJob(j)
		dms := w.dms(alice)
		must(t, dms, "✅ <"+link+"> · @alicepins → <"+pinPage(made)+">")
		if pins := w.ps.PinsFor("1001"); len(pins) != 1 {
			t.Fatalf("%d pins, want the one made before the restart", len(pins))
		}
	})
	t.Run("reserved under a longer lease", func(t *testing.T) {
		// The run that sent it had a lease of an hour: its pin predates
		// this run's lease before the deadline.
		w, alice, _, j, link := queuedJobWorld(t)
		made := w.ps.CreateDirect(pinteresttest.Pin{AccountID: "1001", BoardID: "b1001", CreatedAt: j.Slot.Deadline.Add(-time.Hour),
			Link: link + "?" + pinterest.MarkParam + "=" + slotMark(j.Slot)})
		j.Recovered = true
		w.bot.RunJob(j)
		must(t, w.dms(alice), "✅ <"+link+"> · @alicepins → <"+pinPage(made)+">")
	})
	t.Run("absent", func(t *testing.T) {
		w, _, _, j, _ := queuedJobWorld(t)
		j.Recovered = true
		w.bot.RunJob(j)
		w.bot.resolving.Wait()
		if js := w.waiting("1001"); len(js) != 1 || js[0].ID != j.ID {
			t.Fatalf("waiting %+v, want the job back in the queue", js)
		}
		if n := len(w.ps.PinsFor("1001")); n != 0 {
			t.Fatalf("%d pins, want none sent by the search", n)
		}
		if !w.engine.Now().After(j.Slot.Deadline) {
			t.Fatalf("given back at %v, not after the slot's deadline %v", w.engine.Now(), j.Slot.Deadline)
		}
	})
}

// TestSlotMark: marks are valid for Pinterest, differ between slots, and
// between slots of one ID with different deadlines (after a restore).
func TestSlotMark(t *testing.T) {
	a := actors.Reservation{Account: "1001", ID: 7, Deadline: t0}
	b := a
	b.ID = 8
	c := a
	c.Deadline = t0.Add(time.Millisecond)
	ms := map[string]bool{}
	for _, r := range []actors.Reservation{a, b, c} {
		m := slotMark(r)
		if pinterest.MarkOf("https://x/?"+pinterest.MarkParam+"="+m) != m {
			t.Fatalf("mark %q is not one Pinterest's links carry", m)
		}
		ms[m] = true
	}
	if len(ms) != 3 || slotMark(a) != slotMark(a) {
		t.Fatalf("marks %v: want three, stable", ms)
	}
}

// pinPage is the address of a stand-in pin's page, as the client makes it.
func pinPage(p pinteresttest.Pin) string { return "https://www.pinterest.com/pin/" + p.ID + "/" }
