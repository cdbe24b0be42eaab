package linkstest

import (
	"context"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
)

// t0 is the start of every test's clock.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// TokenFor returns a distinct token for account id, generation gen.
func TokenFor(id string, gen int) *oauth2.Token {
	g := string(rune('0' + gen%10))
	return &oauth2.Token{
		AccessToken:  "access-" + id + "-" + g,
		RefreshToken: "refresh-" + id + "-" + g,
		TokenType:    "bearer",
		Expiry:       t0.Add(30 * 24 * time.Hour),
	}
}

// Link links account id (username "user"+id) for user with TokenFor(id, 0).
func Link(t *testing.T, s links.Store, user, id string) {
	t.Helper()
	if err := s.Link(context.Background(), user, links.Account{ID: id, Username: "user" + id}, TokenFor(id, 0)); err != nil {
		t.Fatalf("Link(%s, %s): %v", user, id, err)
	}
}

// MustUser returns the stored User.
func MustUser(t *testing.T, s links.Store, id string) links.User {
	t.Helper()
	u, err := s.User(context.Background(), id)
	if err != nil {
		t.Fatalf("User(%s): %v", id, err)
	}
	return u
}

// SameToken reports whether a and b carry the same stored fields.
func SameToken(a, b *oauth2.Token) bool {
	return a.AccessToken == b.AccessToken && a.RefreshToken == b.RefreshToken &&
		a.TokenType == b.TokenType && a.Expiry.Equal(b.Expiry)
}
