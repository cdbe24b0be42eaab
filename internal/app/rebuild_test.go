package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// TestBuildRebuildsAfterRestore: after a restore's hold is stored, Build
// starts the rebuild: a linked account that Pinterest lists pins again,
// one whose grant was revoked stays held and is named on the dashboard.
// Without a hold there is no rebuild.
func TestBuildRebuildsAfterRestore(t *testing.T) {
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()
	ctx := context.Background()
	clk := actors.NewManualClock(time.Now().Truncate(time.Minute))
	ecfg := actors.DefaultConfig()
	ecfg.Clock = clk
	dir := t.TempDir()
	build := func() (*App, string) {
		t.Helper()
		cfg := testConfig(t, dc, ps, dir)
		cfg.Engine, cfg.NoReconcile = &ecfg, true
		cfg.AdminToken = []byte("admin-token-0123456789")
		a, err := Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a, cfg.Listener.Addr().String()
	}

	a, _ := build()
	if a.Rebuilder != nil {
		t.Fatal("a rebuild without a restore")
	}
	for _, acct := range []struct{ id, name string }{{"4242", "alice_art"}, {"4343", "bob_photos"}} {
		cred := ps.AddAccount(acct.id, acct.name, pinteresttest.Board{ID: "b1", Name: "Board"})
		if err := a.Links.Link(ctx, "u"+acct.id, links.Account{ID: acct.id, Username: acct.name}, cred.Token()); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// `pinbot reconcile`, or a restore: the hold.
	store, err := OpenStore(filepath.Join(dir, "engine"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := actors.AfterRestore(ctx, ecfg, store, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	ps.RevokeGrants("4343")
	clk.Advance(2 * time.Minute)

	b, addr := build()
	defer b.Close(ctx)
	if b.Rebuilder == nil {
		t.Fatal("no rebuild after a restore")
	}
	b.Rebuilder.Round(ctx)
	for _, tt := range []struct {
		id   string
		free int
	}{{"4242", actors.DefaultLimit}, {"4343", 0}} {
		if st, err := b.Engine.Status(ctx, tt.id); err != nil || st.Free() != tt.free {
			t.Errorf("%s after the rebuild: %+v, %v; want %d free", tt.id, st, err, tt.free)
		}
	}
	data := adminData(t, addr, "Bearer admin-token-0123456789")
	if len(data.Held) != 1 || data.Held[0].Account != "4343" || data.Held[0].Username != "bob_photos" ||
		!strings.Contains(data.Held[0].Reason, "refused") {
		t.Fatalf("the dashboard's held accounts: %+v", data.Held)
	}
}
