package etcdlinks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
	"github.com/pinbot/pinbot/bot/links/linkstest"
)

// testTwoStoresConsumeOnce: two members, each with several goroutines,
// consume each state at once: exactly one call in all gets its user.
func testTwoStoresConsumeOnce(t *testing.T, c *etcdtestClients) {
	ctx := context.Background()
	keys := freshKeys()
	members := []*Store{openStore(t, c.a, keys, Options{}), openStore(t, c.b, keys, Options{})}
	const states, racers = 10, 4 // racers per member
	for i := range states {
		user := fmt.Sprintf("u%d", i)
		st, err := members[i%2].NewState(ctx, user, t0)
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins []int // the member of each winner
			errs []error
		)
		start := make(chan struct{})
		for m, s := range members {
			for range racers {
				wg.Go(func() {
					<-start
					got, err := s.ConsumeState(ctx, st, t0.Add(time.Second))
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil && got == user:
						wins = append(wins, m)
					case errors.Is(err, links.ErrStateInvalid):
					default:
						errs = append(errs, fmt.Errorf("%q, %w", got, err))
					}
				})
			}
		}
		close(start)
		wg.Wait()
		if len(wins) != 1 || len(errs) > 0 {
			t.Fatalf("state %d: winners on members %v (want one), unexpected errors %v", i, wins, errs)
		}
	}
}

// testTwoStoresLinkNoLostUpdate: two members link one account for many
// users, and many accounts for one user, at once: every link is
// recorded, and every Link raised the grant counter once.
func testTwoStoresLinkNoLostUpdate(t *testing.T, c *etcdtestClients) {
	ctx := context.Background()
	keys := freshKeys()
	members := []*Store{openStore(t, c.a, keys, Options{}), openStore(t, c.b, keys, Options{})}
	const users, accounts = 20, 10
	var wg sync.WaitGroup
	errs := make(chan error, users+accounts)
	start := make(chan struct{})
	for i := range users {
		wg.Go(func() {
			<-start
			u := fmt.Sprintf("u%02d", i)
			errs <- members[i%2].Link(ctx, u, links.Account{ID: "shared", Username: "shared"}, linkstest.TokenFor("shared", i))
		})
	}
	for i := range accounts {
		wg.Go(func() {
			<-start
			a := fmt.Sprintf("a%02d", i)
			errs <- members[i%2].Link(ctx, "solo", links.Account{ID: a, Username: a}, linkstest.TokenFor(a, 0))
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	var want []string
	for i := range users {
		want = append(want, fmt.Sprintf("u%02d", i))
	}
	for m, s := range members {
		_, got, err := s.AccountUsers(ctx, "shared")
		if err != nil {
			t.Fatal(err)
		}
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Fatalf("member %d: users of the shared account %v, want %v", m, got, want)
		}
		u, err := s.User(ctx, "solo")
		if err != nil {
			t.Fatal(err)
		}
		if len(u.Accounts) != accounts || !slices.Contains(u.Accounts, u.Active) {
			t.Fatalf("member %d: solo links %v (active %q), want %d accounts", m, u.Accounts, u.Active, accounts)
		}
	}
	// One generation per Link: none lost to a race on the counter.
	v, _, _ := rawGet(t, members[0], record.GrantGenKey)
	if string(v) != fmt.Sprint(users+accounts) {
		t.Fatalf("grant counter at %s after %d links", v, users+accounts)
	}
}
