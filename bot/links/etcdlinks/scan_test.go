package etcdlinks

import (
	"context"
	"slices"
	"testing"

	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/linkstest"
)

// testScanOneSnapshot: scans read page after page at one revision: what
// their callback writes meanwhile (a user linked after the cursor, one
// unlinked before it is reached) is not seen, and every key is seen
// once, in order.
func testScanOneSnapshot(t *testing.T, c *etcdtestClients) {
	ctx := context.Background()
	s := openStore(t, c.a, freshKeys(), Options{})
	s.page = 2
	for _, u := range []string{"u1", "u2", "u3", "u4", "u5"} {
		linkstest.Link(t, s, u, "a"+u[1:])
	}

	var seen []string
	err := s.Users(ctx, func(u links.User) error {
		if len(seen) == 0 {
			linkstest.Link(t, s, "u9", "a9")
			if err := s.Unlink(ctx, "u5", "a5"); err != nil {
				return err
			}
		}
		seen = append(seen, u.ID+":"+u.Active)
		return nil
	})
	if want := []string{"u1:a1", "u2:a2", "u3:a3", "u4:a4", "u5:a5"}; err != nil || !slices.Equal(seen, want) {
		t.Fatalf("Users = %v, %v; want %v", seen, err, want)
	}

	seen = nil
	err = s.AllAccountUsers(ctx, func(a links.Account, users []string) error {
		if len(seen) == 0 {
			linkstest.Link(t, s, "u5", "a5")
			if err := s.Unlink(ctx, "u9", "a9"); err != nil {
				return err
			}
		}
		seen = append(seen, a.ID)
		return nil
	})
	if want := []string{"a1", "a2", "a3", "a4", "a9"}; err != nil || !slices.Equal(seen, want) {
		t.Fatalf("AllAccountUsers = %v, %v; want %v", seen, err, want)
	}
	seen = nil
	err = s.AllAccounts(ctx, func(a links.Account) error { seen = append(seen, a.ID); return nil })
	if want := []string{"a1", "a2", "a3", "a4", "a5"}; err != nil || !slices.Equal(seen, want) {
		t.Fatalf("AllAccounts = %v, %v; want %v", seen, err, want)
	}

	var want []digest.Line
	for _, job := range []uint64{3, 1, 2, 10, 4} {
		l := linkstest.Line("a1", job, "line")
		if _, err := s.Outbox().Put(ctx, l); err != nil {
			t.Fatal(err)
		}
		want = append(want, l)
	}
	slices.SortFunc(want, func(a, b digest.Line) int { return int(a.Key.Job) - int(b.Key.Job) })
	if got := linkstest.OutboxLines(t, s.Outbox()); !slices.Equal(got, want) {
		t.Fatalf("Lines = %+v, want %+v", got, want)
	}
}
