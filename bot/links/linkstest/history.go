package linkstest

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/links"
)

// mustPinnedBefore returns PinnedBefore's answer at now.
func mustPinnedBefore(t *testing.T, s links.Store, account, board string, now time.Time, keys ...string) map[string]string {
	t.Helper()
	got, err := s.PinnedBefore(context.Background(), account, board, keys, now)
	if err != nil {
		t.Fatalf("PinnedBefore(%s, %s, %v): %v", account, board, keys, err)
	}
	return got
}

// testHistoryRemembers: a picture remembered for a board is found there,
// with its pin's address, and nowhere else; a later Remember replaces it;
// one call remembers several.
func testHistoryRemembers(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	if got := mustPinnedBefore(t, s, "a1", "b1", t0, "k1", "k2"); len(got) != 0 {
		t.Fatalf("nothing remembered: %v", got)
	}
	if err := s.RememberPinned(ctx, "a1", "b1", []links.PinnedPicture{{Key: "k1", PinURL: "https://pin/1", Until: t0.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if got := mustPinnedBefore(t, s, "a1", "b1", t0, "k1", "k2"); !maps.Equal(got, map[string]string{"k1": "https://pin/1"}) {
		t.Fatalf("PinnedBefore = %v, want k1", got)
	}
	for _, other := range [][2]string{{"a1", "b2"}, {"a2", "b1"}} {
		if got := mustPinnedBefore(t, s, other[0], other[1], t0, "k1"); len(got) != 0 {
			t.Fatalf("%v: PinnedBefore = %v, want nothing (another board or account)", other, got)
		}
	}
	if err := s.RememberPinned(ctx, "a1", "b1", []links.PinnedPicture{{Key: "k1", PinURL: "https://pin/2", Until: t0.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if got := mustPinnedBefore(t, s, "a1", "b1", t0, "k1"); got["k1"] != "https://pin/2" {
		t.Fatalf("after a second Remember: %v, want pin/2", got)
	}
	if err := s.RememberPinned(ctx, "a1", "b1", []links.PinnedPicture{
		{Key: "k2", PinURL: "https://pin/3", Until: t0.Add(time.Hour)}, {Key: "k3", PinURL: "https://pin/4", Until: t0.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"k1": "https://pin/2", "k2": "https://pin/3", "k3": "https://pin/4"}
	if got := mustPinnedBefore(t, s, "a1", "b1", t0, "k1", "k2", "k3"); !maps.Equal(got, want) {
		t.Fatalf("after remembering two more: %v, want %v", got, want)
	}
}

// testHistoryForgets: a picture is forgotten from its until on.
func testHistoryForgets(t *testing.T, open func(*testing.T) links.Store) {
	s := open(t)
	until := t0.Add(time.Hour)
	if err := s.RememberPinned(context.Background(), "a1", "b1", []links.PinnedPicture{{Key: "k1", PinURL: "https://pin/1", Until: until}}); err != nil {
		t.Fatal(err)
	}
	if got := mustPinnedBefore(t, s, "a1", "b1", until.Add(-time.Millisecond), "k1"); len(got) != 1 {
		t.Fatalf("just before until: %v, want k1", got)
	}
	if got := mustPinnedBefore(t, s, "a1", "b1", until, "k1"); len(got) != 0 {
		t.Fatalf("at until: %v, want nothing", got)
	}
}

// testHistoryValidation: malformed ids, an empty address or a zero until
// fail with ErrInvalid and store nothing.
func testHistoryValidation(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	for name, err := range map[string]error{
		"account": s.RememberPinned(ctx, "", "b1", []links.PinnedPicture{{Key: "k1", PinURL: "https://pin/1", Until: t0.Add(time.Hour)}}),
		"board":   s.RememberPinned(ctx, "a1", "b/1", []links.PinnedPicture{{Key: "k1", PinURL: "https://pin/1", Until: t0.Add(time.Hour)}}),
		"key":     s.RememberPinned(ctx, "a1", "b1", []links.PinnedPicture{{Key: "k 1", PinURL: "https://pin/1", Until: t0.Add(time.Hour)}}),
		"address": s.RememberPinned(ctx, "a1", "b1", []links.PinnedPicture{{Key: "k1", PinURL: " ", Until: t0.Add(time.Hour)}}),
		"until":   s.RememberPinned(ctx, "a1", "b1", []links.PinnedPicture{{Key: "k1", PinURL: "https://pin/1", Until: time.Time{}}}),
		"one of two": s.RememberPinned(ctx, "a1", "b1", []links.PinnedPicture{
			{Key: "k2", PinURL: "https://pin/2", Until: t0.Add(time.Hour)}, {Key: "k3", Until: t0.Add(time.Hour)}}),
		"read keys": func() error { _, err := s.PinnedBefore(ctx, "a1", "b1", []string{"k/1"}, t0); return err }(),
	} {
		if !errors.Is(err, links.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if got := mustPinnedBefore(t, s, "a1", "b1", t0, "k1", "k2", "k3"); len(got) != 0 {
		t.Fatalf("refused calls stored %v", got)
	}
}
