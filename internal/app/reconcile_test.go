package app

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/dashboard"
	"github.com/pinbot/pinbot/internal/metrics/metricstest"
	"github.com/pinbot/pinbot/internal/reconcile"
)

// TestBuildReconciles: Build starts the reconciler over the engine, the
// token store and the Pinterest client: with CountAllPins, a round
// counts the pins an account made elsewhere; the metrics and the
// dashboard show what it found. With NoReconcile there is none, and the
// dashboard has no drift.
func TestBuildReconciles(t *testing.T) {
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()
	ctx := context.Background()
	cred := ps.AddAccount("4242", "alice_art", pinteresttest.Board{ID: "b1", Name: "Board"})

	cfg := testConfig(t, dc, ps, t.TempDir())
	cfg.CountAllPins = true
	cfg.AdminToken = []byte("admin-token-0123456789")
	addr := cfg.Listener.Addr().String()
	a, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	if a.Reconciler == nil || a.Reconciler.Every() != reconcile.DefaultEvery {
		t.Fatalf("reconciler %+v", a.Reconciler)
	}
	if err := a.Links.Link(ctx, "801", links.Account{ID: "4242", Username: "alice_art"}, cred.Token()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Engine.Reserve(ctx, "4242", 1); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		ps.CreateDirect(pinteresttest.Pin{AccountID: "4242", BoardID: "b1"})
	}
	if rep := a.Reconciler.Round(ctx); rep.End != reconcile.EndComplete || rep.Observed != 3 {
		t.Fatalf("round %+v", rep)
	}
	if st, err := a.Engine.Status(ctx, "4242"); err != nil || st.Used != 4 {
		t.Fatalf("status %+v, %v; want the reservation and the 3 pins made elsewhere", st, err)
	}
	m := metricstest.Scrape(t, "http://"+addr+"/metrics")
	if got := m.Get("pinbot_reconcile_observed_pins_total"); got != 3 {
		t.Errorf("pinbot_reconcile_observed_pins_total = %v, want 3", got)
	}
	if got := m.Get("pinbot_reconcile_accounts_total", "result", "reconciled"); got != 1 {
		t.Errorf("reconciled accounts = %v, want 1", got)
	}
	if got := m.Get("pinbot_reconcile_drift_accounts", "sign", "positive"); got != 0 {
		t.Errorf("accounts with a positive drift = %v, want 0", got)
	}
	data := adminData(t, addr, "Bearer admin-token-0123456789")
	if !data.Reconciled || len(data.Busiest) != 1 || data.Busiest[0].Drift == nil ||
		data.Busiest[0].Drift.Pinterest != 3 || data.Busiest[0].Drift.Elsewhere != 3 || !data.Busiest[0].Drift.CountAll {
		t.Fatalf("dashboard: reconciled %v, busiest %+v", data.Reconciled, data.Busiest)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}

	cfg = testConfig(t, dc, ps, t.TempDir())
	cfg.NoReconcile = true
	cfg.AdminToken = []byte("admin-token-0123456789")
	addr = cfg.Listener.Addr().String()
	b, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if b.Reconciler != nil {
		t.Fatal("a reconciler with NoReconcile")
	}
	if data := adminData(t, addr, "Bearer admin-token-0123456789"); data.Reconciled {
		t.Fatal("the dashboard shows drifts without a reconciler")
	}
}

// adminData reads the dashboard's data.
func adminData(t *testing.T, addr, auth string) dashboard.Data {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/admin/data.json", nil)
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var data dashboard.Data
	if err := json.NewDecoder(resp.Body).Decode(&data); err != nil {
		t.Fatal(err)
	}
	return data
}
