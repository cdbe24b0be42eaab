package etcdlinks

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/links/badgerlinks"
	"github.com/pinbot/pinbot/bot/links/internal/record"
	"github.com/pinbot/pinbot/bot/links/linkstest"
)

// testImportGuilds: the servers' settings a single process kept travel
// with pinbot cluster import (badgerlinks' Records, then Compare and
// Import here): counted, sealed in etcd, read back by GuildSettings; a
// server reset to the defaults leaves nothing to carry; a server whose
// settings etcd holds otherwise is a conflict.
func testImportGuilds(t *testing.T, c *etcdtestClients) {
	ctx := context.Background()
	src, err := badgerlinks.Open("", badgerlinks.Options{InMemory: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	linkstest.Link(t, src, "u1", "a1")
	for g, e := range map[string]string{"g1": "🖼️", "g2": "pin:123456789012345678", "g3": "🎨"} {
		if err := src.SetPinEmoji(ctx, g, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.SetPinEmoji(ctx, "g3", ""); err != nil {
		t.Fatal(err)
	}
	var recs []Record
	if err := src.Records(ctx, func(k string, v []byte) error {
		recs = append(recs, Record{Key: k, Value: v})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range recs {
		keys = append(keys, r.Key)
	}
	for _, want := range []string{record.GuildKey("g1"), record.GuildKey("g2")} {
		if !slices.Contains(keys, want) {
			t.Fatalf("exported %v, want %s among them", keys, want)
		}
	}
	if slices.Contains(keys, record.GuildKey("g3")) {
		t.Fatalf("exported %v: g3, reset to the defaults, has no record", keys)
	}

	s := openStore(t, c.a, freshKeys(), Options{})
	check, count, err := s.Compare(ctx, recs, t0)
	if err != nil {
		t.Fatal(err)
	}
	if count.Guilds != 2 || len(check.Conflicts) != 0 {
		t.Fatalf("Compare: %+v, %+v; want 2 guilds, no conflict", check, count)
	}
	if _, _, err := s.Import(ctx, recs, 0, t0); err != nil {
		t.Fatal(err)
	}
	for g, e := range map[string]string{"g1": "🖼️", "g2": "pin:123456789012345678", "g3": ""} {
		if got := linkstest.MustGuild(t, s, g); got.PinEmoji != e {
			t.Errorf("imported %s: %+v, want %q", g, got, e)
		}
	}
	if v, _, _ := rawGet(t, s, record.GuildKey("g1")); bytes.Contains(v, []byte("🖼️")) || bytes.Contains(v, []byte("pin_emoji")) {
		t.Errorf("g1's record is in the clear: %q", v)
	}
	check, _, err = s.Compare(ctx, recs, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(check.Conflicts) != 0 || check.Present < 2 {
		t.Fatalf("Compare after the import: %+v, want everything present", check)
	}

	// etcd holds g1 otherwise: the import would lose it.
	if err := s.SetPinEmoji(ctx, "g1", "📌"); err != nil {
		t.Fatal(err)
	}
	check, _, err = s.Compare(ctx, recs, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(check.Conflicts, []string{"guild g1"}) {
		t.Fatalf("Conflicts = %v, want guild g1", check.Conflicts)
	}
}
