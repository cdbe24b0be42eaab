package app

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/discorduser"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/bot/web"
	"github.com/pinbot/pinbot/bot/web/webtest"
)

// testConfig is a Config over fresh directories, pointing at stand-ins.
func testConfig(t *testing.T, dc *discordtest.Server, ps *pinteresttest.Server, dir string) Config {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		EngineDir:     filepath.Join(dir, "engine"),
		LinksDir:      filepath.Join(dir, "links"),
		EncryptionKey: []byte("0123456789abcdef0123456789abcdef"),
		Pinterest: pinterest.Config{
			ClientID: ps.ClientID(), ClientSecret: ps.ClientSecret(),
			RedirectURL: "http://" + ln.Addr().String() + web.CallbackPath,
			APIBase:     ps.APIBase(), AuthURL: ps.AuthURL(),
		},
		Bot:      bot.Config{Token: dc.Token(), APIURL: dc.APIURL(), GatewayURL: dc.GatewayURL(), Shards: 1},
		Listener: ln,
		Log:      zerolog.Nop(),
	}
}

// TestBuildServesAndCloses: Build opens everything and serves the health
// check; Close releases every store, so they open again, and a second
// Close is a no-op.
func TestBuildServesAndCloses(t *testing.T) {
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()
	dir := t.TempDir()
	cfg := testConfig(t, dc, ps, dir)
	addr := cfg.Listener.Addr().String()
	a, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + web.HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", web.HealthPath, resp.StatusCode, body)
	}
	if st, err := a.Engine.Status(context.Background(), "acct"); err != nil || st.Limit != 100 {
		t.Fatalf("engine Status = %+v, %v", st, err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the HTTP listener still accepts after Close")
	}
	// Everything was released: the same directories build again.
	b, err := Build(testConfig(t, dc, ps, dir))
	if err != nil {
		t.Fatalf("Build after Close: %v", err)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestBuildFailures: each failure names its cause, and what Build had
// opened is closed again (the directories open at once afterwards).
func TestBuildFailures(t *testing.T) {
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()
	dir := t.TempDir()

	cfg := testConfig(t, dc, ps, dir)
	cfg.Pinterest.ClientID = ""
	if _, err := Build(cfg); !errors.Is(err, ErrPinterestConfig) {
		t.Errorf("Build without a Pinterest client ID: %v, want ErrPinterestConfig", err)
	}
	cfg = testConfig(t, dc, ps, dir)
	cfg.Bot.Token = "not a token"
	if _, err := Build(cfg); !errors.Is(err, ErrBotConfig) {
		t.Errorf("Build with a malformed token: %v, want ErrBotConfig", err)
	}
	cfg = testConfig(t, dc, ps, dir)
	cfg.EncryptionKey = []byte("fedcba9876543210fedcba9876543210")
	if _, err := Build(cfg); !errors.Is(err, links.ErrEncryptionKey) {
		t.Errorf("Build with another key: %v, want links.ErrEncryptionKey", err)
	}

	// A running program holds both stores.
	a, err := Build(testConfig(t, dc, ps, dir))
	if err != nil {
		t.Fatalf("Build after the failures: %v (a failed Build left a store open?)", err)
	}
	defer a.Close(context.Background())
	cfg = testConfig(t, dc, ps, dir)
	if _, err := Build(cfg); !errors.Is(err, ErrDataDirInUse) || !strings.Contains(err.Error(), "engine") {
		t.Errorf("Build over a directory in use: %v, want ErrDataDirInUse naming the engine store", err)
	}
	cfg = testConfig(t, dc, ps, t.TempDir())
	cfg.LinksDir = filepath.Join(dir, "links")
	if _, err := Build(cfg); !errors.Is(err, ErrDataDirInUse) || !errors.Is(err, links.ErrLocked) {
		t.Errorf("Build over a token store in use: %v, want ErrDataDirInUse and links.ErrLocked", err)
	}
	if _, err := Build(Config{}); err == nil {
		t.Error("Build without a listener succeeded")
	}
}

// linkStandIns starts the Discord and Pinterest stand-ins of a link: a
// guild member ann, who will run /link, and the Pinterest account alice
// (1001). They close when the test ends.
func linkStandIns(t *testing.T) (*discordtest.Server, *pinteresttest.Server, discordtest.Member) {
	t.Helper()
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	t.Cleanup(dc.Close)
	t.Cleanup(ps.Close)
	g, err := dc.AddGuild(discordtest.Guild{})
	if err != nil {
		t.Fatal(err)
	}
	ann, err := dc.AddMember(discordtest.Member{GuildID: g.ID, Username: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	ps.AddAccount("1001", "alice")
	return dc, ps, ann
}

// TestBuildLinksWithSignIn: with a Discord client secret, Build wires the
// sign-in with Discord, with its redirect next to Pinterest's: a link is
// stored once the browser signed in as the user who ran /link and
// confirmed, and not before.
func TestBuildLinksWithSignIn(t *testing.T) {
	ctx := context.Background()
	dc, ps, ann := linkStandIns(t)
	cfg := testConfig(t, dc, ps, t.TempDir())
	public := strings.TrimSuffix(cfg.Pinterest.RedirectURL, web.CallbackPath)
	dc.AddOAuth2Redirect(public + web.DiscordCallbackPath)
	cfg.Discord = discorduser.Config{ClientSecret: dc.OAuth2ClientSecret(), AuthorizeURL: dc.OAuth2AuthorizeURL()}
	cfg.AvatarSources = []string{}
	a, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)

	state, err := a.Links.NewState(ctx, ann.UserID.String(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b := webtest.NewBrowser(nil)
	p, err := b.Get(ctx, a.Pinterest.AuthCodeURL(state))
	if err != nil || p.Title != "Confirm the link" || p.CanConfirm || !strings.HasPrefix(p.SignInURL, dc.OAuth2AuthorizeURL()) {
		t.Fatalf("callback: %v %d %q, sign-in %q", err, p.Status, p.Message, p.SignInURL)
	}
	if err := dc.SetOAuth2User(ann.UserID); err != nil {
		t.Fatal(err)
	}
	if p, err = b.Get(ctx, p.SignInURL); err != nil || !p.CanConfirm {
		t.Fatalf("after signing in: %v %d %q", err, p.Status, p.Message)
	}
	if _, err := a.Links.Token(ctx, "1001"); !errors.Is(err, links.ErrNoToken) {
		t.Fatalf("Token before the confirmation: %v, want ErrNoToken", err)
	}
	if p, err = b.Submit(ctx, p, webtest.Confirm); err != nil || p.Title != "Linked" {
		t.Fatalf("confirm: %v %d %q", err, p.Status, p.Message)
	}
	if _, err := a.Links.Token(ctx, "1001"); err != nil {
		t.Errorf("Token after the confirmation: %v", err)
	}
}
