package reconcile_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/reconcile"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// TestCountAllCountsPinsMadeElsewhere: with CountAll, pins the account's
// owner made in Pinterest's app count against the limit from the first
// round on (Run at one tick): a Reserve is refused once they fill the
// account. A second round, and a restart of the engine and the
// reconciler, count them no twice; the slots they hold free when they
// leave the window (from their creation plus the skew).
func TestCountAllCountsPinsMadeElsewhere(t *testing.T) {
	e := newEnv(t, true)
	e.account("1001")
	e.pin("1001", 2)
	e.clk.Advance(5 * time.Minute)
	e.direct("1001", 3, time.Minute)
	if st := e.status("1001"); st.Free() != 3 {
		t.Fatalf("before a round: %+v, want 3 free", st)
	}

	// Run waits one period on the engine's clock, then runs a round.
	waiting := e.clk.Waiters()
	ctx, cancel := context.WithCancel(e.ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		e.rec.Run(ctx)
	}()
	if err := e.clk.WaitWaiters(e.ctx, waiting+1); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(reconcile.DefaultEvery - time.Millisecond)
	if st := e.status("1001"); st.Free() != 3 {
		t.Fatalf("before the period ends: %+v, want 3 free", st)
	}
	e.clk.Advance(time.Millisecond)
	if end := <-e.obs.rounds; end != reconcile.EndComplete {
		t.Fatalf("round ended %s", end)
	}
	cancel()
	<-stopped

	st := e.status("1001")
	if st.Used != testLimit || st.Free() != 0 {
		t.Fatalf("after a round: %+v, want the 3 pins made elsewhere counted", st)
	}
	if g, err := e.eng.Reserve(e.ctx, "1001", 1); err != nil || g.Granted != 0 {
		t.Fatalf("Reserve when full = %+v, %v; want refused", g, err)
	}
	if d := e.drift("1001"); d.Pinterest != 5 || d.Counted != 5 || d.Drift != 0 || d.Elsewhere != 3 || d.Observed != 3 || d.Unexplained != 0 {
		t.Fatalf("drift %+v", d)
	}
	if results, observed, _ := e.obs.counts(); observed != 3 || results[reconcile.ResultReconciled] != 1 {
		t.Fatalf("observer: %v, %d observed", results, observed)
	}

	if rep := e.round(reconcile.EndComplete); rep.Observed != 0 || rep.Reconciled != 1 {
		t.Fatalf("second round %+v, want nothing observed", rep)
	}
	if st := e.status("1001"); st.Used != testLimit {
		t.Fatalf("after a second round: %+v", st)
	}
	e.restart()
	if rep := e.round(reconcile.EndComplete); rep.Observed != 0 || rep.Reconciled != 1 {
		t.Fatalf("round after a restart %+v, want nothing observed", rep)
	}
	if st := e.status("1001"); st.Used != testLimit {
		t.Fatalf("after a restart: %+v", st)
	}

	// pinbot's 2 pins, made at t0, leave the window first; the others
	// count from their creation plus the skew, t0+5m.
	e.clk.Set(t0.Add(testWindow))
	if st := e.status("1001"); st.Free() != 2 {
		t.Fatalf("an hour on: %+v, want pinbot's 2 slots free", st)
	}
	e.clk.Set(t0.Add(testWindow + 5*time.Minute - time.Millisecond))
	if st := e.status("1001"); st.Free() != 2 {
		t.Fatalf("a millisecond before the pins made elsewhere leave: %+v, want 2 free", st)
	}
	e.clk.Set(t0.Add(testWindow + 5*time.Minute))
	if st := e.status("1001"); st.Free() != testLimit {
		t.Fatalf("once they left: %+v, want all free", st)
	}
	e.checkLedger("1001", true)
}

