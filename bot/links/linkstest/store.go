package linkstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/links"
)

// testClosedStore: after Close, every method fails with ErrClosed.
func testClosedStore(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	Link(t, s, "u1", "a1")
	state, err := s.NewState(ctx, "u1", t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	nop := func(any) error { return nil }
	calls := []struct {
		name string
		call func() error
	}{
		{"Close", s.Close},
		{"Ping", func() error { return s.Ping(ctx) }},
		{"User", func() error { _, err := s.User(ctx, "u1"); return err }},
		{"Accounts", func() error { _, err := s.Accounts(ctx, "u1"); return err }},
		{"Account", func() error { _, err := s.Account(ctx, "a1"); return err }},
		{"Link", func() error { return s.Link(ctx, "u1", links.Account{ID: "a2"}, TokenFor("a2", 0)) }},
		{"Unlink", func() error { return s.Unlink(ctx, "u1", "a1") }},
		{"SetActive", func() error { return s.SetActive(ctx, "u1", "a1") }},
		{"SetDefaultBoard", func() error { return s.SetDefaultBoard(ctx, "u1", "a1", "b1", "B") }},
		{"Token", func() error { _, err := s.Token(ctx, "a1"); return err }},
		{"SaveToken", func() error { return s.SaveToken(ctx, "a1", TokenFor("a1", 1)) }},
		{"Saver", func() error { return links.Saver(s, "a1")(ctx, TokenFor("a1", 1)) }},
		{"MarkRelinkNeeded", func() error { return s.MarkRelinkNeeded(ctx, "a1") }},
		{"NewState", func() error { _, err := s.NewState(ctx, "u1", t0); return err }},
		{"ConsumeState", func() error { _, err := s.ConsumeState(ctx, state, t0); return err }},
		{"ConsumeState malformed", func() error { _, err := s.ConsumeState(ctx, "x", t0); return err }},
		{"PurgeStates", func() error { _, err := s.PurgeStates(ctx, t0); return err }},
		{"Users", func() error { return s.Users(ctx, func(u links.User) error { return nop(u) }) }},
		{"AllAccounts", func() error { return s.AllAccounts(ctx, func(a links.Account) error { return nop(a) }) }},
		{"AccountUsers", func() error { _, _, err := s.AccountUsers(ctx, "a1"); return err }},
		{"AllAccountUsers", func() error { return s.AllAccountUsers(ctx, func(links.Account, []string) error { return nil }) }},
		{"SetQueueWhenFull", func() error { return s.SetQueueWhenFull(ctx, "u1", true) }},
		{"GuildSettings", func() error { _, err := s.GuildSettings(ctx, "g1"); return err }},
		{"SetPinEmoji", func() error { return s.SetPinEmoji(ctx, "g1", "🖼️") }},
		{"MarkGrantRelinkNeeded", func() error { return s.MarkGrantRelinkNeeded(ctx, "a1", 1) }},
		{"Grant", func() error { _, _, err := s.Grant(ctx, "a1"); return err }},
		{"SaveGrantToken", func() error { return s.SaveGrantToken(ctx, "a1", 1, TokenFor("a1", 1)) }},
		{"NewLinkState", func() error { _, err := s.NewLinkState(ctx, links.Request{User: "u1"}, t0); return err }},
		{"ConsumeLinkState", func() error { _, err := s.ConsumeLinkState(ctx, state, t0); return err }},
		{"Outbox Put", func() error {
			_, err := s.Outbox().Put(ctx, digest.Line{Key: digest.Key{Account: "a1", Job: 1}, User: 1, Text: "x"})
			return err
		}},
		{"Outbox Delete", func() error { return s.Outbox().Delete(ctx, []digest.Key{{Account: "a1", Job: 1}}) }},
		{"Outbox Lines", func() error { return s.Outbox().Lines(ctx, func(digest.Line) error { return nil }) }},
		{"Unobserved", func() error { _, err := s.Unobserved(ctx, "a1", []string{"p1"}); return err }},
		{"PinnedBefore", func() error { _, err := s.PinnedBefore(ctx, "a1", "b1", []string{"k1"}, t0); return err }},
		{"RememberPinned", func() error {
			return s.RememberPinned(ctx, "a1", "b1", []links.PinnedPicture{{Key: "k1", PinURL: "https://pin/1", Until: t0.Add(time.Hour)}})
		}},
		{"MarkObserved", func() error {
			return s.MarkObserved(ctx, "a1", []links.ObservedPin{Observed("p1", 0, time.Hour)}, t0)
		}},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, links.ErrClosed) {
			t.Errorf("%s on a closed store = %v, want ErrClosed", c.name, err)
		}
	}
}

