package linkstest

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
)

// step is one operation on a store and the state of user u1 after it.
type step struct {
	name string
	do   func(ctx context.Context, s links.Store) error
	err  error      // matched with errors.Is; nil wants success
	want links.User // u1 after the step
}

// run applies steps in order to s and checks each outcome.
func run(t *testing.T, s links.Store, steps []step) {
	t.Helper()
	ctx := context.Background()
	for i, st := range steps {
		err := st.do(ctx, s)
		if (st.err == nil && err != nil) || (st.err != nil && !errors.Is(err, st.err)) {
			t.Fatalf("step %d (%s): err = %v, want %v", i, st.name, err, st.err)
		}
		got, err := s.User(ctx, "u1")
		if err != nil {
			t.Fatalf("step %d (%s): User: %v", i, st.name, err)
		}
		if !reflect.DeepEqual(got, st.want) {
			t.Fatalf("step %d (%s): User = %+v, want %+v", i, st.name, got, st.want)
		}
	}
}

func doLink(user, id string, gen int) func(context.Context, links.Store) error {
	return func(ctx context.Context, s links.Store) error {
		return s.Link(ctx, user, links.Account{ID: id, Username: "user" + id}, TokenFor(id, gen))
	}
}

func doUnlink(user, id string) func(context.Context, links.Store) error {
	return func(ctx context.Context, s links.Store) error { return s.Unlink(ctx, user, id) }
}

func doSetActive(user, id string) func(context.Context, links.Store) error {
	return func(ctx context.Context, s links.Store) error { return s.SetActive(ctx, user, id) }
}

func u1(active string, accounts ...string) links.User {
	return links.User{ID: "u1", Active: active, Accounts: accounts}
}

// testLinkSwitchUnlink: links, switches and unlinks in turn, with the
// active account after each.
func testLinkSwitchUnlink(t *testing.T, open func(*testing.T) links.Store) {
	s := open(t)
	run(t, s, []step{
		{"unknown user", func(context.Context, links.Store) error { return nil }, nil, u1("")},
		{"link a1", doLink("u1", "a1", 0), nil, u1("a1", "a1")},
		{"link a2 becomes active", doLink("u1", "a2", 0), nil, u1("a2", "a1", "a2")},
		{"switch to a1", doSetActive("u1", "a1"), nil, u1("a1", "a1", "a2")},
		{"switch to a1 again", doSetActive("u1", "a1"), nil, u1("a1", "a1", "a2")},
		{"switch to unlinked a3", doSetActive("u1", "a3"), links.ErrNotLinked, u1("a1", "a1", "a2")},
		{"u2 links b1", doLink("u2", "b1", 0), nil, u1("a1", "a1", "a2")},
		{"switch to b1 linked by u2 only", doSetActive("u1", "b1"), links.ErrNotLinked, u1("a1", "a1", "a2")},
		{"relink a2 keeps order", doLink("u1", "a2", 1), nil, u1("a2", "a1", "a2")},
		{"link a3", doLink("u1", "a3", 0), nil, u1("a3", "a1", "a2", "a3")},
		{"switch to a2", doSetActive("u1", "a2"), nil, u1("a2", "a1", "a2", "a3")},
		{"unlink active a2: next one", doUnlink("u1", "a2"), nil, u1("a3", "a1", "a3")},
		{"unlink a2 again", doUnlink("u1", "a2"), links.ErrNotLinked, u1("a3", "a1", "a3")},
		{"unlink never linked", doUnlink("u1", "zz"), links.ErrNotLinked, u1("a3", "a1", "a3")},
		{"unlink active last: previous one", doUnlink("u1", "a3"), nil, u1("a1", "a1")},
		{"link a4", doLink("u1", "a4", 0), nil, u1("a4", "a1", "a4")},
		{"unlink inactive a1: active kept", doUnlink("u1", "a1"), nil, u1("a4", "a4")},
		{"unlink a4: none left", doUnlink("u1", "a4"), nil, u1("")},
		{"unlink from nothing", doUnlink("u1", "a4"), links.ErrNotLinked, u1("")},
	})
}