// TestWithoutCountAllDriftShowsPinsMadeElsewhere: with CountAll off, the
// pins made elsewhere are not counted (the slots stay pinbot's) and the
// drift, pinbot's own pins against its count, is zero; the drift and the
// log name the pins made elsewhere, without a warning.
func TestWithoutCountAllDriftShowsPinsMadeElsewhere(t *testing.T) {
	e := newEnv(t, false)
	e.account("1001")
	e.pin("1001", 2)
	e.direct("1001", 3, time.Minute)
	if rep := e.round(reconcile.EndComplete); rep.Observed != 0 || rep.Reconciled != 1 {
		t.Fatalf("round %+v", rep)
	}
	if st := e.status("1001"); st.Used != 2 || st.Free() != 3 {
		t.Fatalf("status %+v, want pinbot's 2 pins alone", st)
	}
	if d := e.drift("1001"); d.Pinterest != 2 || d.Counted != 2 || d.Drift != 0 || d.Elsewhere != 3 || d.Observed != 0 {
		t.Fatalf("drift %+v", d)
	}
	if l := e.logLines(`"level":"info"`, `"account":"1001"`, `"elsewhere":3`, "PINBOT_COUNT_ALL_PINS is off"); len(l) != 1 {
		t.Fatalf("want one info line naming the pins made elsewhere; log:\n%s", e.logs.String())
	}
	if l := e.logLines(`"level":"warn"`); len(l) != 0 {
		t.Fatalf("warnings: %q", l)
	}
	e.pin("1001", 3) // the 3 slots are pinbot's
	e.checkLedger("1001", false)
}

// TestListingLagNeverUndercounts: pins Pinterest does not list yet are
// counted at a later round, never dropped: pinbot's own count stays, and
// the drift is negative meanwhile.
func TestListingLagNeverUndercounts(t *testing.T) {
	e := newEnv(t, true)
	e.account("1001")
	e.pin("1001", 2)
	e.srv.SetListingLag(10 * time.Minute)
	e.direct("1001", 2, 0)
	e.round(reconcile.EndComplete)
	if st := e.status("1001"); st.Used != 2 {
		t.Fatalf("status %+v, want pinbot's 2 pins still counted", st)
	}
	if d := e.drift("1001"); d.Pinterest != 0 || d.Counted != 2 || d.Drift != -2 || d.Unexplained != 0 {
		t.Fatalf("drift while Pinterest lists nothing: %+v", d)
	}
	e.clk.Advance(10 * time.Minute)
	if rep := e.round(reconcile.EndComplete); rep.Observed != 2 {
		t.Fatalf("round once listed: %+v, want the 2 pins observed", rep)
	}
	if st := e.status("1001"); st.Used != 4 {
		t.Fatalf("status %+v, want 4", st)
	}
	if d := e.drift("1001"); d.Drift != 0 {
		t.Fatalf("drift %+v, want 0", d)
	}
}

// TestFailedListingChangesNothing: a listing that fails (a 5xx after its
// retries, which pauses the round, or a 403) records nothing and keeps
// no drift; once Pinterest answers, the next round counts the pins.
func TestFailedListingChangesNothing(t *testing.T) {
	e := newEnv(t, true)
	e.account("1001")
	e.pin("1001", 1)
	e.direct("1001", 2, time.Minute)
	f := pinteresttest.ListingFailed(http.StatusBadGateway)
	f.Times = 3 // every try of the client
	e.srv.Inject(f)
	if rep := e.round(reconcile.EndPaused); rep.Failed != 1 || rep.Observed != 0 {
		t.Fatalf("round %+v", rep)
	}
	e.srv.Inject(pinteresttest.ListingFailed(http.StatusForbidden))
	if rep := e.round(reconcile.EndComplete); rep.Failed != 1 {
		t.Fatalf("round %+v", rep)
	}
	if st := e.status("1001"); st.Used != 1 {
		t.Fatalf("status %+v, want pinbot's pin alone", st)
	}
	if _, ok := e.rec.Drift("1001"); ok {
		t.Fatal("a drift is kept from a failed listing")
	}
	if l := e.logLines(`"level":"warn"`, `"account":"1001"`, "nothing changed"); len(l) != 2 {
		t.Fatalf("want 2 warnings of failed listings; log:\n%s", e.logs.String())
	}
	if rep := e.round(reconcile.EndComplete); rep.Observed != 2 {
		t.Fatalf("round once Pinterest answers: %+v", rep)
	}
	if results, _, _ := e.obs.counts(); results[reconcile.ResultFailed] != 2 || results[reconcile.ResultReconciled] != 1 {
		t.Fatalf("observer results %v", results)
	}
}

