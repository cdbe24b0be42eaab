package digest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// TestResumeAfterClose: lines gathered and not sent when Close gave up
// stay in the Outbox; the next Sender on it sends each once, and a third
// sends nothing again.
func TestResumeAfterClose(t *testing.T) {
	h := newHarness(t, Config{})
	alice, bob := h.member("alice"), h.member("bob")
	h.srv.SetDMsOpen(bob, false)
	// Discord holds both DM channels until the Sender is gone.
	hold := make(chan struct{})
	if err := h.srv.Inject(discordtest.RouteCreateDM, 2, discordtest.Fault{Hold: hold}); err != nil {
		t.Fatal(err)
	}
	h.add(alice, h.general.ID, "✅ one")
	h.add(alice, h.general.ID, "✅ two")
	h.add(bob, h.general.ID, "❌ three")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.s.Close(ctx); err == nil {
		t.Fatal("Close sent everything, want it to give up")
	}
	close(hold)
	if got := h.outbox.stored(); !slices.Equal(got, []string{"✅ one", "✅ two", "❌ three"}) {
		t.Fatalf("outbox after Close holds %q", got)
	}
	if n := len(h.requests(discordtest.RouteCreateMessage, "")); n != 0 {
		t.Fatalf("%d messages sent before the restart", n)
	}

	h.s = h.newSender()
	n, err := h.s.Resume(context.Background())
	if err != nil || n != 3 {
		t.Fatalf("Resume = %d, %v; want 3 lines", n, err)
	}
	h.runUntil(h.idle)
	if got := contents(h.srv.DMs(alice)); !slices.Equal(got, []string{"Queued pins that ran:\n✅ one\n✅ two"}) {
		t.Errorf("alice's DMs %q", got)
	}
	if got := contents(h.srv.Messages(h.general.ID)); !slices.Equal(got, []string{fallbackPrefix(bob) + "Queued pins that ran:\n❌ three"}) {
		t.Errorf("bob's channel %q", got)
	}
	if got := h.outbox.stored(); len(got) != 0 {
		t.Errorf("outbox after delivery holds %q", got)
	}
	if st := h.s.Stats(); st.Resumed != 3 || st.Messages != 2 {
		t.Errorf("stats %+v", st)
	}

	sent := len(h.requests(discordtest.RouteCreateMessage, ""))
	if err := h.s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.s = h.newSender()
	if n, err := h.s.Resume(context.Background()); err != nil || n != 0 {
		t.Fatalf("Resume after delivery = %d, %v; want nothing", n, err)
	}
	h.runUntil(h.idle)
	if n := len(h.requests(discordtest.RouteCreateMessage, "")); n != sent {
		t.Errorf("%d messages sent after the second restart, want none", n-sent)
	}
}

// TestKeepKeepsFirst: a second Keep of a job's line keeps and returns the
// first; a line whose key is gathered, or was sent lately, is not added
// again, and a copy stored since leaves the Outbox.
func TestKeepKeepsFirst(t *testing.T) {
	h := newHarness(t, Config{})
	alice := h.member("alice")
	ctx := context.Background()
	first := Line{Key: Key{Account: "acct", Job: 7}, User: alice, Guild: h.guild.ID, Channel: h.general.ID, Text: "✅ pinned"}
	second := first
	second.Text = "❔ the pin may exist"
	if got, err := h.s.Keep(ctx, first); err != nil || got != first {
		t.Fatalf("Keep(first) = %+v, %v", got, err)
	}
	got, err := h.s.Keep(ctx, second)
	if err != nil || got != first {
		t.Fatalf("Keep(second) = %+v, %v; want the first", got, err)
	}
	if stored := h.outbox.stored(); !slices.Equal(stored, []string{"✅ pinned"}) {
		t.Fatalf("outbox holds %q", stored)
	}
	if !h.s.Add(got) || h.s.Add(got) || h.s.Add(second) {
		t.Fatal("Add took a key that is gathered already")
	}
	h.runUntil(h.idle)
	if dms := contents(h.srv.DMs(alice)); !slices.Equal(dms, []string{"Queued pins that ran:\n✅ pinned"}) {
		t.Fatalf("DMs %q", dms)
	}

	// Reported again after it was sent: not sent again, and not kept.
	if got, err := h.s.Keep(ctx, second); err != nil || got != second {
		t.Fatalf("Keep after delivery = %+v, %v", got, err)
	}
	if h.s.Add(second) {
		t.Error("Add took the key of a line sent lately")
	}
	h.runUntil(h.idle)
	if dms := h.srv.DMs(alice); len(dms) != 1 {
		t.Errorf("%d DMs, want the first only", len(dms))
	}
	if stored := h.outbox.stored(); len(stored) != 0 {
		t.Errorf("outbox holds %q, want nothing", stored)
	}
}

// TestKeepRefusesBadLines: Keep says what is missing from a line.
func TestKeepRefusesBadLines(t *testing.T) {
	h := newHarness(t, Config{})
	good := Line{Key: Key{Account: "acct", Job: 1}, User: 42, Text: "✅"}
	steps := []struct {
		change func(*Line)
		want   string
	}{
		{func(l *Line) { l.Key = Key{} }, "no key"},
		{func(l *Line) { l.Key.Account = "" }, "no account"},
		{func(l *Line) { l.Key.Job = 0 }, "no job ID"},
		{func(l *Line) { l.User = 0 }, "no user"},
		{func(l *Line) { l.Text = " \n " }, "blank text"},
	}
	for i, st := range steps {
		l := good
		st.change(&l)
		if _, err := h.s.Keep(context.Background(), l); err == nil || !strings.Contains(err.Error(), st.want) {
			t.Errorf("step %d: Keep = %v, want an error saying %q", i, err, st.want)
		}
	}
	if stored := h.outbox.stored(); len(stored) != 0 {
		t.Errorf("outbox holds %q", stored)
	}
}

// TestOutboxFailing: when the Outbox fails, Keep says so, the line is
// still sent from memory, and the failed deletion is logged.
func TestOutboxFailing(t *testing.T) {
	h := newHarness(t, Config{})
	alice := h.member("alice")
	h.outbox.mu.Lock()
	h.outbox.fail = errors.New("disk gone")
	h.outbox.mu.Unlock()
	l := Line{Key: Key{Account: "acct", Job: 1}, User: alice, Text: "✅ pinned"}
	kept, err := h.s.Keep(context.Background(), l)
	if err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Fatalf("Keep = %v, want the Outbox's error", err)
	}
	if !h.s.Add(kept) {
		t.Fatal("Add refused the line")
	}
	h.runUntil(h.idle)
	if dms := contents(h.srv.DMs(alice)); !slices.Equal(dms, []string{"Queued pins that ran:\n✅ pinned"}) {
		t.Errorf("DMs %q", dms)
	}
	if st := h.s.Stats(); st.OutboxErrors != 2 {
		t.Errorf("stats %+v, want 2 outbox errors (Keep, Delete)", st)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "removing digest lines from the outbox failed") {
		t.Errorf("no log line for the failed deletion:\n%s", logs)
	}
	if _, err := h.s.Resume(context.Background()); err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Errorf("Resume = %v, want the Outbox's error", err)
	}
}
