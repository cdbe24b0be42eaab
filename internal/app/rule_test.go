package app

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/persistence/badgerstore"
)

// TestBuildEngineRule: the engine runs under Config.Engine's limit and
// window and stores them; the next Build under the defaults keeps the
// earlier rule in force.
func TestBuildEngineRule(t *testing.T) {
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()
	dir := t.TempDir()
	cfg := testConfig(t, dc, ps, dir)
	ecfg := actors.DefaultConfig()
	ecfg.Limit, ecfg.Window = 3, 20*time.Second
	cfg.Engine = &ecfg
	a, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Engine.Config(); got.Limit != 3 || got.Window != 20*time.Second {
		t.Errorf("engine runs under %d/%v, want 3/20s", got.Limit, got.Window)
	}
	if st, err := a.Engine.Status(context.Background(), "acct"); err != nil || st.Limit != 3 {
		t.Errorf("Status = %+v, %v; want a limit of 3", st, err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	b, err := Build(testConfig(t, dc, ps, dir))
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Engine.Config(); got.Limit != actors.DefaultLimit || got.Window != actors.DefaultWindow {
		t.Errorf("engine runs under %d/%v, want the defaults", got.Limit, got.Window)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err := badgerstore.Open(cfg.EngineDir, badgerstore.Options{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Rules(t.Context())
	if err != nil || r.Current.Limit != actors.DefaultLimit || len(r.Earlier) != 1 || r.Earlier[0].Limit != 3 || r.Earlier[0].Window != 20_000 {
		t.Errorf("stored rules %+v, %v; want the defaults, with 3 per 20s still in force", r, err)
	}
}
