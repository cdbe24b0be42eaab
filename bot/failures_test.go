package bot

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// TestPinBadInput runs every bad input of the issue against one bot: each
// gets a clear message, nothing is pinned or counted for it, and the bot
// goes on serving.
func TestPinBadInput(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	nobody := w.addUser("nobody")
	img := w.addImages(w.channel.ID, 1, "")
	textOnly, err := w.dc.AddMessage(discordtest.Message{ChannelID: w.channel.ID, Content: "just words"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := w.dc.AddGuild(discordtest.Guild{Name: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	hidden := w.addChannel("hidden",
		discordtest.RoleOverwrite(w.guild.ID, 0, discord.PermissionViewChannel),
		discordtest.MemberOverwrite(w.dc.BotUserID(), discord.PermissionViewChannel, 0))
	inHidden := w.addImages(hidden.ID, 1, "")

	tests := []struct {
		name     string
		user     string
		messages string
		want     string
	}{
		{"malformed id", "alice", "12x45", "`12x45` is not a message ID or message link."},
		{"not a link", "alice", "https://example.com/channels/1/2/3", "is not a Discord message link"},
		{"eleven ids", "alice", "1 2 3 4 5 6 7 8 9 10 11", "You gave 11 messages; /pin takes at most 10 at a time."},
		{"duplicates", "alice", img.ID.String() + ", " + img.ID.String(), fmt.Sprintf("Message %d is listed twice", img.ID)},
		{"other server", "alice", fmt.Sprintf("https://discord.com/channels/%d/%d/%d", other.ID, w.channel.ID, img.ID), "points into another server"},
		{"channel the user cannot view", "alice", fmt.Sprintf("https://discord.com/channels/%d/%d/%d", w.guild.ID, hidden.ID, inHidden.ID), "Nothing was pinned: you cannot view that channel"},
		{"no image", "alice", textOnly.ID.String(), "skipped: this message has no image"},
		{"unknown message", "alice", "123456789012345678", "failed: message not found"},
		{"no linked account", "nobody", img.ID.String(), msgNoAccount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := alice
			if tt.user == "nobody" {
				u = nobody
			}
			text, _ := w.pin(u, tt.messages)
			must(t, text, tt.want)
			mustNot(t, text, "✅")
			if n := len(w.ps.Pins()); n != 0 {
				t.Fatalf("%d pins on Pinterest", n)
			}
			if n := w.used("1001"); n != 0 {
				t.Fatalf("count %d, want 0", n)
			}
		})
	}
	// Still running.
	text, _ := w.pin(alice, img.ID.String())
	must(t, text, "1 pinned.", "12-hour pin count: 1/100")
}

// TestPinTokens: an expired access token is refreshed and the pin made; a
// revoked grant marks the account for re-linking and tells the user to run
// /link, and the next /pin does not even reach Pinterest.
func TestPinTokens(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")

	w.ps.ExpireAccessTokens("1001")
	text, _ := w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String())
	must(t, text, "1 pinned.", "12-hour pin count: 1/100")

	w.ps.RevokeGrants("1001")
	text, _ = w.pin(alice, w.addImages(w.channel.ID, 2, "").ID.String())
	must(t, text, "failed: Pinterest refused Pinbot's access to the account",
		"Pinterest no longer accepts Pinbot's access to @alicepins. Run /link to connect it again",
		"skipped: not attempted: the account must be linked again")
	acct, err := w.links.Account(w.ctx, "1001")
	if err != nil || !acct.RelinkNeeded {
		t.Fatalf("account = %+v, %v; want RelinkNeeded", acct, err)
	}
	if n := w.used("1001"); n != 1 {
		t.Fatalf("count %d, want 1 (the failed pin released)", n)
	}
	before := w.ps.Count("", "")
	text, _ = w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String())
	must(t, text, "Pinterest no longer accepts Pinbot's access to @alicepins. Run /link")
	if after := w.ps.Count("", ""); after != before {
		t.Fatalf("%d requests reached Pinterest for an account needing a re-link", after-before)
	}
	text, _ = w.settings(alice)
	must(t, text, "@alicepins (active) — 12-hour pins: 1/100", "needs /link again")

	// Linking again clears the flag and pins work.
	cred := w.ps.AddAccount("1001", "alicepins")
	if err := w.links.Link(w.ctx, alice.String(), links.Account{ID: "1001", Username: "alicepins"}, cred.Token()); err != nil {
		t.Fatal(err)
	}
	text, _ = w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String())
	must(t, text, "1 pinned.", "12-hour pin count: 2/100")
}

