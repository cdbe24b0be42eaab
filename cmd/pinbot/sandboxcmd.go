package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/internal/app"
	"github.com/pinbot/pinbot/internal/sandbox"
)

// sandboxCloseTimeout bounds stopping the sandbox.
const sandboxCloseTimeout = 60 * time.Second

// sandboxConfig is what runSandbox needs.
type sandboxConfig struct {
	dir    layout
	level  zerolog.Level // of the log file
	engine actors.Config // the rate-limit engine's
	in     io.Reader     // console commands
	out    io.Writer     // the console
	stderr io.Writer     // notes about the settings
	prompt bool
	// httpAddr, when not empty, is where the bot's HTTP listener listens
	// (PINBOT_HTTP_ADDR), and httpAddrName the setting that gave it;
	// empty, the sandbox picks a free loopback port.
	httpAddr, httpAddrName string
	// ignored are settings given that only the bot uses.
	ignored []string
}

// sandboxHTTPAddr returns where the sandbox's HTTP listener listens:
// the address PINBOT_HTTP_ADDR (or --http-addr) gives, checked (a
// problem goes to errs), or "" when neither is given, for a free
// loopback port, so that a sandbox never takes the bot's default port.
func (st *settings) sandboxHTTPAddr(errs *configErrors) string {
	if st.httpAddr.from == "" {
		return ""
	}
	errs.add(checkAddr(&st.httpAddr))
	return st.httpAddr.value
}

// runSandbox runs the local sandbox (package internal/sandbox) on the data
// directory: the bot against stand-ins of Discord and Pinterest, with a
// console on cfg.in and cfg.out, until quit, the end of the input or the
// end of ctx (a normal stop). Logs go to DIR/sandbox.log.
func runSandbox(ctx context.Context, cfg sandboxConfig) (err error) {
	if err := cfg.dir.prepare(); err != nil {
		return err
	}
	if len(cfg.ignored) > 0 {
		fmt.Fprintf(cfg.stderr, "pinbot: %s is not set, so this is the local sandbox; it ignores %s\n",
			discordTokenEnv, strings.Join(cfg.ignored, ", "))
	}
	logPath := cfg.dir.sandboxLog()
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the sandbox's log: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing the sandbox's log: %w", cerr))
		}
	}()
	log := zerolog.New(zerolog.SyncWriter(f)).Level(cfg.level).With().Timestamp().Logger()

	var ln net.Listener
	if cfg.httpAddr != "" {
		if ln, err = net.Listen("tcp", cfg.httpAddr); err != nil {
			return fmt.Errorf("listening on %s %s: %w", cfg.httpAddrName, cfg.httpAddr, err)
		}
	}

	fmt.Fprintf(cfg.out, "pinbot: starting the local sandbox on %s (logs in %s)...\n", cfg.dir.dir, logPath)
	sb, err := sandbox.Start(ctx, sandbox.Config{
		Listener:       ln,
		EngineDir:      cfg.dir.engine(),
		LinksDir:       cfg.dir.links(),
		KeyFile:        cfg.dir.sandboxKey(),
		AdminTokenFile: cfg.dir.sandboxAdminToken(),
		Engine:         &cfg.engine,
		ControlSocket:  cfg.dir.control(),
		Log:            log,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while starting
		}
		return sandboxStartError(cfg.dir, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), sandboxCloseTimeout)
		defer cancel()
		if cerr := sb.Close(cctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("stopping the sandbox: %w", cerr))
		}
	}()
	con := sb.Console(cfg.out)
	con.Banner(ctx)
	return con.Serve(ctx, cfg.in, cfg.prompt)
}

// sandboxStartError explains why the sandbox did not start.
func sandboxStartError(dir layout, err error) error {
	switch {
	case errors.Is(err, app.ErrDataDirInUse):
		return fmt.Errorf("%w (%s); stop it, then try again", app.ErrDataDirInUse, dir.dir)
	case errors.Is(err, links.ErrEncryptionKey):
		return fmt.Errorf("the token store in %s was not written with the sandbox's key %s (the bot may have made it with its own key); "+
			"run the sandbox on another --data-dir: %w", dir.links(), dir.sandboxKey(), err)
	}
	return fmt.Errorf("starting the sandbox: %w", err)
}
