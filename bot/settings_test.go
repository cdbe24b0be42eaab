package bot

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// stateOf returns the OAuth state of the authorization URL in a /link
// reply.
func stateOf(t *testing.T, text string) string {
	t.Helper()
	m := regexp.MustCompile(`<(http[^>]+)>`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no URL in %q", text)
	}
	u, err := url.Parse(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("state")
}

func TestSettings(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")

	text, _ := w.settings(alice)
	must(t, text, msgNoAccount)

	w.link(alice, "2002", "second")
	w.link(alice, "1001", "first")
	w.ps.AddAccount("1001", "first", pinteresttest.Board{ID: "b9", Name: "Dogs_and*cats"})
	w.fill("1001", 7)
	text, in := w.settings(alice)
	must(t, text, "**Your Pinterest accounts**",
		"• @second — 12-hour pins: 0/100 — default board: **Board of second**",
		"▶ @first (active) — 12-hour pins: 7/100 — default board: **Board of first**")
	orig, _ := in.Original()
	comps := string(orig.Components)
	for _, want := range []string{idSwitch, idBoard + "/1001", `"value":"2002"`, `"value":"b9"`, "12-hour pins: 7/100"} {
		if !strings.Contains(comps, want) {
			t.Errorf("components lack %s: %s", want, comps)
		}
	}

	// Choose the default board.
	text, _ = w.run(discordtest.Invocation{UserID: alice, Data: discordtest.SelectMenu{CustomID: idBoard + "/1001", Values: []string{"b9"}, MessageID: orig.ID}})
	must(t, text, `Default board for @first is now **Dogs\_and\*cats**.`)
	text, _ = w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String())
	must(t, text, `board **Dogs\_and\*cats**: 1 pinned.`, "12-hour pin count: 8/100")
	if p := w.ps.PinsFor("1001"); len(p) != 1 || p[0].BoardID != "b9" {
		t.Fatalf("pins %+v, want one on b9", p)
	}
	// A board that is not the account's.
	text, _ = w.run(discordtest.Invocation{UserID: alice, Data: discordtest.SelectMenu{CustomID: idBoard + "/1001", Values: []string{"b2002"}, MessageID: orig.ID}})
	must(t, text, "That board is not one of @first's boards any more.")
}

// TestSecurityUnlinkedAccounts: a user cannot switch to, choose boards
// for, unlink or pin with an account someone else linked.
func TestSecurityUnlinkedAccounts(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	mallory := w.addUser("mallory")
	w.link(alice, "1001", "alicepins")
	w.link(mallory, "6666", "mallorypins")
	_, in := w.settings(mallory)
	orig, _ := in.Original()

	text, _ := w.run(discordtest.Invocation{UserID: mallory, Data: discordtest.SelectMenu{CustomID: idSwitch, Values: []string{"1001"}, MessageID: orig.ID}})
	must(t, text, msgNotLinked)
	u, err := w.links.User(w.ctx, mallory.String())
	if err != nil || u.Active != "6666" {
		t.Fatalf("mallory's active account = %q, %v; want still 6666", u.Active, err)
	}
	text, _ = w.run(discordtest.Invocation{UserID: mallory, Data: discordtest.SelectMenu{CustomID: idBoard + "/1001", Values: []string{"b1001"}, MessageID: orig.ID}})
	must(t, text, msgNotLinked)
	text, _ = w.run(discordtest.Invocation{UserID: mallory, Data: discordtest.ChatInput{Name: cmdUnlink, Options: []discordtest.CommandOption{{Name: optAccount, Value: "1001"}}}})
	must(t, text, msgNotLinked)

	text, _ = w.pin(mallory, w.addImages(w.channel.ID, 1, "").ID.String())
	must(t, text, "Pinterest account @mallorypins", "1 pinned.")
	if n := len(w.ps.PinsFor("1001")); n != 0 {
		t.Fatalf("%d pins on alice's account", n)
	}
	if u, _ := w.links.User(w.ctx, alice.String()); u.Active != "1001" || len(u.Accounts) != 1 {
		t.Fatalf("alice's links changed: %+v", u)
	}
}

// TestSharedAccount: two users who linked the same Pinterest account share
// its count.
func TestSharedAccount(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice, bob := w.addUser("alice"), w.addUser("bob")
	w.link(alice, "1001", "shared")
	w.link(bob, "1001", "shared")
	text, _ := w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String())
	must(t, text, "12-hour pin count: 1/100")
	text, _ = w.pin(bob, w.addImages(w.channel.ID, 1, "").ID.String())
	must(t, text, "12-hour pin count: 2/100")
	text, _ = w.settings(alice)
	must(t, text, "12-hour pins: 2/100")
}