// TestPinPinterestDown: Pinterest unreachable is a clear message with
// nothing counted (the request never left); a 5xx leaves the pin's
// existence open, so the slot stays counted, and the batch stops.
func TestPinPinterestDown(t *testing.T) {
	t.Run("unreachable", func(t *testing.T) {
		w := newWorld(t, worldOptions{})
		alice := w.addUser("alice")
		w.link(alice, "1001", "alicepins")
		m := w.addImages(w.channel.ID, 3, "")
		w.ps.Close()
		text, _ := w.pin(alice, m.ID.String())
		must(t, text, "0 pinned, 1 failed, 2 skipped.", "failed: Pinterest is not answering", msgPinterestDown)
		if n := w.used("1001"); n != 0 {
			t.Fatalf("count %d, want 0", n)
		}
		text, _ = w.pin(alice, m.ID.String(), "some board")
		must(t, text, msgPinterestDown)
	})
	t.Run("server error", func(t *testing.T) {
		w := newWorld(t, worldOptions{})
		alice := w.addUser("alice")
		w.link(alice, "1001", "alicepins")
		m := w.addImages(w.channel.ID, 3, "")
		w.ps.Inject(pinteresttest.CreatedButFailed(http.StatusBadGateway))
		text, _ := w.pin(alice, m.ID.String())
		must(t, text, "failed: Pinterest did not answer clearly", "12-hour pin count: 1/100", "Pinterest is having trouble, so Pinbot stopped here.",
			"skipped: not attempted after Pinterest's error")
		// The ambiguous slot stays unresolved until its lease ends, then
		// counts as a pin made at that moment.
		st, err := w.engine.Status(w.ctx, "1001")
		if err != nil || st.Used != 1 || st.Pending != 1 || len(w.ps.PinsFor("1001")) != 1 {
			t.Fatalf("status %+v, %v, pins %d; want the ambiguous pin counted and pending, and made", st, err, len(w.ps.PinsFor("1001")))
		}
		w.eclock.Advance(5 * time.Minute)
		if n := w.used("1001"); n != 1 {
			t.Fatalf("count %d after the lease, want 1", n)
		}
	})
	t.Run("image rejected", func(t *testing.T) {
		w := newWorld(t, worldOptions{})
		alice := w.addUser("alice")
		w.link(alice, "1001", "alicepins")
		m := w.addImages(w.channel.ID, 3, "")
		w.ps.RejectImage(m.Attachments[1].URL, pinteresttest.CodeImageInvalid)
		text, _ := w.pin(alice, m.ID.String())
		must(t, text, "2 pinned, 1 failed.", "12-hour pin count: 1/100", "(image 2 of 3) · failed: Pinterest could not use this image", "12-hour pin count: 2/100")
		if n := w.used("1001"); n != 2 {
			t.Fatalf("count %d, want 2 (the rejected image released)", n)
		}
	})
}

// TestPinRateLimited: Pinterest's 429 holds the account in the engine
// until Pinterest's reset and stops the batch; a spam block says so.
func TestPinRateLimited(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	w.ps.Inject(pinteresttest.RetryAfter(pinteresttest.RateLimited(pinteresttest.PathPins, ""), 3600))
	m := w.addImages(w.channel.ID, 2, "")
	text, _ := w.pin(alice, m.ID.String())
	until := t0.Add(time.Hour).Unix()
	must(t, text, "failed: Pinterest rate limited this account",
		fmt.Sprintf("Pinterest rate limited @alicepins, so nothing was pinned; Pinbot will not pin with this account again before <t:%d:T> (<t:%d:R>).", until, until),
		"skipped: not attempted: rate limited by Pinterest")
	st, err := w.engine.Status(w.ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	if st.NextFree.Before(t0.Add(time.Hour)) {
		t.Fatalf("NextFree %v, want the account held until %v", st.NextFree, t0.Add(time.Hour))
	}
	// While held, nothing reaches Pinterest.
	before := w.ps.Count("POST", pinteresttest.PathPins)
	text, _ = w.pin(alice, m.ID.String())
	must(t, text, fmt.Sprintf("Pinterest asked Pinbot to pause pinning with @alicepins, so nothing more was pinned. It can pin again at <t:%d:T> (<t:%d:R>).", until, until))
	text, _ = w.settings(alice)
	must(t, text, "@alicepins (active) — 12-hour pins: 0/100", fmt.Sprintf("paused by Pinterest until <t:%d:T> (<t:%d:R>)", until, until))
	if after := w.ps.Count("POST", pinteresttest.PathPins); after != before {
		t.Fatalf("%d pins sent to a held account", after-before)
	}
	if n := len(w.ps.Pins()); n != 0 {
		t.Fatalf("%d pins created", n)
	}

	// After the reset, pins go through again.
	w.eclock.Advance(time.Hour)
	w.pclock.Advance(time.Hour)
	text, _ = w.pin(alice, m.ID.String())
	must(t, text, "2 pinned.")

	w.ps.Inject(pinteresttest.SpamBlocked(pinteresttest.PathPins))
	text, _ = w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String())
	must(t, text, "failed: blocked by Pinterest's spam protection",
		"Pinterest's spam protection blocked pins from @alicepins, so nothing was pinned; Pinbot will not pin with this account again before <t:")
}

