package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/discorduser"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/bot/web"
	"github.com/pinbot/pinbot/internal/app"
)

// Timeouts of the sandbox.
const (
	// closeTimeout bounds closing what a failed Start had opened.
	closeTimeout = 30 * time.Second
	// botCloseTimeout is how long closing the bot waits for handlers.
	botCloseTimeout = 10 * time.Second
	// httpTimeout bounds one request of the OAuth flow.
	httpTimeout = 30 * time.Second
)

// Config configures Start. EngineDir, LinksDir and KeyFile are required.
type Config struct {
	// EngineDir is the directory of the engine's Badger store, created if
	// needed.
	EngineDir string
	// LinksDir is the directory of the token store (package bot/links),
	// created if needed and encrypted with the key in KeyFile.
	LinksDir string
	// KeyFile holds the token store's key. Start creates it, with 32
	// random bytes and mode 0600, when it does not exist.
	KeyFile string
	// Engine configures the rate-limit engine; nil means
	// actors.DefaultConfig().
	Engine *actors.Config
	// AdminTokenFile, when not empty, holds the operator dashboard's
	// token: the sandbox serves the dashboard at /admin on its listener
	// (app.Config.AdminToken). Start creates the file, with 64 random
	// hexadecimal digits and mode 0600, when it does not exist.
	AdminTokenFile string
	// ControlSocket, when not empty, is where the sandbox serves online
	// backups of its stores (app.Config.ControlSocket).
	ControlSocket string
	// Listener, when not nil, is where the bot's HTTP listener (the OAuth
	// callback, the health checks, the metrics and the dashboard) is
	// served; Start takes it over. Without it, Start listens on a free
	// loopback port.
	Listener net.Listener
	// Log receives what the bot, the stores, the stand-ins and the OAuth
	// callback log; the console never writes log lines.
	Log zerolog.Logger

	// digest configures the bot's digests (bot.Config.Digest); tests
	// shorten their gathering so that a result's DM comes at once.
	digest digest.Config
}

// Validate reports the first problem with c, naming the field.
func (c Config) Validate() error {
	switch {
	case c.EngineDir == "":
		return errors.New("sandbox: Config.EngineDir is empty")
	case c.LinksDir == "":
		return errors.New("sandbox: Config.LinksDir is empty")
	case c.KeyFile == "":
		return errors.New("sandbox: Config.KeyFile is empty")
	}
	return nil
}

// Sandbox is a running bot between the two stand-ins, with the demo world
// in them. Create it with Start and stop it with Close. Its methods are
// safe for simultaneous use by multiple goroutines, but a Console is not.
type Sandbox struct {
	log zerolog.Logger

	discord   *discordtest.Server
	pinterest *pinteresttest.Server
	images    *imageServer
	engine    *actors.Engine
	links     links.Store
	client    *pinterest.Client
	webURL    string
	http      *http.Client
	// adminTokenFile is Config.AdminTokenFile.
	adminTokenFile string

	// approveMu serializes the OAuth approvals: the Pinterest stand-in
	// has one signed-in account at a time.
	approveMu sync.Mutex

	// postsMu guards posted, the messages the console posted in this
	// run, oldest first (see post).
	postsMu sync.Mutex
	posted  []snowflake.ID

	// closers close what Start opened, run in reverse order by Close.
	closers   []func(context.Context) error
	closeOnce sync.Once
	closeErr  error
}

