package bot

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// TestCloseWaitsForHandlers: Close returns only after the running /pin
// finished, its pin committed and its reply delivered; a command
// acknowledged but still waiting for a worker is told the bot restarts;
// interactions that arrive after Close began are not worked on.
func TestCloseWaitsForHandlers(t *testing.T) {
	w := newWorld(t, worldOptions{workers: 1})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	arrived := make(chan struct{}, 1)
	w.ps.Inject(pinteresttest.Fault{Path: pinteresttest.PathPins, Arrived: arrived, Delay: 200 * time.Millisecond})
	in := w.interact(pinInvocation(alice, w.addImages(w.channel.ID, 1, "").ID.String()))
	select {
	case <-arrived:
	case <-w.ctx.Done():
		t.Fatal("the pin never reached Pinterest")
	}
	queued := w.interact(pinInvocation(alice, w.addImages(w.channel.ID, 1, "").ID.String()))
	if r, err := queued.WaitResponse(w.ctx); err != nil || !r.OK() {
		t.Fatalf("queued command not acknowledged: %+v, %v", r, err)
	}
	if err := w.bot.Close(w.ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	w.waitDone(queued)
	must(t, w.text(queued), msgRestarting)
	rs := in.Responses()
	if len(rs) < 2 || rs[len(rs)-1].Kind != discordtest.KindEditOriginal || !strings.Contains(rs[len(rs)-1].Data.Content, "1 pinned.") {
		t.Fatalf("after Close, responses are %+v; want the final reply delivered", rs)
	}
	if n := w.used("1001"); n != 1 {
		t.Fatalf("count %d, want the pin committed", n)
	}

	late := w.interact(discordtest.Invocation{UserID: alice, Data: discordtest.ChatInput{Name: cmdSettings}})
	w.waitDone(late)
	if rs := late.Responses(); len(rs) != 0 {
		t.Fatalf("interaction after Close answered: %+v", rs)
	}
	if err := w.bot.Start(w.ctx); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

// TestCloseCancelsStuckHandlers: a handler stuck past CloseTimeout is
// cancelled; Close still closes the client and says handlers were
// cancelled. The slot of the abandoned pin stays counted.
func TestCloseCancelsStuckHandlers(t *testing.T) {
	w := newWorld(t, worldOptions{closeTimeout: 50 * time.Millisecond})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	arrived := make(chan struct{}, 1)
	w.ps.Inject(pinteresttest.Fault{Path: pinteresttest.PathPins, Arrived: arrived, Hang: true})
	in := w.interact(pinInvocation(alice, w.addImages(w.channel.ID, 1, "").ID.String()))
	select {
	case <-arrived:
	case <-w.ctx.Done():
		t.Fatal("the pin never reached Pinterest")
	}
	ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
	defer cancel()
	err := w.bot.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Fatalf("Close = %v, want handlers cancelled", err)
	}
	w.waitDone(in)
	st, err := w.engine.Status(w.ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	if st.Used != 1 {
		t.Fatalf("count %d, want the abandoned pin's slot still counted", st.Used)
	}
	w.closeErrOK = true // the cleanup's Close returns the same error
}
