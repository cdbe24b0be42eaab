package linkstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/links"
)

// Observed is a pin made elsewhere on account: id, created at t0 plus
// created, remembered until t0 plus until.
func Observed(id string, created, until time.Duration) links.ObservedPin {
	return links.ObservedPin{ID: id, CreatedAt: t0.Add(created), Until: t0.Add(until)}
}

// mustUnobserved returns Unobserved's answer.
func mustUnobserved(t *testing.T, s links.Store, account string, ids ...string) []string {
	t.Helper()
	got, err := s.Unobserved(context.Background(), account, ids)
	if err != nil {
		t.Fatalf("Unobserved(%s, %v): %v", account, ids, err)
	}
	return got
}

// testObservedRemembers: pins marked are not returned again, per
// account; the others come back in the order given, each once.
func testObservedRemembers(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	if got := mustUnobserved(t, s, "a1", "p3", "p1", "p3", "p2"); !slices.Equal(got, []string{"p3", "p1", "p2"}) {
		t.Fatalf("nothing marked: Unobserved = %v, want p3 p1 p2", got)
	}
	if got := mustUnobserved(t, s, "a1"); len(got) != 0 {
		t.Fatalf("no ids: Unobserved = %v", got)
	}
	if err := s.MarkObserved(ctx, "a1", []links.ObservedPin{Observed("p1", 0, time.Hour), Observed("p2", 0, time.Hour)}, t0); err != nil {
		t.Fatal(err)
	}
	if got := mustUnobserved(t, s, "a1", "p3", "p1", "p2", "p4"); !slices.Equal(got, []string{"p3", "p4"}) {
		t.Fatalf("Unobserved = %v, want p3 p4", got)
	}
	// Another account's pins are its own.
	if got := mustUnobserved(t, s, "a2", "p1"); !slices.Equal(got, []string{"p1"}) {
		t.Fatalf("a2: Unobserved = %v, want p1", got)
	}
	// Marking more keeps the earlier ones.
	if err := s.MarkObserved(ctx, "a1", []links.ObservedPin{Observed("p3", time.Minute, time.Hour)}, t0); err != nil {
		t.Fatal(err)
	}
	if got := mustUnobserved(t, s, "a1", "p1", "p2", "p3", "p4"); !slices.Equal(got, []string{"p4"}) {
		t.Fatalf("Unobserved = %v, want p4", got)
	}
	// Nothing to mark changes nothing.
	if err := s.MarkObserved(ctx, "a1", nil, t0); err != nil {
		t.Fatal(err)
	}
	if got := mustUnobserved(t, s, "a1", "p1", "p4"); !slices.Equal(got, []string{"p4"}) {
		t.Fatalf("after an empty mark: Unobserved = %v, want p4", got)
	}
}

