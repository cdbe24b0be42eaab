package bot

import (
	"context"

	"errors"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
	"runtime"
	"strings"
	"testing"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// waitBlockedInSessionLock waits (yielding, no sleep) until some goroutine
// is inside (*Bot).session, blocked on the session cache's mutex.
func waitBlockedInSessionLock(w *world) {
	w.t.Helper()
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n == len(buf) {
			// Cut short: other tests' goroutines fill it.
			buf = make([]byte, 2*len(buf))
			continue
		}
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			if strings.Contains(g, "bot.(*Bot).session(") && strings.Contains(g, "sync.(*Mutex).Lock") {
				return
			}
		}
		if w.ctx.Err() != nil {
			w.t.Fatal("no goroutine blocked in (*Bot).session")
		}
		runtime.Gosched()
	}
}

// TestSessionSurvivesRefreshDuringLookup: (*Bot).session reads the stored
// token before taking the cache lock. When the cached Session rotates the
// token in between (another /pin refreshing the shared account), the read
// is stale, and a Session rebuilt from it would hold a refresh token
// Pinterest has already rotated away (and the account would be marked
// "re-link needed"). The cached Session must be handed out instead.
func TestSessionSurvivesRefreshDuringLookup(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	s1, err := w.bot.session(w.ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	w.ps.ExpireAccessTokens("1001") // the next request refreshes

	w.bot.sessions.mu.Lock()
	type res struct {
		s   *pinterest.Session
		err error
	}
	got := make(chan res, 1)
	go func() {
		s, err := w.bot.session(w.ctx, "1001")
		got <- res{s, err}
	}()
	waitBlockedInSessionLock(w) // it has read the stored token already

	// Meanwhile the shared Session refreshes (as another /pin would).
	if _, err := w.pc.ListBoards(w.ctx, s1); err != nil {
		w.bot.sessions.mu.Unlock()
		t.Fatalf("refresh through the cached session: %v", err)
	}
	w.bot.sessions.mu.Unlock()

	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if _, err := w.pc.ListBoards(w.ctx, r.s); err != nil {
		t.Fatalf("session() handed out a Session rebuilt from the stale, rotated token: %v (reauth=%v)",
			err, errors.Is(err, pinterest.ErrReauthRequired))
	}
}

// TestAutocompleteAnsweredWhenBoardsSlow: when listing boards uses up the
// whole lookup budget (Pinterest hangs), autocomplete still answers, with
// no choices, within Discord's three seconds. It takes the lookup budget,
// two seconds, of real time: the deadline is the bot's real one.
func TestAutocompleteAnsweredWhenBoardsSlow(t *testing.T) {
	w := newWorld(t, worldOptions{realDiscordClock: true})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	w.ps.Inject(pinteresttest.Hang(pinteresttest.PathBoards))
	in := w.interact(discordtest.Invocation{UserID: alice, Data: discordtest.Autocomplete{Name: cmdPin, Options: []discordtest.CommandOption{
		{Name: optMessages, Value: "1"}, {Name: optBoard, Value: "", Focused: true}}}})
	w.waitDone(in)
	rs := in.Responses()
	if len(rs) != 1 || !rs[0].OK() {
		t.Fatalf("autocomplete responses %+v; want one (empty) result within Discord's 3 s", rs)
	}
}

// TestRelinkOutranksTheOldGrant: after the account is linked again, the
// Session of the earlier grant neither replaces the new token when it
// refreshes nor marks the account "re-link needed" when Pinterest refuses
// it; the next lookup hands out a Session of the new grant.
func TestRelinkOutranksTheOldGrant(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	old, err := w.bot.session(w.ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	w.link(alice, "1001", "alicepins") // a new grant: a new token on the stand-in
	_, newGen, err := w.links.Grant(w.ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := w.bot.session(w.ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	if fresh == old {
		t.Fatal("session() kept the Session of the earlier grant after a new link")
	}
	if gen, current := w.bot.grantOf("1001", fresh); !current || gen != newGen {
		t.Fatalf("grantOf(new Session) = %d, %v; want %d, true", gen, current, newGen)
	}

	// The old grant's Session refreshes: its token must not replace the new
	// grant's.
	want, err := w.links.Token(w.ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	if err := links.GrantSaver(w.links, "1001", newGen-1)(w.ctx, &oauth2.Token{AccessToken: "old-grant", RefreshToken: "old-grant-r"}); !errors.Is(err, links.ErrRelinked) {
		t.Fatalf("saving a token of the earlier grant = %v, want ErrRelinked", err)
	}
	if got, _ := w.links.Token(w.ctx, "1001"); got.RefreshToken != want.RefreshToken {
		t.Fatal("a token of the earlier grant replaced the new one")
	}

	// Pinterest refuses the old grant: the account keeps its new link.
	w.bot.markRelink(context.Background(), "1001", old)
	if a, err := w.links.Account(w.ctx, "1001"); err != nil || a.RelinkNeeded {
		t.Fatalf("account after the old grant was refused: %+v, %v; want no re-link needed", a, err)
	}
	// Pinterest refuses the current grant: now it is marked.
	w.bot.markRelink(context.Background(), "1001", fresh)
	if a, err := w.links.Account(w.ctx, "1001"); err != nil || !a.RelinkNeeded {
		t.Fatalf("account after its grant was refused: %+v, %v; want re-link needed", a, err)
	}
}
