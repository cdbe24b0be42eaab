package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/web/webtest"
)

// TestBuildTellsWhoRanLink: Build wires the OAuth callback's news to the
// bot: a link confirmed after its /link reply's token expired reaches
// the user who ran /link by DM, naming the account.
func TestBuildTellsWhoRanLink(t *testing.T) {
	ctx := context.Background()
	dc, ps, ann := linkStandIns(t)
	cfg := testConfig(t, dc, ps, t.TempDir())
	cfg.AvatarSources = []string{}
	a, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)

	now := time.Now()
	req := links.Request{User: ann.UserID.String(), Interaction: "expired-interaction-token", At: now.Add(-20 * time.Minute)}
	state, err := a.Links.NewLinkState(ctx, req, now)
	if err != nil {
		t.Fatal(err)
	}
	b := webtest.NewBrowser(nil)
	p, err := b.Get(ctx, a.Pinterest.AuthCodeURL(state))
	if err != nil || p.Title != "Confirm the link" {
		t.Fatalf("callback: %v %d %q", err, p.Status, p.Message)
	}
	if p, err = b.Submit(ctx, p, webtest.Confirm); err != nil || p.Title != "Linked" {
		t.Fatalf("confirm: %v %d %q", err, p.Status, p.Message)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	dms, err := dc.WaitDMs(wctx, ann.UserID, 1)
	if err != nil {
		t.Fatalf("no DM: %v", err)
	}
	if !strings.HasPrefix(dms[0].Content, "Linked Pinterest account @alice to your Discord account") {
		t.Errorf("DM %q", dms[0].Content)
	}
}
