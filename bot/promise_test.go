package bot

import (
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// The promise as Pinterest sees it: whatever becomes of a request, the
// stand-in's own ledger never holds more than the limit in any rolling
// window.

// advance moves the engine's and Pinterest's clocks on together.
func (w *world) advance(d time.Duration) {
	w.eclock.Advance(d)
	w.pclock.Advance(d)
}

// checkLedger fails the test when Pinterest holds more pins of account
// than the limit in some rolling 12 hours.
func (w *world) checkLedger(account string) {
	w.t.Helper()
	if n := w.ps.MaxInWindow(account, 12*time.Hour); n > 100 {
		w.t.Fatalf("Pinterest holds %d pins of account %s in one 12-hour window, more than 100", n, account)
	}
}

// giveUpTransport gives up on the first POST /v5/pins once the stand-in
// has it (arrived), as a client whose read timed out after sending: the
// request stays with the stand-in, and the client sees an i/o timeout.
type giveUpTransport struct {
	arrived <-chan struct{}
	done    atomic.Bool
}

func (g *giveUpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.URL.Path != pinteresttest.PathPins || g.done.Swap(true) {
		return http.DefaultTransport.RoundTrip(req)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(req.Context()))
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultTransport.RoundTrip(req.Clone(ctx))
		if resp != nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-g.arrived
	cancel()
	<-errc
	return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
}

// TestPinUnknownOutcomeCountsAtLeaseEnd: the first POST times out after
// it was sent, and Pinterest creates the pin 20 s later. The engine counts
// that slot as a pin made at the end of its lease, not at the error, so 12
// hours after the error (while Pinterest's pin still counts there) it
// does not grant a 101st pin.
func TestPinUnknownOutcomeCountsAtLeaseEnd(t *testing.T) {
	arrived := make(chan struct{}, 1)
	w := newWorld(t, worldOptions{pinterestHTTP: &http.Client{Transport: &giveUpTransport{arrived: arrived}}})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")

	until, done := make(chan struct{}), make(chan struct{}, 1)
	f := pinteresttest.DelayedCreate(until)
	f.Arrived, f.Done = arrived, done
	w.ps.Inject(f)
	first := w.addImages(w.channel.ID, 1, "first")
	text, _ := w.pin(alice, first.ID.String())
	must(t, text, "0 pinned, 1 failed.", "Pinterest did not answer clearly", "12-hour pin count: 1/100")
	w.advance(20 * time.Second)
	close(until)
	<-done
	if pins := w.ps.PinsFor("1001"); len(pins) != 1 || !pins[0].CreatedAt.Equal(t0.Add(20*time.Second)) {
		t.Fatalf("Pinterest pins %+v, want one created at %v", pins, t0.Add(20*time.Second))
	}

	// 99 more pins, ten at a time.
	for i := 0; i < 10; i++ {
		n := 10
		if i == 9 {
			n = 9
		}
		m := w.addImages(w.channel.ID, n, "more")
		text, _ := w.pin(alice, m.ID.String())
		must(t, text, "pinned")
	}
	if n := len(w.ps.PinsFor("1001")); n != 100 {
		t.Fatalf("Pinterest holds %d pins, want 100", n)
	}
	// 12 hours and 10 s after the error: Pinterest's pin of 09:00:20 still
	// counts there, so the engine must not grant.
	w.advance(12*time.Hour - 10*time.Second)
	last := w.addImages(w.channel.ID, 1, "one more")
	text, _ = w.pin(alice, last.ID.String())
	must(t, text, "Pin limit reached (100/12h), so nothing was pinned")
	w.checkLedger("1001")
	// Once the lease's end is 12 hours old, the slot is free.
	w.advance(5 * time.Minute)
	text, _ = w.pin(alice, last.ID.String())
	must(t, text, "1 pinned.")
	w.checkLedger("1001")
}

// TestPinSlowRefreshPastLease: the POST is answered 401 and the token
// refresh takes 6 minutes, longer than the slot's lease. The retried POST
// is never sent (it could reach Pinterest after the slot stopped
// counting as pending); the slot is released and the user told.
func TestPinSlowRefreshPastLease(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	w.ps.Inject(pinteresttest.ExpiredToken(pinteresttest.PathPins))
	until, arrived := make(chan struct{}), make(chan struct{}, 1)
	f := pinteresttest.HoldUntil(pinteresttest.PathToken, until)
	f.Arrived = arrived
	w.ps.Inject(f)

	m := w.addImages(w.channel.ID, 2, "")
	in := w.interact(pinInvocation(alice, m.ID.String()))
	<-arrived
	w.advance(6 * time.Minute)
	close(until)
	w.waitDone(in)
	text := w.text(in)
	must(t, text, "0 pinned, 1 failed, 1 skipped.", "Pinterest was too slow to renew Pinbot's access in time, so it was not sent",
		"Pinterest was slow to answer, so Pinbot stopped here.")
	if n := w.ps.Count(http.MethodPost, pinteresttest.PathPins); n != 1 {
		t.Errorf("Pinterest received %d POST /v5/pins, want only the one answered 401", n)
	}
	if n := len(w.ps.PinsFor("1001")); n != 0 {
		t.Errorf("Pinterest holds %d pins, want none", n)
	}
	if n := w.used("1001"); n != 0 {
		t.Errorf("count %d, want the slot released", n)
	}
	// The rotated token was kept: the next /pin works without a new link.
	text, _ = w.pin(alice, m.ID.String())
	must(t, text, "2 pinned.")
	if strings.Contains(text, "link") {
		t.Errorf("after the slow refresh the account needs a new link: %s", text)
	}
}

// TestSlotMarginWithinLease: a margin that leaves no time in the lease is
// refused at New, naming the setting.
func TestSlotMarginWithinLease(t *testing.T) {
	w := newWorld(t, worldOptions{})
	_, err := New(Config{Token: w.dc.Token(), Engine: w.engine, Links: w.links, Pinterest: w.pc, SlotMargin: 5 * time.Minute})
	if err == nil || !strings.Contains(err.Error(), "Config.SlotMargin") {
		t.Fatalf("New with a margin as long as the lease: %v, want an error naming Config.SlotMargin", err)
	}
}
