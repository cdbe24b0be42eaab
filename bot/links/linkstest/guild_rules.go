package linkstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pinbot/pinbot/bot/links"
)

// MustAutopinRules returns the stored auto-pin rules of the server guildID.
func MustAutopinRules(t *testing.T, s links.Store, guildID string) []links.AutopinRule {
	t.Helper()
	rules, err := s.AutopinRules(context.Background(), guildID)
	if err != nil {
		t.Fatalf("AutopinRules(%s): %v", guildID, err)
	}
	return rules
}

func autopinRule(channel string) links.AutopinRule {
	return links.AutopinRule{Channel: channel, Owner: "u1", Account: "a1", Board: "b1", BoardName: "Cats 🐈"}
}

// testAutopinRules: a server with no rule reads nil; rules added are read
// back in order for that server alone, changed, removed, and the last
// one removed leaves nothing; an error of fn changes nothing and comes
// back as is; the settings beside them are untouched.
func testAutopinRules(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	if got := MustAutopinRules(t, s, "g1"); got != nil {
		t.Fatalf("no rule: %+v, want nil", got)
	}
	if err := s.SetPinEmoji(ctx, "g1", "🖼️"); err != nil {
		t.Fatal(err)
	}
	set := func(guild string, fn func([]links.AutopinRule) []links.AutopinRule) {
		t.Helper()
		if err := s.UpdateAutopinRules(ctx, guild, func(rs []links.AutopinRule) ([]links.AutopinRule, error) { return fn(rs), nil }); err != nil {
			t.Fatalf("UpdateAutopinRules(%s): %v", guild, err)
		}
	}
	c1, c2 := autopinRule("c1"), autopinRule("c2")
	c2.Owner, c2.Account, c2.Board, c2.BoardName = "u2", "a2", "b2", ""
	set("g1", func(rs []links.AutopinRule) []links.AutopinRule { return append(rs, c1) })
	set("g1", func(rs []links.AutopinRule) []links.AutopinRule { return append(rs, c2) })
	set("g2", func(rs []links.AutopinRule) []links.AutopinRule { return append(rs, c2) })
	if got, want := MustAutopinRules(t, s, "g1"), []links.AutopinRule{c1, c2}; !slices.Equal(got, want) {
		t.Fatalf("g1: %+v, want %+v", got, want)
	}
	// Paused, then resumed.
	set("g1", func(rs []links.AutopinRule) []links.AutopinRule { rs[0].Paused = true; return rs })
	paused := c1
	paused.Paused = true
	if got, want := MustAutopinRules(t, s, "g1"), []links.AutopinRule{paused, c2}; !slices.Equal(got, want) {
		t.Fatalf("g1 paused: %+v, want %+v", got, want)
	}
	// An error of fn leaves the rules and comes back as is.
	boom := errors.New("boom")
	if err := s.UpdateAutopinRules(ctx, "g1", func([]links.AutopinRule) ([]links.AutopinRule, error) { return nil, boom }); err != boom {
		t.Fatalf("fn's error: %v, want it as is", err)
	}
	set("g1", func(rs []links.AutopinRule) []links.AutopinRule { return rs[1:] })
	if got, want := MustAutopinRules(t, s, "g1"), []links.AutopinRule{c2}; !slices.Equal(got, want) {
		t.Fatalf("g1 after a removal: %+v, want %+v", got, want)
	}
	set("g1", func([]links.AutopinRule) []links.AutopinRule { return nil })
	set("g1", func([]links.AutopinRule) []links.AutopinRule { return nil })
	if got := MustAutopinRules(t, s, "g1"); got != nil {
		t.Fatalf("g1 after the last removal: %+v, want nil", got)
	}
	if got, want := MustAutopinRules(t, s, "g2"), []links.AutopinRule{c2}; !slices.Equal(got, want) {
		t.Fatalf("g2: %+v, want %+v", got, want)
	}
	if got := MustGuild(t, s, "g1"); got.PinEmoji != "🖼️" {
		t.Fatalf("the settings beside the rules: %+v", got)
	}
	// Settings back to their defaults leave the rules.
	if err := s.SetPinEmoji(ctx, "g2", ""); err != nil {
		t.Fatal(err)
	}
	if got := MustAutopinRules(t, s, "g2"); len(got) != 1 {
		t.Fatalf("g2 after its settings were reset: %+v", got)
	}
}

