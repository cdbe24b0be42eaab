package linkstest

import (
	"context"
	"errors"
	"testing"

	"github.com/pinbot/pinbot/bot/links"
)

// testGenerationSurvivesUnlink: Unlink deletes the token record of an
// account no user links any more; a link after that must still get a new
// grant generation, never the earlier grant's again, or a refresh of the
// earlier grant (a Session still cached, or a refresh in flight) would
// pass SaveGrantToken's check and replace the new grant's token.
func testGenerationSurvivesUnlink(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	Link(t, s, "u1", "a1")
	_, oldGen, err := s.Grant(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Unlink(ctx, "u1", "a1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Link(ctx, "u1", links.Account{ID: "a1", Username: "usera1"}, TokenFor("a1", 5)); err != nil {
		t.Fatal(err)
	}
	_, newGen, err := s.Grant(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if newGen == oldGen {
		t.Errorf("a new link after a full unlink has the earlier grant's generation %d", newGen)
	}
	// The earlier grant's Session saves its rotated token.
	err = links.GrantSaver(s, "a1", oldGen)(ctx, TokenFor("a1", 7))
	if !errors.Is(err, links.ErrRelinked) {
		t.Errorf("saving a token of the unlinked grant = %v, want ErrRelinked", err)
	}
	if tok, _ := s.Token(ctx, "a1"); !SameToken(tok, TokenFor("a1", 5)) {
		t.Errorf("the new grant's token was replaced by the old grant's: %+v", tok)
	}
}
