package bot

import (
	"net/http"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// TestPinDiscordFaults: Discord's side misbehaves while a /pin runs. The
// counts always match what Pinterest holds, and the bot goes on serving.
func TestPinDiscordFaults(t *testing.T) {
	t.Run("message read fails", func(t *testing.T) {
		w := newWorld(t, worldOptions{})
		alice := w.addUser("alice")
		w.link(alice, "1001", "alicepins")
		m := w.addImages(w.channel.ID, 2, "")
		// disgo does not retry a 5xx: one 502 fails the read.
		if err := w.dc.Inject(discordtest.RouteGetMessage, 1, discordtest.Fault{Status: http.StatusBadGateway}); err != nil {
			t.Fatal(err)
		}
		text, _ := w.pin(alice, m.ID.String())
		must(t, text, "Discord did not return the message; try again later")
		if n, pins := w.used("1001"), len(w.ps.PinsFor("1001")); n != 0 || pins != 0 {
			t.Fatalf("count %d, pins %d; want nothing taken", n, pins)
		}
		text, _ = w.pin(alice, m.ID.String())
		must(t, text, "12-hour pin count: 1/100", "12-hour pin count: 2/100")
	})
	t.Run("message read rate limited, then served", func(t *testing.T) {
		w := newWorld(t, worldOptions{})
		alice := w.addUser("alice")
		w.link(alice, "1001", "alicepins")
		m := w.addImages(w.channel.ID, 1, "")
		// disgo waits out the whole-second Retry-After and tries again.
		if err := w.dc.Inject(discordtest.RouteGetMessage, 1, discordtest.Fault{Status: http.StatusTooManyRequests, RetryAfter: time.Second}); err != nil {
			t.Fatal(err)
		}
		text, _ := w.pin(alice, m.ID.String())
		must(t, text, "12-hour pin count: 1/100")
		if n, pins := w.used("1001"), len(w.ps.PinsFor("1001")); n != 1 || pins != 1 {
			t.Fatalf("count %d, pins %d; want 1 and 1", n, pins)
		}
	})
	t.Run("slow message read", func(t *testing.T) {
		w := newWorld(t, worldOptions{})
		alice := w.addUser("alice")
		w.link(alice, "1001", "alicepins")
		m := w.addImages(w.channel.ID, 1, "")
		if err := w.dc.Inject(discordtest.RouteGetMessage, 1, discordtest.Fault{Delay: 300 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		text, _ := w.pin(alice, m.ID.String())
		must(t, text, "12-hour pin count: 1/100")
	})
	t.Run("reply refused", func(t *testing.T) {
		w := newWorld(t, worldOptions{})
		alice := w.addUser("alice")
		w.link(alice, "1001", "alicepins")
		m := w.addImages(w.channel.ID, 3, "")
		// The pins are made, but Discord refuses every edit of the reply:
		// the pins still count, and nothing is answered twice.
		if err := w.dc.Inject(discordtest.RouteEditOriginal, 10, discordtest.Fault{Status: http.StatusInternalServerError}); err != nil {
			t.Fatal(err)
		}
		in := w.interact(pinInvocation(alice, m.ID.String()))
		w.waitDone(in)
		if n, pins := w.used("1001"), len(w.ps.PinsFor("1001")); n != 3 || pins != 3 {
			t.Fatalf("count %d, pins %d; want 3 and 3", n, pins)
		}
		refused := 0
		for _, r := range w.dc.Requests() {
			if r.Route == discordtest.RouteEditOriginal && r.Injected {
				refused++
			}
		}
		if refused == 0 {
			t.Fatal("the bot never tried to edit its reply: the fault was not exercised")
		}
		if d := w.dc.DuplicateAcks(); d != 0 {
			t.Fatalf("%d duplicate acknowledgements", d)
		}
		if st, err := w.engine.Status(w.ctx, "1001"); err != nil || st.Pending != 0 {
			t.Fatalf("status %+v, %v; want every slot settled", st, err)
		}
	})
}