// TestSkipsAccountsItCannotList: an account that needs a new link is
// skipped and named; so is one whose grant Pinterest revoked, one whose
// access token is about to expire (only the bot may refresh it), and
// one nobody links any more; the others are reconciled.
func TestSkipsAccountsItCannotList(t *testing.T) {
	e := newEnv(t, true)
	for _, id := range []string{"1001", "1002", "1003", "1004", "1005"} {
		e.account(id)
		e.pin(id, 1)
	}
	if err := e.links.MarkRelinkNeeded(e.ctx, "1002"); err != nil {
		t.Fatal(err)
	}
	tok, err := e.links.Token(e.ctx, "1003")
	if err != nil {
		t.Fatal(err)
	}
	tok.Expiry = e.now().Add(time.Minute)
	if err := e.links.SaveToken(e.ctx, "1003", tok); err != nil {
		t.Fatal(err)
	}
	if err := e.links.Unlink(e.ctx, "u-1004", "1004"); err != nil {
		t.Fatal(err)
	}
	e.srv.RevokeGrants("1005")
	e.direct("1001", 1, 0)
	rep := e.round(reconcile.EndComplete)
	if rep.Reconciled != 1 || rep.Skipped != 4 || rep.Observed != 1 {
		t.Fatalf("round %+v, want 1 reconciled, 4 skipped", rep)
	}
	if l := e.logLines(`"account":"1005"`, `"username":"user1005"`, "refused the account's access token"); len(l) != 1 {
		t.Fatalf("the revoked account is not named; log:\n%s", e.logs.String())
	}
	if a, err := e.links.Account(e.ctx, "1005"); err != nil || a.RelinkNeeded {
		t.Fatalf("account 1005 = %+v, %v: the reconciler marks no account for a new link", a, err)
	}
	if l := e.logLines(`"account":"1002"`, `"username":"user1002"`, "needs a new link"); len(l) != 1 {
		t.Fatalf("the account needing a new link is not named; log:\n%s", e.logs.String())
	}
	if l := e.logLines(`"account":"1003"`, "due for renewal"); len(l) != 1 {
		t.Fatalf("the account with an expiring token is not named; log:\n%s", e.logs.String())
	}
	// Nothing was sent for the other skipped accounts (the revoked
	// token's listing was refused: it names no account), and no token
	// refreshed.
	for _, r := range e.srv.Requests() {
		if r.AccountID != "1001" && r.Status != http.StatusUnauthorized && r.Method == http.MethodGet {
			t.Errorf("listed %s for account %s", r.Path, r.AccountID)
		}
		if r.Path == pinteresttest.PathToken {
			t.Errorf("a token request: %+v", r)
		}
	}
}

// TestRoundsAreBoundedAndTakeTurns: a round lists at most MaxAccounts;
// the accounts not reached go first next round.
func TestRoundsAreBoundedAndTakeTurns(t *testing.T) {
	e := newEnv(t, false, func(c *reconcile.Config) { c.MaxAccounts = 1 })
	e.account("1001")
	e.account("1002")
	e.pin("1001", 2)
	e.pin("1002", 1)
	if rep := e.round(reconcile.EndBounded); rep.Reconciled != 1 || rep.Left != 1 {
		t.Fatalf("round %+v", rep)
	}
	if _, ok := e.rec.Drift("1001"); !ok {
		t.Fatal("the busiest account was not reconciled first")
	}
	e.clk.Advance(time.Minute)
	e.round(reconcile.EndBounded)
	if _, ok := e.rec.Drift("1002"); !ok {
		t.Fatal("the account left out was not reconciled next")
	}
}

// TestRoundPausesWhenRateLimited: a listing Pinterest rate limits stops
// the round: the next account is not listed.
func TestRoundPausesWhenRateLimited(t *testing.T) {
	e := newEnv(t, false)
	e.account("1001")
	e.account("1002")
	e.pin("1001", 2)
	e.pin("1002", 1)
	f := pinteresttest.RateLimited("", strconv.FormatInt(e.now().Add(time.Hour).Unix(), 10))
	f.Listings = true
	e.srv.Inject(f)
	if rep := e.round(reconcile.EndPaused); rep.Failed != 1 || rep.Left != 1 {
		t.Fatalf("round %+v, want 1 failed, 1 left", rep)
	}
	if n := e.srv.Count(http.MethodGet, pinteresttest.PathPins); n != 1 {
		t.Fatalf("%d listings, want the one refused", n)
	}
}