// testAutopinRulesValidation: malformed ids, two rules of one channel and
// more than MaxAutopinRules fail with ErrInvalid, naming the fault, and
// nothing is stored; exactly MaxAutopinRules are stored.
func testAutopinRulesValidation(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	with := func(rules ...links.AutopinRule) func() error {
		return func() error {
			return s.UpdateAutopinRules(ctx, "g1", func([]links.AutopinRule) ([]links.AutopinRule, error) { return rules, nil })
		}
	}
	bad := func(f func(*links.AutopinRule)) links.AutopinRule { r := autopinRule("c1"); f(&r); return r }
	var many []links.AutopinRule
	for i := range links.MaxAutopinRules + 1 {
		many = append(many, autopinRule(fmt.Sprintf("c%d", i)))
	}
	steps := []struct {
		name string
		call func() error
		want string
	}{
		{"read empty guild", func() error { _, err := s.AutopinRules(ctx, ""); return err }, "guild id"},
		{"update guild with a slash", func() error {
			return s.UpdateAutopinRules(ctx, "g1/x", func(rs []links.AutopinRule) ([]links.AutopinRule, error) { return rs, nil })
		}, "guild id"},
		{"empty channel", with(bad(func(r *links.AutopinRule) { r.Channel = "" })), "channel id"},
		{"owner with a slash", with(bad(func(r *links.AutopinRule) { r.Owner = "u/1" })), "user id"},
		{"empty account", with(bad(func(r *links.AutopinRule) { r.Account = "" })), "account id"},
		{"empty board", with(bad(func(r *links.AutopinRule) { r.Board = "" })), "board id"},
		{"board name not UTF-8", with(bad(func(r *links.AutopinRule) { r.BoardName = "\xff" })), "board name"},
		{"board name too long", with(bad(func(r *links.AutopinRule) { r.BoardName = strings.Repeat("x", links.MaxBoardNameLen+1) })), "board name"},
		{"one channel twice", with(autopinRule("c1"), autopinRule("c1")), "two auto-pin rules"},
		{"too many", with(many...), "auto-pin rules"},
	}
	for _, st := range steps {
		if err := st.call(); !errors.Is(err, links.ErrInvalid) || !strings.Contains(err.Error(), st.want) {
			t.Errorf("%s: %v, want ErrInvalid naming %q", st.name, err, st.want)
		}
	}
	if got := MustAutopinRules(t, s, "g1"); got != nil {
		t.Fatalf("a refused call stored %+v", got)
	}
	if err := with(many[:links.MaxAutopinRules]...)(); err != nil {
		t.Fatalf("MaxAutopinRules rules: %v", err)
	}
	if got := MustAutopinRules(t, s, "g1"); len(got) != links.MaxAutopinRules {
		t.Fatalf("read back %d rules, want %d", len(got), links.MaxAutopinRules)
	}
}

// testAutopinRulesConcurrent: rules added to one server from many
// goroutines at once are all kept: each update sees the others'.
func testAutopinRulesConcurrent(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = s.UpdateAutopinRules(ctx, "g1", func(rs []links.AutopinRule) ([]links.AutopinRule, error) {
				return append(rs, autopinRule(fmt.Sprintf("c%02d", i))), nil
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	got := MustAutopinRules(t, s, "g1")
	var chans []string
	for _, r := range got {
		chans = append(chans, r.Channel)
	}
	slices.Sort(chans)
	for i := range n {
		if c := fmt.Sprintf("c%02d", i); !slices.Contains(chans, c) {
			t.Errorf("rule of %s lost; have %v", c, chans)
		}
	}
}
