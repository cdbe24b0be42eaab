package linkstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// testSaveToken: SaveToken replaces the token of a linked account only,
// and keeps RelinkNeeded.
func testSaveToken(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	if _, err := s.Token(ctx, "a1"); !errors.Is(err, links.ErrNoToken) {
		t.Fatalf("Token(unknown) = %v, want ErrNoToken", err)
	}
	if err := s.SaveToken(ctx, "a1", TokenFor("a1", 1)); !errors.Is(err, links.ErrNoToken) {
		t.Fatalf("SaveToken(never linked) = %v, want ErrNoToken", err)
	}
	if _, err := s.Token(ctx, "a1"); !errors.Is(err, links.ErrNoToken) {
		t.Fatalf("SaveToken of an unlinked account stored a token: %v", err)
	}

	Link(t, s, "u1", "a1")
	if err := s.MarkRelinkNeeded(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveToken(ctx, "a1", TokenFor("a1", 2)); err != nil {
		t.Fatal(err)
	}
	tok, err := s.Token(ctx, "a1")
	if err != nil || !SameToken(tok, TokenFor("a1", 2)) {
		t.Fatalf("Token = %+v, %v; want generation 2", tok, err)
	}
	if a, _ := s.Account(ctx, "a1"); !a.RelinkNeeded {
		t.Errorf("SaveToken cleared RelinkNeeded; only Link may")
	}

	// The Saver is SaveToken.
	if err := links.Saver(s, "a1")(ctx, TokenFor("a1", 3)); err != nil {
		t.Fatal(err)
	}
	if tok, err := s.Token(ctx, "a1"); err != nil || !SameToken(tok, TokenFor("a1", 3)) {
		t.Fatalf("Token after Saver = %+v, %v; want generation 3", tok, err)
	}

	// After the last unlink, a late save (a refresh that was in flight)
	// does not bring the token back.
	if err := s.Unlink(ctx, "u1", "a1"); err != nil {
		t.Fatal(err)
	}
	if err := links.Saver(s, "a1")(ctx, TokenFor("a1", 4)); !errors.Is(err, links.ErrNoToken) {
		t.Fatalf("Saver after unlink = %v, want ErrNoToken", err)
	}
	if _, err := s.Token(ctx, "a1"); !errors.Is(err, links.ErrNoToken) {
		t.Fatalf("Token after late save = %v, want ErrNoToken", err)
	}
}

// testSaverKeepsRotatedToken runs a refresh against the Pinterest stand-in,
// whose refresh tokens work once: the rotated token must be the stored
// one, and the original must be dead.
func testSaverKeepsRotatedToken(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	clk := pinteresttest.NewClock(t0)
	srv := pinteresttest.NewServer(pinteresttest.WithClock(clk.Now))
	t.Cleanup(srv.Close)
	c, err := pinterest.New(pinterest.Config{
		ClientID:       srv.ClientID(),
		ClientSecret:   srv.ClientSecret(),
		RedirectURL:    "https://bot.example/oauth/callback",
		APIBase:        srv.APIBase(),
		AuthURL:        srv.AuthURL(),
		RequestTimeout: 10 * time.Second,
		Logger:         zerolog.Nop(),
		Now:            clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := open(t)

	cred := srv.AddAccount("1001", "alice")
	if err := s.Link(ctx, "u1", links.Account{ID: "1001", Username: "alice"}, cred.Token()); err != nil {
		t.Fatal(err)
	}
	srv.ExpireAccessTokens("1001") // the next call gets a 401 and refreshes

	stored, err := s.Token(ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := pinterest.NewSession(stored, links.Saver(s, "1001"))
	if err != nil {
		t.Fatal(err)
	}
	if acct, err := c.UserAccount(ctx, sess); err != nil || acct.ID != "1001" {
		t.Fatalf("UserAccount = %+v, %v", acct, err)
	}
	rotated, err := s.Token(ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	if rotated.RefreshToken == cred.RefreshToken || !SameToken(rotated, sess.Token()) {
		t.Fatalf("stored token is not the rotated one: refresh changed = %v, same as session = %v",
			rotated.RefreshToken != cred.RefreshToken, SameToken(rotated, sess.Token()))
	}

	// A session from the stored token works; one from the original
	// (rotated away) token needs a new authorization.
	again, err := pinterest.NewSession(rotated, links.Saver(s, "1001"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UserAccount(ctx, again); err != nil {
		t.Fatalf("UserAccount with stored token: %v", err)
	}
	old := cred.Token()
	old.AccessToken = "" // force a refresh with the dead refresh token
	dead, err := pinterest.NewSession(old, func(context.Context, *oauth2.Token) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UserAccount(ctx, dead); !errors.Is(err, pinterest.ErrReauthRequired) {
		t.Fatalf("UserAccount with the rotated-away token = %v, want ErrReauthRequired", err)
	}
}

// testGrantGenerations: Link starts a new grant generation, saving a
// refreshed token keeps it, and a token or a refusal of an earlier grant
// changes nothing once the account has been linked again.
func testGrantGenerations(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	Link(t, s, "u1", "a1")
	_, g1, err := s.Grant(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SaveGrantToken(ctx, "a1", g1, TokenFor("a1", 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveToken(ctx, "a1", TokenFor("a1", 3)); err != nil {
		t.Fatal(err)
	}
	tok, g, err := s.Grant(ctx, "a1")
	if err != nil || g != g1 || !SameToken(tok, TokenFor("a1", 3)) {
		t.Fatalf("after refreshes: Grant = %+v, %d, %v; want token 3 of generation %d", tok, g, err, g1)
	}

	// Another user links the same account: a new grant.
	Link(t, s, "u2", "a1")
	tok2, g2, err := s.Grant(ctx, "a1")
	if err != nil || g2 != g1+1 {
		t.Fatalf("after a new link: generation %d, %v; want %d", g2, err, g1+1)
	}
	err = links.GrantSaver(s, "a1", g1)(ctx, TokenFor("a1", 9))
	if !errors.Is(err, links.ErrRelinked) {
		t.Fatalf("saving a token of the earlier grant = %v, want ErrRelinked", err)
	}
	if tok, _, _ := s.Grant(ctx, "a1"); !SameToken(tok, tok2) {
		t.Fatalf("a token of the earlier grant replaced the new one: %+v", tok)
	}

	if err := s.MarkGrantRelinkNeeded(ctx, "a1", g1); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Account(ctx, "a1"); err != nil || a.RelinkNeeded {
		t.Fatalf("refusing the earlier grant marked the account: %+v, %v", a, err)
	}
	if err := s.MarkGrantRelinkNeeded(ctx, "a1", g2); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Account(ctx, "a1"); err != nil || !a.RelinkNeeded {
		t.Fatalf("refusing the current grant: %+v, %v; want re-link needed", a, err)
	}
	if err := s.MarkGrantRelinkNeeded(ctx, "zz", 1); !errors.Is(err, links.ErrNoToken) {
		t.Fatalf("MarkGrantRelinkNeeded(unknown) = %v, want ErrNoToken", err)
	}
}
