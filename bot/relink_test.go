package bot

import (
	"errors"
	"testing"

	"github.com/pinbot/pinbot/bot/pinterest"
)

// TestRelinkAfterUnlinkGetsNewSession: when every user unlinks an account
// its token record is deleted; a later link must still start a new grant
// generation, or session() would keep handing out the cached Session of
// the old grant (here one Pinterest refused), and the account could not
// be used until the process restarted, although the user linked it again.
func TestRelinkAfterUnlinkGetsNewSession(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	old, err := w.bot.session(w.ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	// Pinterest refuses the old grant (the user disconnected the app).
	w.ps.RevokeGrants("1001")
	if _, err := w.pc.ListBoards(w.ctx, old); !errors.Is(err, pinterest.ErrReauthRequired) {
		t.Fatalf("ListBoards with revoked grant: %v, want ErrReauthRequired", err)
	}
	// The user unlinks the account, then links it again: a new grant.
	if err := w.links.Unlink(w.ctx, alice.String(), "1001"); err != nil {
		t.Fatal(err)
	}
	w.link(alice, "1001", "alicepins")

	s, err := w.bot.session(w.ctx, "1001")
	if err != nil {
		t.Fatalf("session() after unlink + link: %v (old Session handed out: %v)", err, s == old)
	}
	if s == old {
		t.Fatal("session() handed out the Session of the unlinked grant")
	}
}
