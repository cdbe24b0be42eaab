package app

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/internal/backup"
)

// TestStoresBackupRoundTrip: the stores OpenStore and OpenTokenStore
// open are those a backup copies, and BackupLoaders restores them into
// stores the same functions open again, with the pins and the links.
func TestStoresBackupRoundTrip(t *testing.T) {
	ctx := context.Background()
	key := bytes.Repeat([]byte{7}, 32)
	src := t.TempDir()
	store, err := OpenStore(filepath.Join(src, "engine"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	cfg := actors.DefaultConfig()
	cfg.Recover = false
	eng, err := actors.New(cfg, store, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	g, err := eng.Reserve(ctx, "acct", 2)
	if err != nil || g.Granted != 2 {
		t.Fatalf("Reserve: %+v, %v", g, err)
	}
	for _, r := range g.Reservations() {
		if _, err := eng.Commit(ctx, r, eng.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ls, err := OpenTokenStore(filepath.Join(src, "links"), key, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	tok := &oauth2.Token{AccessToken: "a", RefreshToken: "r", TokenType: "bearer"}
	if err := ls.Link(ctx, "100", links.Account{ID: "acct", Username: "alice"}, tok); err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	if _, err := backup.Take(&file, backup.Stores{Engine: store, Links: ls, Key: key}, false); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(ls.Close(), store.Close()); err != nil {
		t.Fatal(err)
	}

	dst := t.TempDir()
	res, err := backup.Restore(bytes.NewReader(file.Bytes()), backup.Target{
		EngineDir: filepath.Join(dst, "engine"), LinksDir: filepath.Join(dst, "links"),
		Key: key, Engine: cfg, Loaders: BackupLoaders(), Log: zerolog.Nop(),
	})
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if !res.Info.Has(backup.Engine) || !res.Info.Has(backup.Links) {
		t.Fatalf("restored %+v, want both stores", res.Info)
	}
	restored, err := OpenStore(filepath.Join(dst, "engine"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	var accounts []string
	if err := restored.Accounts(ctx, func(a string) error { accounts = append(accounts, a); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(accounts, []string{"acct"}) {
		t.Errorf("restored engine store holds accounts %q, want [acct]", accounts)
	}
	rls, err := OpenTokenStore(filepath.Join(dst, "links"), key, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer rls.Close()
	if acct, err := rls.Account(ctx, "acct"); err != nil || acct.Username != "alice" {
		t.Errorf("restored link: %+v, %v; want alice", acct, err)
	}
}

// TestOpenTokenStoreErrors: OpenTokenStore leaves the store's errors
// as they are, for the commands to word; Build's own opening wraps a
// held store with ErrDataDirInUse.
func TestOpenTokenStoreErrors(t *testing.T) {
	dir := t.TempDir()
	key := bytes.Repeat([]byte{7}, 32)
	ls, err := OpenTokenStore(dir, key, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	held, err := OpenTokenStore(dir, key, zerolog.Nop())
	if !errors.Is(err, links.ErrLocked) || errors.Is(err, ErrDataDirInUse) || held != nil {
		t.Errorf("second OpenTokenStore: %v, %v; want links.ErrLocked alone and no store", held, err)
	}
	if _, err := openLinks(dir, key, zerolog.Nop()); !errors.Is(err, ErrDataDirInUse) || !errors.Is(err, links.ErrLocked) {
		t.Errorf("openLinks on a held store: %v; want ErrDataDirInUse and links.ErrLocked", err)
	}
	if err := ls.Close(); err != nil {
		t.Fatal(err)
	}
	other := bytes.Repeat([]byte{8}, 32)
	if _, err := OpenTokenStore(dir, other, zerolog.Nop()); !errors.Is(err, links.ErrEncryptionKey) {
		t.Errorf("OpenTokenStore with another key: %v; want links.ErrEncryptionKey", err)
	}
}