// testLinkStoresAccountAndToken: Link stores the account and its token;
// linking again replaces them but keeps the default board.
func testLinkStoresAccountAndToken(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	if err := s.Link(ctx, "u1", links.Account{ID: "a1", Username: "alice"}, TokenFor("a1", 0)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Account(ctx, "a1")
	if want := (links.Account{ID: "a1", Username: "alice"}); err != nil || got != want {
		t.Fatalf("Account = %+v, %v; want %+v", got, err, want)
	}
	tok, err := s.Token(ctx, "a1")
	if err != nil || !SameToken(tok, TokenFor("a1", 0)) {
		t.Fatalf("Token = %+v, %v; want %+v", tok, err, TokenFor("a1", 0))
	}

	// Relinking replaces the token and username, keeps the default board
	// and clears RelinkNeeded.
	if err := s.SetDefaultBoard(ctx, "u1", "a1", "b7", "Cats"); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkRelinkNeeded(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	acct := links.Account{ID: "a1", Username: "alice2", DefaultBoard: "b9", DefaultBoardName: "Dogs", RelinkNeeded: true}
	if err := s.Link(ctx, "u1", acct, TokenFor("a1", 1)); err != nil {
		t.Fatal(err)
	}
	got, err = s.Account(ctx, "a1")
	if want := (links.Account{ID: "a1", Username: "alice2", DefaultBoard: "b7", DefaultBoardName: "Cats"}); err != nil || got != want {
		t.Fatalf("after relink Account = %+v, %v; want %+v", got, err, want)
	}
	tok, err = s.Token(ctx, "a1")
	if err != nil || !SameToken(tok, TokenFor("a1", 1)) {
		t.Fatalf("after relink Token = %+v, %v; want generation 1", tok, err)
	}

	// A first link may bring a default board.
	acct = links.Account{ID: "a2", Username: "bob", DefaultBoard: "b2", DefaultBoardName: "Birds"}
	if err := s.Link(ctx, "u1", acct, TokenFor("a2", 0)); err != nil {
		t.Fatal(err)
	}
	accts, err := s.Accounts(ctx, "u1")
	want := []links.Account{
		{ID: "a1", Username: "alice2", DefaultBoard: "b7", DefaultBoardName: "Cats"},
		{ID: "a2", Username: "bob", DefaultBoard: "b2", DefaultBoardName: "Birds"},
	}
	if err != nil || !reflect.DeepEqual(accts, want) {
		t.Fatalf("Accounts = %+v, %v; want %+v", accts, err, want)
	}
	if accts, err := s.Accounts(ctx, "nobody"); err != nil || accts != nil {
		t.Fatalf("Accounts(nobody) = %+v, %v; want nil, nil", accts, err)
	}
}

// testSharedAccountKeepsTokenUntilLastUnlink: an account two users link
// keeps its token until the last one unlinks it.
func testSharedAccountKeepsTokenUntilLastUnlink(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	Link(t, s, "u1", "a1")
	Link(t, s, "u2", "a1")
	if err := s.SetDefaultBoard(ctx, "u2", "a1", "b1", "Shared"); err != nil {
		t.Fatal(err)
	}
	// The default board belongs to the account: u1 sees u2's choice.
	accts, err := s.Accounts(ctx, "u1")
	if err != nil || len(accts) != 1 || accts[0].DefaultBoard != "b1" {
		t.Fatalf("Accounts(u1) = %+v, %v; want a1 with board b1", accts, err)
	}

	if err := s.Unlink(ctx, "u1", "a1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Token(ctx, "a1"); err != nil {
		t.Fatalf("Token after first unlink: %v; want the token kept for u2", err)
	}
	if err := s.SetActive(ctx, "u1", "a1"); !errors.Is(err, links.ErrNotLinked) {
		t.Fatalf("SetActive by u1 after unlink: %v; want ErrNotLinked", err)
	}
	if err := s.SetDefaultBoard(ctx, "u1", "a1", "b2", "Mine"); !errors.Is(err, links.ErrNotLinked) {
		t.Fatalf("SetDefaultBoard by u1 after unlink: %v; want ErrNotLinked", err)
	}

	if err := s.Unlink(ctx, "u2", "a1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Token(ctx, "a1"); !errors.Is(err, links.ErrNoToken) {
		t.Fatalf("Token after last unlink: %v; want ErrNoToken", err)
	}
	if _, err := s.Account(ctx, "a1"); !errors.Is(err, links.ErrNoToken) {
		t.Fatalf("Account after last unlink: %v; want ErrNoToken", err)
	}
	// Linking again starts afresh: the old default board is gone.
	Link(t, s, "u1", "a1")
	if a, err := s.Account(ctx, "a1"); err != nil || a.DefaultBoard != "" {
		t.Fatalf("Account after relink = %+v, %v; want no default board", a, err)
	}
}

// testSetDefaultBoard: the default board is set, replaced and cleared by
// a user who links the account, and per account.
func testSetDefaultBoard(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	Link(t, s, "u1", "a1")
	Link(t, s, "u1", "a2")
	tests := []struct {
		name               string
		user, acct, id, nm string
		err                error
		want               links.Account // a1 after the call
	}{
		{"set", "u1", "a1", "b1", "Cats", nil, links.Account{ID: "a1", Username: "usera1", DefaultBoard: "b1", DefaultBoardName: "Cats"}},
		{"replace", "u1", "a1", "b2", "Dogs", nil, links.Account{ID: "a1", Username: "usera1", DefaultBoard: "b2", DefaultBoardName: "Dogs"}},
		{"other user", "u2", "a1", "b3", "X", links.ErrNotLinked, links.Account{ID: "a1", Username: "usera1", DefaultBoard: "b2", DefaultBoardName: "Dogs"}},
		{"name without id", "u1", "a1", "", "X", links.ErrInvalid, links.Account{ID: "a1", Username: "usera1", DefaultBoard: "b2", DefaultBoardName: "Dogs"}},
		{"bad board id", "u1", "a1", "b 1", "X", links.ErrInvalid, links.Account{ID: "a1", Username: "usera1", DefaultBoard: "b2", DefaultBoardName: "Dogs"}},
		{"control in name", "u1", "a1", "b1", "a\nb", links.ErrInvalid, links.Account{ID: "a1", Username: "usera1", DefaultBoard: "b2", DefaultBoardName: "Dogs"}},
		{"clear", "u1", "a1", "", "", nil, links.Account{ID: "a1", Username: "usera1"}},
	}
	for i, tt := range tests {
		err := s.SetDefaultBoard(ctx, tt.user, tt.acct, tt.id, tt.nm)
		if (tt.err == nil && err != nil) || (tt.err != nil && !errors.Is(err, tt.err)) {
			t.Fatalf("step %d (%s): err = %v, want %v", i, tt.name, err, tt.err)
		}
		got, err := s.Account(ctx, "a1")
		if err != nil || got != tt.want {
			t.Fatalf("step %d (%s): Account = %+v, %v; want %+v", i, tt.name, got, err, tt.want)
		}
	}
	// The default board is per account.
	if a, err := s.Account(ctx, "a2"); err != nil || a.DefaultBoard != "" {
		t.Fatalf("Account(a2) = %+v, %v; want no default board", a, err)
	}
}

// testMarkRelinkNeeded: MarkRelinkNeeded flags the account, keeps it
// active, and Link clears the flag.
func testMarkRelinkNeeded(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	if err := s.MarkRelinkNeeded(ctx, "a1"); !errors.Is(err, links.ErrNoToken) {
		t.Fatalf("MarkRelinkNeeded(unknown) = %v, want ErrNoToken", err)
	}
	Link(t, s, "u1", "a1")
	for range 2 { // marking twice is harmless
		if err := s.MarkRelinkNeeded(ctx, "a1"); err != nil {
			t.Fatal(err)
		}
	}
	accts, err := s.Accounts(ctx, "u1")
	if err != nil || len(accts) != 1 || !accts[0].RelinkNeeded {
		t.Fatalf("Accounts = %+v, %v; want a1 with RelinkNeeded", accts, err)
	}
	if u := MustUser(t, s, "u1"); u.Active != "a1" {
		t.Fatalf("Active = %q after MarkRelinkNeeded, want a1 kept", u.Active)
	}
	Link(t, s, "u1", "a1")
	if a, err := s.Account(ctx, "a1"); err != nil || a.RelinkNeeded {
		t.Fatalf("Account after relink = %+v, %v; want RelinkNeeded cleared", a, err)
	}
}

// testTooManyAccounts: a user links at most MaxAccountsPerUser accounts.
func testTooManyAccounts(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	for i := range links.MaxAccountsPerUser {
		Link(t, s, "u1", "a"+strings.Repeat("x", i))
	}
	err := s.Link(ctx, "u1", links.Account{ID: "extra"}, TokenFor("extra", 0))
	if !errors.Is(err, links.ErrTooManyAccounts) {
		t.Fatalf("Link beyond the limit = %v, want ErrTooManyAccounts", err)
	}
	if _, err := s.Account(ctx, "extra"); !errors.Is(err, links.ErrNoToken) {
		t.Fatalf("refused account was stored: %v", err)
	}
	// Relinking one already linked still works.
	if err := s.Link(ctx, "u1", links.Account{ID: "a"}, TokenFor("a", 1)); err != nil {
		t.Fatalf("relink at the limit: %v", err)
	}
}

// testValidation: malformed arguments fail with ErrInvalid, naming the
// argument, and change nothing.
func testValidation(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	Link(t, s, "u1", "a1")
	long := strings.Repeat("1", links.MaxIDLen+1)
	good := TokenFor("a1", 0)
	tests := []struct {
		name string
		call func() error
		msg  string // the error must mention it
	}{
		{"User empty id", func() error { _, err := s.User(ctx, ""); return err }, "user id is empty"},
		{"User long id", func() error { _, err := s.User(ctx, long); return err }, "user id is 65 bytes"},
		{"User slash", func() error { _, err := s.User(ctx, "u/1"); return err }, "user id"},
		{"Accounts empty", func() error { _, err := s.Accounts(ctx, ""); return err }, "user id is empty"},
		{"Account empty", func() error { _, err := s.Account(ctx, ""); return err }, "account id is empty"},
		{"Link empty user", func() error { return s.Link(ctx, "", links.Account{ID: "a1"}, good) }, "user id is empty"},
		{"Link empty account", func() error { return s.Link(ctx, "u1", links.Account{}, good) }, "account id is empty"},
		{"Link long account", func() error { return s.Link(ctx, "u1", links.Account{ID: long}, good) }, "account id is 65 bytes"},
		{"Link nil token", func() error { return s.Link(ctx, "u1", links.Account{ID: "a1"}, nil) }, "token is nil"},
		{"Link empty token", func() error { return s.Link(ctx, "u1", links.Account{ID: "a1"}, &oauth2.Token{TokenType: "bearer"}) }, "neither access nor refresh"},
		{"Link huge token", func() error {
			return s.Link(ctx, "u1", links.Account{ID: "a1"}, &oauth2.Token{AccessToken: strings.Repeat("x", links.MaxTokenLen+1)})
		}, "access token is"},
		{"Link long username", func() error {
			return s.Link(ctx, "u1", links.Account{ID: "a1", Username: strings.Repeat("n", links.MaxNameLen+1)}, good)
		}, "username is"},
		{"Link bad UTF-8 username", func() error { return s.Link(ctx, "u1", links.Account{ID: "a1", Username: "\xff"}, good) }, "not valid UTF-8"},
		{"Unlink empty account", func() error { return s.Unlink(ctx, "u1", "") }, "account id is empty"},
		{"SetActive empty user", func() error { return s.SetActive(ctx, "", "a1") }, "user id is empty"},
		{"SetDefaultBoard long board", func() error { return s.SetDefaultBoard(ctx, "u1", "a1", long, "") }, "board id is 65 bytes"},
		{"Token empty", func() error { _, err := s.Token(ctx, ""); return err }, "account id is empty"},
		{"SaveToken nil", func() error { return s.SaveToken(ctx, "a1", nil) }, "token is nil"},
		{"SaveToken empty", func() error { return s.SaveToken(ctx, "a1", &oauth2.Token{}) }, "neither access nor refresh"},
		{"MarkRelinkNeeded empty", func() error { return s.MarkRelinkNeeded(ctx, "") }, "account id is empty"},
		{"NewState empty user", func() error { _, err := s.NewState(ctx, "", t0); return err }, "user id is empty"},
	}
	for _, tt := range tests {
		err := tt.call()
		if !errors.Is(err, links.ErrInvalid) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: err = %v, want ErrInvalid mentioning %q", tt.name, err, tt.msg)
		}
	}
	// Nothing was changed by the rejected calls.
	if u := MustUser(t, s, "u1"); !reflect.DeepEqual(u, u1("a1", "a1")) {
		t.Errorf("User after rejected calls = %+v", u)
	}
	if tok, err := s.Token(ctx, "a1"); err != nil || !SameToken(tok, good) {
		t.Errorf("Token after rejected calls = %+v, %v", tok, err)
	}
}

// testListing: Users and AllAccounts list in byte order, stop at the
// callback's error, and let it use the store.
func testListing(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	Link(t, s, "u2", "a2")
	Link(t, s, "u1", "a1")
	Link(t, s, "u1", "a2")

	var users []links.User
	if err := s.Users(ctx, func(u links.User) error { users = append(users, u); return nil }); err != nil {
		t.Fatal(err)
	}
	wantUsers := []links.User{u1("a2", "a1", "a2"), {ID: "u2", Active: "a2", Accounts: []string{"a2"}}}
	if !reflect.DeepEqual(users, wantUsers) {
		t.Errorf("Users = %+v, want %+v", users, wantUsers)
	}

	var accts []links.Account
	if err := s.AllAccounts(ctx, func(a links.Account) error { accts = append(accts, a); return nil }); err != nil {
		t.Fatal(err)
	}
	wantAccts := []links.Account{{ID: "a1", Username: "usera1"}, {ID: "a2", Username: "usera2"}}
	if !reflect.DeepEqual(accts, wantAccts) {
		t.Errorf("AllAccounts = %+v, want %+v", accts, wantAccts)
	}

	// The callback's error stops the scan and is returned as is.
	stop := errors.New("stop")
	n := 0
	err := s.Users(ctx, func(links.User) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("Users with failing callback: err = %v after %d calls, want stop after 1", err, n)
	}
	n = 0
	err = s.AllAccounts(ctx, func(links.Account) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("AllAccounts with failing callback: err = %v after %d calls, want stop after 1", err, n)
	}

	// The callback may use the store.
	err = s.Users(ctx, func(u links.User) error {
		_, err := s.Accounts(ctx, u.ID)
		return err
	})
	if err != nil {
		t.Errorf("Users with nested Accounts: %v", err)
	}
}

// testSetQueueWhenFull: the when_full setting needs a linked account and
// is kept.
func testSetQueueWhenFull(t *testing.T, open func(*testing.T) links.Store) {
	s := open(t)
	ctx := context.Background()
	if err := s.SetQueueWhenFull(ctx, "u1", true); !errors.Is(err, links.ErrNotLinked) {
		t.Fatalf("without accounts: %v, want ErrNotLinked", err)
	}
	Link(t, s, "u1", "a1")
	for _, on := range []bool{true, true, false} {
		if err := s.SetQueueWhenFull(ctx, "u1", on); err != nil {
			t.Fatal(err)
		}
		u, err := s.User(ctx, "u1")
		if err != nil || u.QueueWhenFull != on {
			t.Fatalf("after SetQueueWhenFull(%v): %+v, %v", on, u, err)
		}
	}
}