// testObservedExpires: a mark at now forgets the pins whose Until is at
// or before now, and keeps the later Until of a pin marked twice.
func testObservedExpires(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	pins := []links.ObservedPin{Observed("p1", 0, time.Hour), Observed("p2", 0, 2*time.Hour), Observed("p3", 0, 3*time.Hour)}
	if err := s.MarkObserved(ctx, "a1", pins, t0); err != nil {
		t.Fatal(err)
	}
	// p3 again with an earlier Until: it keeps 3 hours.
	if err := s.MarkObserved(ctx, "a1", []links.ObservedPin{Observed("p3", 0, time.Minute)}, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := mustUnobserved(t, s, "a1", "p1", "p2", "p3"); !slices.Equal(got, []string{"p1"}) {
		t.Fatalf("an hour on: Unobserved = %v, want p1 forgotten", got)
	}
	if err := s.MarkObserved(ctx, "a1", nil, t0.Add(2*time.Hour+time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := mustUnobserved(t, s, "a1", "p1", "p2", "p3"); !slices.Equal(got, []string{"p1", "p2"}) {
		t.Fatalf("two hours on: Unobserved = %v, want p1 p2 forgotten", got)
	}
	// A pin already expired when marked is not kept.
	if err := s.MarkObserved(ctx, "a1", []links.ObservedPin{Observed("p4", 0, time.Hour)}, t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := mustUnobserved(t, s, "a1", "p3", "p4"); !slices.Equal(got, []string{"p3", "p4"}) {
		t.Fatalf("three hours on: Unobserved = %v, want everything forgotten", got)
	}
}

// testObservedBound: beyond MaxObservedPerAccount, the pins with the
// earliest Until are forgotten.
func testObservedBound(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	const n = links.MaxObservedPerAccount + 2
	pins := make([]links.ObservedPin, n)
	ids := make([]string, n)
	for i := range pins {
		ids[i] = fmt.Sprintf("p%05d", i)
		pins[i] = Observed(ids[i], 0, time.Hour+time.Duration(i)*time.Second)
	}
	if err := s.MarkObserved(ctx, "a1", pins, t0); err != nil {
		t.Fatal(err)
	}
	if got := mustUnobserved(t, s, "a1", ids...); !slices.Equal(got, ids[:2]) {
		t.Fatalf("Unobserved = %v, want the 2 that expire first", got)
	}
}

// testObservedOutlivesLinks: the pins belong to the account, not to its
// links: unlinking it keeps them.
func testObservedOutlivesLinks(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	Link(t, s, "u1", "a1")
	if err := s.MarkObserved(ctx, "a1", []links.ObservedPin{Observed("p1", 0, time.Hour)}, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Unlink(ctx, "u1", "a1"); err != nil {
		t.Fatal(err)
	}
	if got := mustUnobserved(t, s, "a1", "p1"); len(got) != 0 {
		t.Fatalf("after unlink: Unobserved = %v, want p1 remembered", got)
	}
	Link(t, s, "u1", "a1")
	if got := mustUnobserved(t, s, "a1", "p1"); len(got) != 0 {
		t.Fatalf("after linking again: Unobserved = %v, want p1 remembered", got)
	}
}

// testObservedValidation: malformed ids and a pin without Until fail
// with ErrInvalid, naming the fault, and nothing is stored.
func testObservedValidation(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	steps := []struct {
		name string
		call func() error
		want string
	}{
		{"Unobserved account", func() error { _, err := s.Unobserved(ctx, "", []string{"p1"}); return err }, "account id"},
		{"Unobserved pin", func() error { _, err := s.Unobserved(ctx, "a1", []string{"p/1"}); return err }, "pin id"},
		{"MarkObserved account", func() error {
			return s.MarkObserved(ctx, "a b", []links.ObservedPin{Observed("p1", 0, time.Hour)}, t0)
		}, "account id"},
		{"MarkObserved pin", func() error {
			return s.MarkObserved(ctx, "a1", []links.ObservedPin{Observed("p1", 0, time.Hour), Observed("", 0, time.Hour)}, t0)
		}, "pin id"},
		{"MarkObserved until", func() error {
			return s.MarkObserved(ctx, "a1", []links.ObservedPin{{ID: "p1", CreatedAt: t0}}, t0)
		}, "Until"},
	}
	for _, st := range steps {
		if err := st.call(); !errors.Is(err, links.ErrInvalid) || !strings.Contains(err.Error(), st.want) {
			t.Errorf("%s: %v, want ErrInvalid naming %q", st.name, err, st.want)
		}
	}
	if got := mustUnobserved(t, s, "a1", "p1"); !slices.Equal(got, []string{"p1"}) {
		t.Errorf("a refused mark stored p1: Unobserved = %v", got)
	}
}

// testObservedConcurrent: marks of one account from many goroutines at
// once lose none.
func testObservedConcurrent(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	const n = 40
	var wg sync.WaitGroup
	errs := make([]error, n)
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("p%02d", i)
		wg.Go(func() {
			errs[i] = s.MarkObserved(ctx, "a1", []links.ObservedPin{Observed(ids[i], 0, time.Hour)}, t0)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := mustUnobserved(t, s, "a1", ids...); len(got) != 0 {
		t.Fatalf("lost marks: Unobserved = %v", got)
	}
}
