package etcdlinks

import (
	"context"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
	"github.com/pinbot/pinbot/bot/links/internal/record"
	"github.com/pinbot/pinbot/bot/links/linkstest"
)

// testImportAutopinRules: a server's auto-pin rules travel with pinbot
// cluster import beside its settings: exported under the server's
// prefix, counted with the servers, read back by AutopinRules.
func testImportAutopinRules(t *testing.T, c *etcdtestClients) {
	ctx := context.Background()
	src, err := badgerlinks.Open("", badgerlinks.Options{InMemory: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	rules := []links.AutopinRule{
		{Channel: "c1", Owner: "u1", Account: "a1", Board: "b1", BoardName: "Cats"},
		{Channel: "c2", Owner: "u2", Account: "a2", Board: "b2", Paused: true},
	}
	if err := src.UpdateAutopinRules(ctx, "g1", func([]links.AutopinRule) ([]links.AutopinRule, error) { return rules, nil }); err != nil {
		t.Fatal(err)
	}
	if err := src.SetPinEmoji(ctx, "g1", "🖼️"); err != nil {
		t.Fatal(err)
	}
	var recs []Record
	if err := src.Records(ctx, func(k string, v []byte) error {
		recs = append(recs, Record{Key: k, Value: v})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(recs, func(r Record) bool { return r.Key == record.AutopinKey("g1") }) {
		t.Fatalf("exported %v, want %s among them", recs, record.AutopinKey("g1"))
	}
	s := openStore(t, c.a, freshKeys(), Options{})
	check, count, err := s.Compare(ctx, recs, t0)
	if err != nil {
		t.Fatal(err)
	}
	if count.Guilds != 2 || len(check.Conflicts) != 0 {
		t.Fatalf("Compare: %+v, %+v; want 2 guild records, no conflict", check, count)
	}
	if _, _, err := s.Import(ctx, recs, 0, t0); err != nil {
		t.Fatal(err)
	}
	if got := linkstest.MustAutopinRules(t, s, "g1"); !slices.Equal(got, rules) {
		t.Fatalf("imported rules %+v, want %+v", got, rules)
	}
	if got := linkstest.MustGuild(t, s, "g1"); got.PinEmoji != "🖼️" {
		t.Fatalf("imported settings %+v", got)
	}
}
