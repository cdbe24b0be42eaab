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

// MustGuild returns the stored settings of the server guildID.
func MustGuild(t *testing.T, s links.Store, guildID string) links.GuildSettings {
	t.Helper()
	g, err := s.GuildSettings(context.Background(), guildID)
	if err != nil {
		t.Fatalf("GuildSettings(%s): %v", guildID, err)
	}
	return g
}

// testGuildSettings: a server that chose nothing has the defaults; a pin
// emoji set is read back for that server alone, replaced by the next,
// and "" goes back to the default, as often as asked.
func testGuildSettings(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	if got, want := MustGuild(t, s, "g1"), (links.GuildSettings{ID: "g1"}); got != want {
		t.Fatalf("nothing set: %+v, want %+v", got, want)
	}
	steps := []struct {
		guild, emoji string
		want         map[string]string // guild → its pin emoji afterwards
	}{
		{"g1", "🖼️", map[string]string{"g1": "🖼️", "g2": ""}},
		{"g2", "pin:123456789012345678", map[string]string{"g1": "🖼️", "g2": "pin:123456789012345678"}},
		{"g1", "👩‍🎨", map[string]string{"g1": "👩‍🎨", "g2": "pin:123456789012345678"}},
		{"g1", "👩‍🎨", map[string]string{"g1": "👩‍🎨", "g2": "pin:123456789012345678"}},
		{"g1", "", map[string]string{"g1": "", "g2": "pin:123456789012345678"}},
		{"g1", "", map[string]string{"g1": "", "g2": "pin:123456789012345678"}},
		{"g3", "", map[string]string{"g1": "", "g2": "pin:123456789012345678", "g3": ""}},
	}
	for i, st := range steps {
		if err := s.SetPinEmoji(ctx, st.guild, st.emoji); err != nil {
			t.Fatalf("step %d: SetPinEmoji(%s, %q): %v", i, st.guild, st.emoji, err)
		}
		for g, e := range st.want {
			if got, want := MustGuild(t, s, g), (links.GuildSettings{ID: g, PinEmoji: e}); got != want {
				t.Errorf("step %d: GuildSettings(%s) = %+v, want %+v", i, g, got, want)
			}
		}
	}
}

// testGuildsOutliveLinks: a server's settings are the server's, not a
// user's: linking and unlinking accounts leaves them as they are.
func testGuildsOutliveLinks(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	if err := s.SetPinEmoji(ctx, "g1", "🖼️"); err != nil {
		t.Fatal(err)
	}
	Link(t, s, "u1", "a1")
	if err := s.Unlink(ctx, "u1", "a1"); err != nil {
		t.Fatal(err)
	}
	if got := MustGuild(t, s, "g1"); got.PinEmoji != "🖼️" {
		t.Fatalf("after link and unlink: %+v, want 🖼️", got)
	}
}

// testGuildsValidation: a malformed server id or emoji fails with
// ErrInvalid, naming the fault, and nothing is stored.
func testGuildsValidation(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	steps := []struct {
		name string
		call func() error
		want string
	}{
		{"read empty id", func() error { _, err := s.GuildSettings(ctx, ""); return err }, "guild id"},
		{"read id with a slash", func() error { _, err := s.GuildSettings(ctx, "g1/x"); return err }, "guild id"},
		{"set empty id", func() error { return s.SetPinEmoji(ctx, "", "🖼️") }, "guild id"},
		{"set long id", func() error { return s.SetPinEmoji(ctx, strings.Repeat("1", links.MaxIDLen+1), "🖼️") }, "guild id"},
		{"space", func() error { return s.SetPinEmoji(ctx, "g1", "🖼️ 📌") }, "pin emoji"},
		{"control", func() error { return s.SetPinEmoji(ctx, "g1", "📌\n") }, "pin emoji"},
		{"not UTF-8", func() error { return s.SetPinEmoji(ctx, "g1", "\xff") }, "pin emoji"},
		{"too long", func() error { return s.SetPinEmoji(ctx, "g1", strings.Repeat("📌", links.MaxEmojiLen/4+1)) }, "pin emoji"},
	}
	for _, st := range steps {
		if err := st.call(); !errors.Is(err, links.ErrInvalid) || !strings.Contains(err.Error(), st.want) {
			t.Errorf("%s: %v, want ErrInvalid naming %q", st.name, err, st.want)
		}
	}
	if got := MustGuild(t, s, "g1"); got.PinEmoji != "" {
		t.Errorf("a refused call stored %+v", got)
	}
	// The longest emoji allowed is stored.
	longest := strings.Repeat("📌", links.MaxEmojiLen/4)
	if err := s.SetPinEmoji(ctx, "g1", longest); err != nil {
		t.Fatalf("an emoji of MaxEmojiLen bytes: %v", err)
	}
	if got := MustGuild(t, s, "g1"); got.PinEmoji != longest {
		t.Errorf("read back %+v", got)
	}
}

// testGuildsConcurrent: servers set from many goroutines at once each
// keep their own emoji, and one server set by many ends with one of
// theirs.
func testGuildsConcurrent(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	const n = 20
	emojis := []string{"📌", "🖼️", "🎨"}
	var wg sync.WaitGroup
	errs := make([]error, 2*n)
	for i := range n {
		wg.Go(func() { errs[i] = s.SetPinEmoji(ctx, fmt.Sprintf("g%02d", i), emojis[i%len(emojis)]) })
		wg.Go(func() { errs[n+i] = s.SetPinEmoji(ctx, "shared", emojis[i%len(emojis)]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		g := fmt.Sprintf("g%02d", i)
		if got := MustGuild(t, s, g); got.PinEmoji != emojis[i%len(emojis)] {
			t.Errorf("%s: %+v, want %s", g, got, emojis[i%len(emojis)])
		}
	}
	if got := MustGuild(t, s, "shared"); !slices.Contains(emojis, got.PinEmoji) {
		t.Errorf("shared: %+v, want one of %v", got, emojis)
	}
}
