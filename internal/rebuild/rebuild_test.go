package rebuild_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/rebuild"
)

// TestRestoreFromSixHourOldBackup: a backup taken 6 hours before the
// restore, onto accounts that made pins meanwhile (one of them full, one
// first used after it). Started a minute after the restore, pinbot
// rebuilds every linked account within a minute, and each pins again up
// to exactly what Pinterest's ledger leaves free, never past the limit;
// the account whose grant was revoked meanwhile stays held, is named in
// the log and by Held, and is tried again later.
func TestRestoreFromSixHourOldBackup(t *testing.T) {
	w := newWorld(t)
	w.open(t.TempDir())
	for _, id := range []string{"a", "b", "c", "d"} {
		w.link(id)
	}
	w.pin("a", 3)
	w.pin("b", 2)
	w.pin("c", 1)
	w.clk.Advance(time.Minute)
	file := w.backup()

	// The runs after the backup, which the restore forgets.
	w.clk.Advance(time.Hour)
	w.pin("a", 4)
	w.clk.Advance(2 * time.Hour)
	if got := w.pin("b", testLimit); got != 8 {
		t.Fatalf("b made %d pins after the backup, want 8 (full)", got)
	}
	w.pin("c", 2)
	w.clk.Advance(2 * time.Hour)
	w.pin("d", 5)
	w.clk.Advance(time.Hour)
	w.close()
	w.srv.RevokeGrants("c")

	restored := w.now()
	dir := w.restore(file)
	w.clk.Advance(time.Minute) // the operator starts pinbot
	start := w.now()
	w.open(dir)
	for _, id := range []string{"a", "b", "c", "d"} {
		if st := w.status(id); st.Free() != 0 {
			t.Fatalf("%s before the rebuild: %+v, want held", id, st)
		}
	}
	r, rounds := w.rebuilder()
	if at, ok := r.Start(); !ok || !at.Equal(restored.Add(rebuild.DefaultSlotMargin+rebuild.DefaultListingLag)) {
		t.Fatalf("Start = %v, %v; want the restore plus the act delay and the listing's lag", at, ok)
	}
	w.run(r)
	if err := w.clk.WaitWaiters(w.ctx, 1); err != nil { // the rebuilder waits for its first round
		t.Fatal(err)
	}
	w.clk.Set(start.Add(time.Minute))
	rep := w.round(rounds)
	if rep.Rebuilt != 3 || rep.Held != 1 || rep.Left != 0 || rep.Done {
		t.Fatalf("first round %+v, want 3 rebuilt, 1 held\nlog:\n%s", rep, w.logs.String())
	}
	for _, id := range []string{"a", "b", "d"} {
		free := testLimit - w.inWindow(id)
		if st := w.status(id); st.Free() != free || st.Blocked != 0 {
			t.Fatalf("%s a minute after the start: %+v, want %d free as Pinterest's ledger leaves", id, st, free)
		}
		if got := w.pin(id, testLimit); got != free {
			t.Fatalf("%s: %d pins granted, want %d", id, got, free)
		}
		if n := w.inWindow(id); n != testLimit {
			t.Fatalf("%s: Pinterest counts %d pins in the window, want the limit %d", id, n, testLimit)
		}
	}
	w.checkLedger("a", "b", "c", "d")

	// c's grant was revoked: it stays held, named.
	if got := w.pin("c", 1); got != 0 {
		t.Fatalf("c: %d pins granted while held", got)
	}
	held := r.Held()
	if len(held) != 1 || held[0].Account != "c" || held[0].Username != "userc" || !strings.Contains(held[0].Reason, "refused its access token") ||
		!held[0].Until.Equal(restored.Add(5*time.Minute+testWindow)) {
		t.Fatalf("Held = %+v, want c, refused", held)
	}
	if l := w.logLines(`"account":"c"`, `"username":"userc"`, "stays held"); len(l) != 1 {
		t.Fatalf("c is not named in the log once; log:\n%s", w.logs.String())
	}

	// Tried again later, it stays held.
	if err := w.clk.WaitWaiters(w.ctx, 1); err != nil {
		t.Fatal(err)
	}
	w.clk.Advance(rebuild.DefaultRetryEvery)
	if rep := w.round(rounds); rep.Rebuilt != 0 || rep.Held != 1 {
		t.Fatalf("second round %+v, want c held again", rep)
	}
	if got := w.pin("c", 1); got != 0 || len(r.Held()) != 1 {
		t.Fatalf("c: %d pins granted, held %+v, after the second round", got, r.Held())
	}
	w.checkLedger("a", "b", "c", "d")
}

