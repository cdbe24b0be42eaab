package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/backup"
	"github.com/pinbot/pinbot/internal/control"
)

// TestBuildServesBackups: with ControlSocket, the running program serves
// backups of both its stores there, the token store's encrypted with its
// key, and the listings of its accounts and their queues; Close removes
// the socket. A socket path that cannot be used leaves
// the program running without it.
func TestBuildServesBackups(t *testing.T) {
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()
	dir := t.TempDir()
	cfg := testConfig(t, dc, ps, dir)
	cfg.ControlSocket = filepath.Join(dir, "pinbot.sock")
	a, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := a.Engine.Reserve(ctx, "acct", 3); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := backup.Fetch(ctx, cfg.ControlSocket, &buf); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	info, err := backup.Verify(bytes.NewReader(buf.Bytes()), cfg.EncryptionKey)
	if err != nil || !info.Online || !info.Has(backup.Engine) || !info.Has(backup.Links) {
		t.Fatalf("Verify = %+v, %v", info, err)
	}
	// The listings, named from the token store.
	if err := a.Links.Link(ctx, "u1", links.Account{ID: "acct", Username: "acct_pins"}, &oauth2.Token{AccessToken: "at"}); err != nil {
		t.Fatal(err)
	}
	list, err := control.FetchAccounts(ctx, cfg.ControlSocket)
	if err != nil || len(list.Accounts) != 1 || list.Accounts[0].Username != "acct_pins" || list.Accounts[0].Used != 3 {
		t.Fatalf("FetchAccounts = %+v, %v", list, err)
	}
	if jobs, err := control.FetchJobs(ctx, cfg.ControlSocket, "@acct_pins"); err != nil || jobs.Account.ID != "acct" {
		t.Fatalf("FetchJobs = %+v, %v", jobs, err)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(cfg.ControlSocket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket stays after Close: %v", err)
	}
	if _, err := backup.Fetch(ctx, cfg.ControlSocket, &buf); !errors.Is(err, backup.ErrNotServing) {
		t.Errorf("Fetch after Close: %v, want ErrNotServing", err)
	}

	cfg = testConfig(t, dc, ps, dir)
	cfg.ControlSocket = filepath.Join(dir, strings.Repeat("x", 200), "pinbot.sock")
	b, err := Build(cfg)
	if err != nil {
		t.Fatalf("Build with an unusable socket path: %v", err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