// Start starts the stand-ins with the demo world, then builds the program
// over them (package internal/app: the stores, the engine, the OAuth
// callback on a loopback port, the bot), links the demo accounts through
// OAuth (see the package documentation), then lets the queued pins run
// and returns once the bot's gateway is ready. On failure it closes what
// it had opened.
//
// A store directory another process holds fails with an error wrapping
// app.ErrDataDirInUse. A token store written with another key fails with
// an error wrapping links.ErrEncryptionKey.
func Start(ctx context.Context, cfg Config) (_ *Sandbox, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sandbox{
		log:  cfg.Log.With().Str("component", "sandbox").Logger(),
		http: &http.Client{Timeout: httpTimeout},
	}
	defer func() {
		if err == nil {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		if cerr := s.Close(cctx); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()

	if cfg.Listener != nil {
		// Start owns the listener from now on: a failed Start closes it
		// too, and closing it again after the program did is harmless.
		s.push(func(context.Context) error { _ = cfg.Listener.Close(); return nil })
	}
	s.pinterest = pinteresttest.NewServer()
	s.push(func(context.Context) error { s.pinterest.Close(); return nil })
	for _, a := range accounts {
		s.pinterest.AddAccount(a.ID, a.Username, a.Boards...)
	}

	if s.images, err = startImageServer(); err != nil {
		return nil, err
	}
	s.push(s.images.close)

	s.discord = discordtest.NewServer(discordtest.WithLogger(cfg.Log))
	s.push(func(context.Context) error { s.discord.Close(); return nil })
	if err := s.seedDiscord(); err != nil {
		return nil, err
	}

	key, err := loadOrCreateKey(cfg.KeyFile)
	if err != nil {
		return nil, err
	}
	var adminToken []byte
	if cfg.AdminTokenFile != "" {
		if adminToken, err = loadOrCreateAdminToken(cfg.AdminTokenFile); err != nil {
			return nil, err
		}
		s.adminTokenFile = cfg.AdminTokenFile
	}
	// The OAuth callback listens on the listener given, else on a free
	// loopback port; the Pinterest client's redirect address names it.
	ln := cfg.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("sandbox: OAuth callback listener: %w", err)
		}
	}
	s.webURL = "http://" + dialAddr(ln.Addr())
	s.discord.AddOAuth2Redirect(s.webURL + web.DiscordCallbackPath)
	a, err := app.Build(app.Config{
		EngineDir:     cfg.EngineDir,
		LinksDir:      cfg.LinksDir,
		EncryptionKey: key,
		Pinterest: pinterest.Config{
			ClientID:     s.pinterest.ClientID(),
			ClientSecret: s.pinterest.ClientSecret(),
			RedirectURL:  s.CallbackURL(),
			APIBase:      s.pinterest.APIBase(),
			AuthURL:      s.pinterest.AuthURL(),
		},
		Bot: bot.Config{
			Token:        s.discord.Token(),
			APIURL:       s.discord.APIURL(),
			GatewayURL:   s.discord.GatewayURL(),
			Shards:       1,
			CloseTimeout: botCloseTimeout,
			Digest:       cfg.digest,
		},
		// The browser signs in with Discord before it confirms a link, as
		// with PINBOT_DISCORD_CLIENT_SECRET set.
		Discord: discorduser.Config{
			ClientSecret: s.discord.OAuth2ClientSecret(),
			AuthorizeURL: s.discord.OAuth2AuthorizeURL(),
			RedirectURL:  s.webURL + web.DiscordCallbackPath,
		},
		// The demo users' avatars would come from Discord's CDN: none.
		AvatarSources: []string{},
		Engine:        cfg.Engine,
		Listener:      ln,
		ControlSocket: cfg.ControlSocket,
		AdminToken:    adminToken,
		// The queued pins wait until the demo accounts are linked again
		// below: the tokens stored by an earlier run are unknown to this
		// run's Pinterest stand-in.
		HoldJobs: true,
		Log:      cfg.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w (engine store %s, token store %s, key %s)", err, cfg.EngineDir, cfg.LinksDir, cfg.KeyFile)
	}
	s.push(a.Close)
	s.engine, s.links, s.client = a.Engine, a.Links, a.Pinterest

	if err := s.seedLinks(ctx); err != nil {
		return nil, err
	}
	if err := a.ServeJobs(); err != nil {
		return nil, fmt.Errorf("sandbox: running the queued pins: %w", err)
	}
	if err := a.Start(ctx); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	s.log.Info().Str("discord", s.discord.URL()).Str("pinterest", s.pinterest.URL).
		Str("callback", s.CallbackURL()).Msg("sandbox running")
	return s, nil
}

// dialAddr is the address to reach a listener at: its own, with
// 127.0.0.1 in place of an unspecified one (0.0.0.0 or ::, which Go
// listens on for both IPv4 and IPv6).
func dialAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}

// push adds a closer for Close.
func (s *Sandbox) push(f func(context.Context) error) { s.closers = append(s.closers, f) }

// CallbackURL is the OAuth redirect address: the bot's callback on its
// loopback port.
func (s *Sandbox) CallbackURL() string { return s.webURL + web.CallbackPath }

// WebURL returns the address of the bot's HTTP listener: the OAuth
// callback, /healthz, /readyz, /metrics and, with Config.AdminTokenFile,
// the dashboard at /admin.
func (s *Sandbox) WebURL() string { return s.webURL }

// AdminTokenFile returns Config.AdminTokenFile: "" when the sandbox
// serves no dashboard.
func (s *Sandbox) AdminTokenFile() string { return s.adminTokenFile }

// Close stops the program (the bot, waiting for its handlers, the OAuth
// callback, the engine, which writes every account's state, and the
// stores; see app.App.Close) and then the stand-ins, and returns every
// error met. Close may be called more than once.
func (s *Sandbox) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		var errs []error
		for i := len(s.closers) - 1; i >= 0; i-- {
			if err := s.closers[i](ctx); err != nil {
				errs = append(errs, err)
			}
		}
		s.closeErr = errors.Join(errs...)
		if s.closeErr == nil {
			s.log.Info().Msg("sandbox closed")
		}
	})
	return s.closeErr
}