// TestListingLagNeverFreesEarly: the last pins of the runs before the
// restore, made right before it and one made by Pinterest after pinbot
// stopped, appear in the listing only a while later. The rebuild waits
// until every one of them must be listed, and frees no slot they hold.
func TestListingLagNeverFreesEarly(t *testing.T) {
	w := newWorld(t)
	w.open(t.TempDir())
	w.link("a")
	file := w.backup()

	w.clk.Advance(time.Hour)
	if got := w.pin("a", 8); got != 8 {
		t.Fatalf("%d pins made, want 8", got)
	}
	// pinbot stops with a request in flight, which Pinterest carries out
	// after it, within the act delay.
	if g, err := w.eng.Reserve(w.ctx, "a", 1); err != nil || g.Granted != 1 {
		t.Fatalf("Reserve = %+v, %v", g, err)
	}
	release, arrived, done := make(chan struct{}), make(chan struct{}, 1), make(chan struct{}, 1)
	f := pinteresttest.DelayedCreate(release)
	f.Arrived, f.Done = arrived, done
	w.srv.Inject(f)
	cctx, cancel := context.WithCancel(w.ctx)
	sent := make(chan error, 1)
	go func() {
		_, err := w.pc.CreatePin(cctx, w.session("a"), pinterest.PinRequest{
			BoardID: "b1", ImageURL: "https://img.example/a.png", Link: "https://discord.com/channels/1/2/3", Mark: "last",
		})
		sent <- err
	}()
	<-arrived
	cancel() // pinbot stops; Pinterest goes on with the request
	w.close()
	w.srv.SetListingLag(rebuild.DefaultListingLag)

	restored := w.now()
	dir := w.restore(file)
	w.open(dir)
	r, rounds := w.rebuilder()
	w.run(r)
	if err := w.clk.WaitWaiters(w.ctx, 1); err != nil { // the rebuilder waits for its first round
		t.Fatal(err)
	}
	w.clk.Set(restored.Add(50 * time.Second))
	close(release)
	<-done
	<-sent

	w.clk.Set(restored.Add(rebuild.DefaultSlotMargin + rebuild.DefaultListingLag))
	if rep := w.round(rounds); rep.Rebuilt != 1 {
		t.Fatalf("round %+v, want a rebuilt\nlog:\n%s", rep, w.logs.String())
	}
	if got := w.pin("a", testLimit); got != 1 {
		t.Fatalf("%d pins granted, want 1: Pinterest holds 9", got)
	}
	w.checkLedger("a")
	if n := w.inWindow("a"); n != testLimit {
		t.Fatalf("Pinterest counts %d pins, want %d (the last one made after the stop included)", n, testLimit)
	}
}

// TestCountAllRebuildsFromEveryPin: with the pins made elsewhere counted,
// the window is rebuilt from every pin the account made, and those made
// elsewhere are remembered, so that the reconciliation does not count
// them again.
func TestCountAllRebuildsFromEveryPin(t *testing.T) {
	w := newWorld(t)
	w.open(t.TempDir())
	w.link("a")
	w.pin("a", 2)
	file := w.backup()
	w.clk.Advance(time.Hour)
	w.pin("a", 3)
	var ids []string
	for range 4 {
		p := w.srv.CreateDirect(pinteresttest.Pin{AccountID: "a", BoardID: "b1"})
		ids = append(ids, p.ID)
	}
	w.close()

	restored := w.now()
	dir := w.restore(file)
	w.open(dir)
	r, rounds := w.rebuilder(func(c *rebuild.Config) { c.CountAll = true })
	w.run(r)
	if err := w.clk.WaitWaiters(w.ctx, 1); err != nil {
		t.Fatal(err)
	}
	w.clk.Set(restored.Add(2 * time.Minute))
	if rep := w.round(rounds); rep.Rebuilt != 1 {
		t.Fatalf("round %+v, want a rebuilt", rep)
	}
	if got := w.pin("a", testLimit); got != 1 {
		t.Fatalf("%d pins granted, want 1: the account made 9", got)
	}
	if n := w.srv.MaxInWindow("a", testWindow); n > testLimit {
		t.Fatalf("the account's ledger holds %d pins in a window", n)
	}
	if fresh, err := w.links.Unobserved(w.ctx, "a", ids); err != nil || len(fresh) != 0 {
		t.Fatalf("Unobserved = %v, %v; want the pins made elsewhere remembered", fresh, err)
	}
}