// TestPinRateLimitedAfterSomePins: a 429 after a pin stops the batch with
// "Skipped remaining pins", as the limit does; with nothing pinned
// (TestPinRateLimited) the message says that instead.
func TestPinRateLimitedAfterSomePins(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	w.ps.Inject(pinteresttest.Fault{Method: http.MethodPost, Path: pinteresttest.PathPins}) // the first pin goes through
	w.ps.Inject(pinteresttest.RetryAfter(pinteresttest.RateLimited(pinteresttest.PathPins, ""), 3600))
	m := w.addImages(w.channel.ID, 3, "")
	text, _ := w.pin(alice, m.ID.String())
	until := t0.Add(time.Hour).Unix()
	must(t, text, "1 pinned, 1 failed, 1 skipped.", "12-hour pin count: 1/100", "failed: Pinterest rate limited this account",
		fmt.Sprintf("Pinterest rate limited @alicepins. Skipped remaining pins; Pinbot will not pin with this account again before <t:%d:T> (<t:%d:R>).", until, until),
		"skipped: not attempted: rate limited by Pinterest")
}

// TestPinEngineUnavailable: with the engine's disk full nothing is
// granted, so nothing is pinned, and the user is told.
func TestPinEngineUnavailable(t *testing.T) {
	w := newWorld(t, worldOptions{faults: true})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	w.faults.FailWrites(persistencetest.ErrDiskFull)
	text, _ := w.pin(alice, w.addImages(w.channel.ID, 2, "").ID.String())
	must(t, text, "failed: not pinned: Pinbot's pin counter is unavailable", msgEngineDown)
	if n := len(w.ps.Pins()); n != 0 {
		t.Fatalf("%d pins created without a grant", n)
	}
	w.faults.FailWrites(nil)
	text, _ = w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String())
	must(t, text, "1 pinned.")
}

// TestPinNoBoard: without a default board and without the option, the
// user is asked to choose one.
func TestPinNoBoard(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	cred := w.ps.AddAccount("1001", "alicepins", pinteresttest.Board{ID: "b1", Name: "Cats"})
	if err := w.links.Link(w.ctx, alice.String(), links.Account{ID: "1001", Username: "alicepins"}, cred.Token()); err != nil {
		t.Fatal(err)
	}
	text, _ := w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String())
	must(t, text, msgNoBoard("@alicepins"))
	if n := w.used("1001"); n != 0 {
		t.Fatalf("count %d", n)
	}
}

// TestLogsHoldNoSecrets runs commands and checks that no token, OAuth
// state or interaction token reached the logs.
func TestLogsHoldNoSecrets(t *testing.T) {
	w := newWorld(t, worldOptions{debugLog: true})
	alice := w.addUser("alice")
	cred := w.link(alice, "1001", "alicepins")
	w.ps.ExpireAccessTokens("1001") // a refresh happens
	_, in := w.pin(alice, w.addImages(w.channel.ID, 1, "").ID.String())
	text, _ := w.run(discordtest.Invocation{UserID: alice, Data: discordtest.ChatInput{Name: cmdLink}})
	state := stateOf(t, text)
	logs := w.logs.String()
	for name, secret := range map[string]string{
		"access token": cred.AccessToken, "refresh token": cred.RefreshToken, "bot token": w.dc.Token(),
		"interaction token": in.Token, "oauth state": state, "client secret": w.ps.ClientSecret(),
	} {
		if secret != "" && strings.Contains(logs, secret) {
			t.Errorf("the logs hold the %s", name)
		}
	}
	tok, err := w.links.Token(w.ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs, tok.AccessToken) || strings.Contains(logs, tok.RefreshToken) {
		t.Error("the logs hold the rotated token")
	}
	for _, c := range []string{`"component":"bot"`, `"component":"disgo"`, "<redacted>"} {
		if !strings.Contains(logs, c) {
			t.Errorf("no log line holds %s", c)
		}
	}
}
