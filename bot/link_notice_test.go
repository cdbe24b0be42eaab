package bot

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/discorduser"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/bot/web"
	"github.com/pinbot/pinbot/bot/web/webtest"
)

// linkSteps adjust w.linkFlow.
type linkSteps struct {
	// beforeCallback and beforeConfirm, when set, run before the browser
	// comes back from Pinterest and before it presses confirm (they move
	// the clocks, say).
	beforeCallback, beforeConfirm func()
	// confirmTTL is the confirmation page's lifetime; 0 the default.
	confirmTTL time.Duration
}

// linkRun is what a link through OAuth showed: the /link interaction and
// its reply, and the last page the browser showed.
type linkRun struct {
	userID snowflake.ID
	in     *discordtest.Interaction
	reply  string
	page   webtest.Page
}

// linkFlow runs a link the way a person does: /link, then its address
// opened with the Pinterest stand-in signed in as the account, which
// redirects to the OAuth callback (bot/web, wired to the bot's notices
// as the program does), which shows the confirmation page, whose confirm
// button the person presses. A callback that shows another page ends
// the flow there.
func (w *world) linkFlow(t *testing.T, user snowflake.ID, accountID string, o linkSteps) linkRun {
	t.Helper()
	run := linkRun{userID: user}
	run.reply, run.in = w.run(discordtest.Invocation{UserID: user, Data: discordtest.ChatInput{Name: cmdLink}})
	m := regexp.MustCompile(`<(http[^>]+)>`).FindStringSubmatch(run.reply)
	if m == nil {
		t.Fatalf("no URL in %q", run.reply)
	}
	w.ps.SetLoggedIn(accountID)
	c := w.ps.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || loc == "" {
		t.Fatalf("authorization page: status %d, Location %q", resp.StatusCode, loc)
	}
	users, err := discorduser.New(discorduser.Config{Token: w.dc.Token(), APIURL: w.dc.APIURL()})
	if err != nil {
		t.Fatal(err)
	}
	h, err := web.New(web.Config{Links: w.links, Pinterest: w.pc, Discord: users, AvatarSources: []string{}, Now: w.pclock.Now,
		ConfirmTTL: o.confirmTTL, OnLinked: w.bot.Linked, OnRefused: w.bot.LinkRefused})
	if err != nil {
		t.Fatal(err)
	}
	// The callback listens where the Pinterest client's redirect says.
	ts := httptest.NewServer(h)
	defer ts.Close()
	if o.beforeCallback != nil {
		o.beforeCallback()
	}
	b := webtest.NewBrowser(nil)
	p, err := b.Get(w.ctx, strings.Replace(loc, "http://127.0.0.1:8080", ts.URL, 1))
	if err != nil {
		t.Fatalf("callback: %v", err)
	}
	if run.page = p; p.Title != "Confirm the link" {
		return run
	}
	if o.beforeConfirm != nil {
		o.beforeConfirm()
	}
	if run.page, err = b.Submit(w.ctx, p, webtest.Confirm); err != nil || run.page.Status != http.StatusOK {
		t.Fatalf("confirm: %v %d %q", err, run.page.Status, run.page.Message)
	}
	return run
}

// advanceWithDiscord moves Discord's clock on with the others (advance).
func (w *world) advanceWithDiscord(d time.Duration) {
	w.advance(d)
	w.dclock.Advance(d)
}

// noticeEdit waits for the edit of run's /link reply that follows its
// first answer, and returns its text after checking that it removed the
// Connect button.
func (w *world) noticeEdit(t *testing.T, run linkRun) string {
	t.Helper()
	rs, err := run.in.Wait(w.ctx, 3)
	if err != nil {
		var kinds []string
		for _, r := range run.in.Responses() {
			kinds = append(kinds, fmt.Sprintf("%s %d", r.Kind, r.Status))
		}
		t.Fatalf("no notice in the /link reply: %v; responses %v; DMs %+v", err, kinds, w.dc.DMs(run.userID))
	}
	r := rs[2]
	if r.Kind != discordtest.KindEditOriginal || !r.OK() || r.Data == nil || !r.Data.HasContent {
		t.Fatalf("third response to /link %+v, want an accepted edit of the reply", r)
	}
	checkNoMentions(t, r)
	if c := strings.TrimSpace(string(r.Data.Components)); c != "[]" {
		t.Errorf("the edited /link reply keeps its components: %s", c)
	}
	return r.Data.Content
}

