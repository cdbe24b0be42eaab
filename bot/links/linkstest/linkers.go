package linkstest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pinbot/pinbot/bot/links"
)

// testAccountUsers: the users who link an account are listed in the
// order they linked it, one account or all of them; an unlink removes
// its user, and an account no one links is not found.
func testAccountUsers(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	Link(t, s, "u2", "a1")
	Link(t, s, "u1", "a1")
	Link(t, s, "u1", "a2")

	a, users, err := s.AccountUsers(ctx, "a1")
	if err != nil || a.Username != "usera1" || !slices.Equal(users, []string{"u2", "u1"}) {
		t.Fatalf("AccountUsers(a1) = %+v, %v, %v", a, users, err)
	}
	var all []string
	if err := s.AllAccountUsers(ctx, func(a links.Account, users []string) error {
		all = append(all, a.ID+":"+a.Username+":"+strings.Join(users, ","))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a1:usera1:u2,u1", "a2:usera2:u1"}; !slices.Equal(all, want) {
		t.Errorf("AllAccountUsers = %q, want %q", all, want)
	}

	if err := s.Unlink(ctx, "u2", "a1"); err != nil {
		t.Fatal(err)
	}
	if _, users, err := s.AccountUsers(ctx, "a1"); err != nil || !slices.Equal(users, []string{"u1"}) {
		t.Errorf("after u2's unlink: %v, %v", users, err)
	}
	if _, _, err := s.AccountUsers(ctx, "nobody"); !errors.Is(err, links.ErrNoToken) {
		t.Errorf("AccountUsers of an account no one links: %v, want ErrNoToken", err)
	}
	if _, _, err := s.AccountUsers(ctx, ""); !errors.Is(err, links.ErrInvalid) {
		t.Errorf("AccountUsers(\"\"): %v, want ErrInvalid", err)
	}
}