func TestLinkAndUnlink(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	text, in := w.run(discordtest.Invocation{UserID: alice, Data: discordtest.ChatInput{Name: cmdLink}})
	must(t, text, "Open this link to connect a Pinterest account to Pinbot:", "<"+w.ps.AuthURL(), "expires in 10 minutes")
	state := stateOf(t, text)
	orig, _ := in.Original()
	if !strings.Contains(string(orig.Components), `"style":5`) {
		t.Errorf("no link button: %s", orig.Components)
	}
	user, err := w.links.ConsumeState(w.ctx, state, w.pclock.Now())
	if err != nil || user != alice.String() {
		t.Fatalf("state belongs to %q (%v), want alice", user, err)
	}

	w.link(alice, "1001", "first")
	w.link(alice, "2002", "second")
	// Autocomplete offers the user's accounts.
	ac := w.interact(discordtest.Invocation{UserID: alice, Data: discordtest.Autocomplete{Name: cmdUnlink,
		Options: []discordtest.CommandOption{{Name: optAccount, Value: "sec", Focused: true}}}})
	w.waitDone(ac)
	rs := ac.Responses()
	if len(rs) != 1 || !rs[0].OK() || len(rs[0].Choices) != 1 || rs[0].Choices[0].Value != "2002" {
		t.Fatalf("autocomplete = %+v, want the one account matching sec", rs)
	}

	text, _ = w.run(discordtest.Invocation{UserID: alice, Data: discordtest.ChatInput{Name: cmdUnlink, Options: []discordtest.CommandOption{{Name: optAccount, Value: "2002"}}}})
	must(t, text, "Unlinked @second.", "Your active account is @first.")
	text, _ = w.run(discordtest.Invocation{UserID: alice, Data: discordtest.ChatInput{Name: cmdUnlink, Options: []discordtest.CommandOption{{Name: optAccount, Value: "@First"}}}})
	must(t, text, "Unlinked @first.", "You have no linked account now")
	text, _ = w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String())
	must(t, text, msgNoAccount)
}

func TestAutocompleteBoards(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	w.ps.AddAccount("1001", "alicepins", pinteresttest.Board{ID: "b2", Name: "Dogs"}, pinteresttest.Board{ID: "b3", Name: "Hot dogs"})
	in := w.interact(discordtest.Invocation{UserID: alice, Data: discordtest.Autocomplete{Name: cmdPin, Options: []discordtest.CommandOption{
		{Name: optMessages, Value: "1"}, {Name: optBoard, Value: "DOG", Focused: true}}}})
	w.waitDone(in)
	rs := in.Responses()
	if len(rs) != 1 || rs[0].Type != discord.InteractionResponseTypeAutocompleteResult || !rs[0].OK() {
		t.Fatalf("responses %+v, want one autocomplete result", rs)
	}
	var got []string
	for _, c := range rs[0].Choices {
		got = append(got, c.Name+"="+c.Value.(string))
	}
	if strings.Join(got, ",") != "Dogs=b2,Hot dogs=b3" {
		t.Fatalf("choices %v", got)
	}
}

// linkThroughOAuth links a Pinterest account to user the way a person
// does (w.linkFlow). It returns the /link reply and the last page's
// message.
func (w *world) linkThroughOAuth(t *testing.T, user snowflake.ID, accountID string) (reply, page string) {
	t.Helper()
	run := w.linkFlow(t, user, accountID, linkSteps{})
	if run.page.Status != http.StatusOK || run.page.Title != "Linked" {
		t.Fatalf("link: %d %q %q", run.page.Status, run.page.Title, run.page.Message)
	}
	return run.reply, run.page.Message
}

// TestFirstPinAfterLink links accounts as a person does, then pins at
// once: an account with one board pins there without asking; with two,
// /link and the callback's page have said to choose a board in
// /settings, which the first /pin asks for.
func TestFirstPinAfterLink(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice, bob := w.addUser("alice"), w.addUser("bob")
	w.ps.AddAccount("1001", "solo", pinteresttest.Board{ID: "b1", Name: "Only"})
	w.ps.AddAccount("2002", "many", pinteresttest.Board{ID: "b2", Name: "Cats"}, pinteresttest.Board{ID: "b3", Name: "Travel"})

	reply, page := w.linkThroughOAuth(t, alice, "1001")
	must(t, reply, "After you approve on Pinterest, check the page pinbot shows and confirm there. "+
		"Pins go to the account's board if it has only one; "+
		"otherwise choose its default board in /settings (or name one with the board: option of /pin).")
	must(t, page, "Linked Pinterest account solo", "Pins go to its board Only; choose another default board with /settings in Discord.")
	text, _ := w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String())
	must(t, text, "Pinterest account @solo, board **Only**: 1 pinned", "12-hour pin count: 1/100")

	_, page = w.linkThroughOAuth(t, bob, "2002")
	must(t, page, "Linked Pinterest account many", "Before you pin, choose the board pins go to with /settings in Discord")
	text, _ = w.pin(bob, w.addImages(w.channel.ID, 1, "").ID.String())
	must(t, text, msgNoBoard("@many"))
}