// TestLinkNoticeEditsReply: someone opens alice's /link address and
// approves with their own Pinterest account, @mallory_pins, 13 minutes
// after alice ran /link (the state lives 10, the confirmation page 5).
// alice's /link reply, whose token lives 15 minutes, is edited at once to
// name the account linked to her and how to undo it, which she does.
func TestLinkNoticeEditsReply(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.ps.AddAccount("1666", "mallory_pins", pinteresttest.Board{ID: "b1", Name: "Loot"})

	run := w.linkFlow(t, alice, "1666", linkSteps{
		beforeCallback: func() { w.advanceWithDiscord(9 * time.Minute) },
		beforeConfirm:  func() { w.advanceWithDiscord(4 * time.Minute) },
	})
	notice := w.noticeEdit(t, run)
	want := `Linked Pinterest account @mallory\_pins to your Discord account; it is now your active account. ` +
		`If that was not you, run /unlink account:@mallory\_pins now: until you do, your pins go to that account.`
	if notice != want {
		t.Fatalf("notice %q, want %q", notice, want)
	}
	if dms := w.dc.DMs(alice); len(dms) != 0 {
		t.Errorf("DMs %+v besides the edited reply", dms)
	}

	text, _ := w.run(discordtest.Invocation{UserID: alice, Data: discordtest.ChatInput{Name: cmdUnlink,
		Options: []discordtest.CommandOption{{Name: optAccount, Value: "@mallory_pins"}}}})
	must(t, text, `Unlinked @mallory\_pins.`, "You have no linked account now")
}

// TestLinkNoticeByDMAfterTokenExpiry: confirmed 16 minutes after /link
// (with a confirmation page that lives 10), when the /link reply can no
// longer be edited, the notice comes by DM; with DMs closed it is logged
// as not delivered.
func TestLinkNoticeByDMAfterTokenExpiry(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice, bob := w.addUser("alice"), w.addUser("bob")
	w.ps.AddAccount("1001", "alicepins", pinteresttest.Board{ID: "b1", Name: "Cats"})
	w.ps.AddAccount("2002", "bobpins", pinteresttest.Board{ID: "b2", Name: "Dogs"})
	late := linkSteps{
		confirmTTL:     10 * time.Minute,
		beforeCallback: func() { w.advanceWithDiscord(9 * time.Minute) },
		beforeConfirm:  func() { w.advanceWithDiscord(7 * time.Minute) },
	}

	run := w.linkFlow(t, alice, "1001", late)
	dms, err := w.dc.WaitDMs(w.ctx, alice, 1)
	if err != nil {
		t.Fatalf("no DM: %v", err)
	}
	must(t, dms[0].Content, "Linked Pinterest account @alicepins to your Discord account; it is now your active account. "+
		"If that was not you, run /unlink account:@alicepins now")
	if n := len(run.in.Responses()); n != 2 {
		t.Errorf("%d responses to /link, want the deferral and the reply: its token expired", n)
	}

	w.dc.SetDMsOpen(bob, false)
	w.linkFlow(t, bob, "2002", late)
	// Close waits for the notice.
	if err := w.bot.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if logs := w.logs.String(); !strings.Contains(logs, "link notice not delivered: the user accepts no direct message from Pinbot") ||
		!strings.Contains(logs, `"account":"2002"`) {
		t.Errorf("the undelivered notice was not logged:\n%s", logs)
	}
}

// TestLinkNoticeEditRefused: the bot's clock says the /link token still
// lives, Discord's that it expired: the edit is refused, and the notice
// goes by DM.
func TestLinkNoticeEditRefused(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.ps.AddAccount("1001", "alicepins", pinteresttest.Board{ID: "b1", Name: "Cats"})

	run := w.linkFlow(t, alice, "1001", linkSteps{
		beforeCallback: func() { w.pclock.Advance(time.Minute) },
		beforeConfirm:  func() { w.dclock.Advance(15*time.Minute + time.Second) },
	})
	dms, err := w.dc.WaitDMs(w.ctx, alice, 1)
	if err != nil {
		t.Fatalf("no DM: %v", err)
	}
	must(t, dms[0].Content, "Linked Pinterest account @alicepins to your Discord account")
	rs := run.in.Responses()
	if len(rs) != 3 || rs[2].Kind != discordtest.KindEditOriginal || rs[2].OK() {
		t.Errorf("%d responses to /link, want 3 with a refused edit last", len(rs))
	}
}

// TestLinkNoticeScopesMissing: Pinterest grants fewer scopes than /link
// asked for: the page and the /link reply say which are missing, and
// nothing is linked.
func TestLinkNoticeScopesMissing(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.ps.AddAccount("1001", "alicepins", pinteresttest.Board{ID: "b1", Name: "Cats"})
	w.ps.SetGrantedScopes([]string{pinterest.ScopeBoardsRead, pinterest.ScopePinsWrite, pinterest.ScopeUserAccountsRead})

	run := w.linkFlow(t, alice, "1001", linkSteps{})
	if run.page.Status != http.StatusForbidden || !strings.Contains(run.page.Message, "it lacks boards:write, pins:read. Nothing was linked.") {
		t.Fatalf("callback page %d %q", run.page.Status, run.page.Message)
	}
	want := `Nothing was linked: Pinterest did not give Pinbot every permission it needs (it lacks boards:write, pins:read). ` +
		`Run /link to try again, and allow everything Pinterest asks for. If Pinterest did not ask for these, tell the bot's operator.`
	if notice := w.noticeEdit(t, run); notice != want {
		t.Fatalf("notice %q, want %q", notice, want)
	}
	if u, err := w.links.User(w.ctx, alice.String()); err != nil || len(u.Accounts) != 0 {
		t.Errorf("user %+v, %v; want nothing linked", u, err)
	}
}