// TestDriftBeyondTheRulesWarns: a pin pinbot's reservation may have made
// (its answer lost) explains a positive drift; a pin with pinbot's mark
// that pinbot never counted does not, and is logged as a warning and
// reported.
func TestDriftBeyondTheRulesWarns(t *testing.T) {
	e := newEnv(t, false)
	e.account("1001")
	g, err := e.eng.Reserve(e.ctx, "1001", 1)
	if err != nil || g.Granted != 1 {
		t.Fatal(g, err)
	}
	// Made, but the answer never reached pinbot: the reservation stays
	// pending.
	e.srv.CreateDirect(pinteresttest.Pin{AccountID: "1001", BoardID: "b1", Link: "https://discord.com/channels/1/2/3?pinbot=r1"})
	e.round(reconcile.EndComplete)
	if d := e.drift("1001"); d.Pinterest != 1 || d.Counted != 0 || d.Pending != 1 || d.Drift != 1 || d.Unexplained != 0 {
		t.Fatalf("drift %+v, want 1 explained by the pending reservation", d)
	}
	if l := e.logLines(`"level":"warn"`); len(l) != 0 {
		t.Fatalf("warnings: %q", l)
	}

	e.srv.CreateDirect(pinteresttest.Pin{AccountID: "1001", BoardID: "b1", Link: "https://discord.com/channels/1/2/4?pinbot=ghost"})
	e.round(reconcile.EndComplete)
	if d := e.drift("1001"); d.Pinterest != 2 || d.Drift != 2 || d.Unexplained != 1 {
		t.Fatalf("drift %+v, want 1 unexplained", d)
	}
	if l := e.logLines(`"level":"warn"`, `"account":"1001"`, `"unexplained":1`); len(l) != 1 {
		t.Fatalf("want a warning; log:\n%s", e.logs.String())
	}
	if _, _, unexplained := e.obs.counts(); unexplained != 1 {
		t.Fatalf("observer: %d unexplained", unexplained)
	}
	if s := e.rec.Summary(); s.Positive != 1 || s.Largest != 2 || s.Negative != 0 {
		t.Fatalf("summary %+v", s)
	}
	if ds := e.rec.Drifts(10); len(ds) != 1 || ds[0].Account != "1001" {
		t.Fatalf("drifts %+v", ds)
	}
}

// TestCountedTwiceNeverLess: pins made elsewhere that the engine counted
// but the token store failed to remember are counted again next round
// (twice, the safe side); pins the engine failed to store are not
// remembered, so that the next round counts them again.
func TestCountedTwiceNeverLess(t *testing.T) {
	e := newEnv(t, true)
	fm := &failingMarks{Store: e.links}
	e.rcfg.Links = fm
	e.newReconciler()
	e.account("1001")
	e.pin("1001", 1)
	e.direct("1001", 1, 0)

	fm.set(true)
	if rep := e.round(reconcile.EndComplete); rep.Observed != 1 {
		t.Fatalf("round %+v", rep)
	}
	if l := e.logLines(`"level":"error"`, `"account":"1001"`, "counts them again"); len(l) != 1 {
		t.Fatalf("the failed mark is not logged; log:\n%s", e.logs.String())
	}
	fm.set(false)
	if rep := e.round(reconcile.EndComplete); rep.Observed != 1 {
		t.Fatalf("round after a failed mark %+v, want the pin counted again", rep)
	}
	if st := e.status("1001"); st.Used != 3 {
		t.Fatalf("status %+v, want pinbot's pin and the other counted twice", st)
	}
	if rep := e.round(reconcile.EndComplete); rep.Observed != 0 {
		t.Fatalf("round once remembered %+v", rep)
	}

	// The engine cannot write: nothing is remembered, and the next round
	// counts the pin.
	e.direct("1001", 1, 0)
	e.fault.FailWrites(persistencetest.ErrDiskFull)
	if rep := e.round(reconcile.EndComplete); rep.Failed != 1 || rep.Observed != 0 {
		t.Fatalf("round with the engine's store failing %+v", rep)
	}
	e.fault.FailWrites(nil)
	if rep := e.round(reconcile.EndComplete); rep.Observed != 1 {
		t.Fatalf("round once the engine writes %+v", rep)
	}
}