// testCanceledContext: a call with a canceled context fails with its
// error and changes nothing.
func testCanceledContext(t *testing.T, open func(*testing.T) links.Store) {
	s := open(t)
	Link(t, s, "u1", "a1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := map[string]func() error{
		"User":         func() error { _, err := s.User(ctx, "u1"); return err },
		"Link":         func() error { return s.Link(ctx, "u1", links.Account{ID: "a2"}, TokenFor("a2", 0)) },
		"Unlink":       func() error { return s.Unlink(ctx, "u1", "a1") },
		"Users":        func() error { return s.Users(ctx, func(links.User) error { return nil }) },
		"Unobserved":   func() error { _, err := s.Unobserved(ctx, "a1", []string{"p1"}); return err },
		"PinnedBefore": func() error { _, err := s.PinnedBefore(ctx, "a1", "b1", []string{"k1"}, t0); return err },
		"RememberPinned": func() error {
			return s.RememberPinned(ctx, "a1", "b1", []links.PinnedPicture{{Key: "k1", PinURL: "https://pin/1", Until: t0.Add(time.Hour)}})
		},
		"MarkObserved": func() error {
			return s.MarkObserved(ctx, "a1", []links.ObservedPin{Observed("p1", 0, time.Hour)}, t0)
		},
		"GuildSettings": func() error { _, err := s.GuildSettings(ctx, "g1"); return err },
		"SetPinEmoji":   func() error { return s.SetPinEmoji(ctx, "g1", "🖼️") },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context = %v, want context.Canceled", name, err)
		}
	}
	if u := MustUser(t, s, "u1"); !slices.Equal(u.Accounts, []string{"a1"}) {
		t.Errorf("canceled calls changed the user: %+v", u)
	}
	if got := mustUnobserved(t, s, "a1", "p1"); !slices.Equal(got, []string{"p1"}) {
		t.Errorf("a canceled mark stored p1: Unobserved = %v", got)
	}
	if got := MustGuild(t, s, "g1"); got.PinEmoji != "" {
		t.Errorf("a canceled SetPinEmoji stored %+v", got)
	}
}

// testConcurrentLinksOneUser races Link, SetActive and Unlink for one
// user: no update may be lost.
func testConcurrentLinksOneUser(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	const n = links.MaxAccountsPerUser
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("a%02d", i)
	}
	runAll := func(f func(i int) error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = f(i)
			})
		}
		close(start)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}

	runAll(func(i int) error {
		return s.Link(ctx, "u1", links.Account{ID: ids[i], Username: ids[i]}, TokenFor(ids[i], 0))
	})
	u := MustUser(t, s, "u1")
	if got := slices.Sorted(slices.Values(u.Accounts)); !slices.Equal(got, ids) {
		t.Fatalf("after concurrent links, accounts = %v, want all %d", u.Accounts, n)
	}
	if !slices.Contains(ids, u.Active) {
		t.Fatalf("active %q is not a linked account", u.Active)
	}

	// Odd accounts are unlinked while even ones are switched to and
	// given a default board.
	runAll(func(i int) error {
		if i%2 == 1 {
			return s.Unlink(ctx, "u1", ids[i])
		}
		if err := s.SetActive(ctx, "u1", ids[i]); err != nil {
			return err
		}
		return s.SetDefaultBoard(ctx, "u1", ids[i], "b"+ids[i], "Board")
	})
	var even []string
	for i, id := range ids {
		if i%2 == 0 {
			even = append(even, id)
		}
	}
	u = MustUser(t, s, "u1")
	if got := slices.Sorted(slices.Values(u.Accounts)); !slices.Equal(got, even) {
		t.Fatalf("after concurrent unlinks, accounts = %v, want %v", got, even)
	}
	if !slices.Contains(even, u.Active) {
		t.Fatalf("active %q is not a remaining account", u.Active)
	}
	accts, err := s.Accounts(ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range accts {
		if a.DefaultBoard != "b"+a.ID {
			t.Errorf("account %s lost its default board: %+v", a.ID, a)
		}
	}
	for i, id := range ids {
		_, err := s.Token(ctx, id)
		if i%2 == 1 && !errors.Is(err, links.ErrNoToken) {
			t.Errorf("unlinked %s: Token err = %v, want ErrNoToken", id, err)
		}
		if i%2 == 0 && err != nil {
			t.Errorf("linked %s: Token err = %v", id, err)
		}
	}
}

// testConcurrentUsersOneAccount has many users link and then unlink one
// account at once: its token lives exactly as long as one user links it.
func testConcurrentUsersOneAccount(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	const n = 50
	run := func(f func(user string) error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { errs[i] = f(fmt.Sprintf("u%02d", i)) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
	run(func(user string) error {
		return s.Link(ctx, user, links.Account{ID: "a1", Username: "shared"}, TokenFor("a1", 0))
	})
	users := 0
	err := s.Users(ctx, func(u links.User) error {
		if u.Active != "a1" || !slices.Equal(u.Accounts, []string{"a1"}) {
			return fmt.Errorf("user %+v", u)
		}
		users++
		return nil
	})
	if err != nil || users != n {
		t.Fatalf("Users: %d users, %v; want %d linked to a1", users, err, n)
	}

	// All but one unlink; the token stays.
	run(func(user string) error {
		if user == "u00" {
			return nil
		}
		return s.Unlink(ctx, user, "a1")
	})
	if _, err := s.Token(ctx, "a1"); err != nil {
		t.Fatalf("Token with one user left: %v", err)
	}
	if err := s.Unlink(ctx, "u00", "a1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Token(ctx, "a1"); !errors.Is(err, links.ErrNoToken) {
		t.Fatalf("Token after every user unlinked: %v, want ErrNoToken", err)
	}
}
