package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/web"
	"github.com/pinbot/pinbot/persistence/badgerstore"
)

// Timeouts of the bot's shutdown, one per step; SIGINT or SIGTERM stops
// the bot within their sum at most.
const (
	// botCloseTimeout bounds closing the bot: the gateway, then the
	// handlers still running (bot.DefaultCloseTimeout of them), then the
	// Discord client.
	botCloseTimeout = bot.DefaultCloseTimeout + 10*time.Second
	// httpShutdownTimeout bounds the OAuth callbacks still running.
	httpShutdownTimeout = web.DefaultCallbackTimeout
)

// purgeEvery is how often the OAuth states nobody came back with are
// deleted.
const purgeEvery = 5 * time.Minute

// botRun is the running bot and everything under it.
type botRun struct {
	log    zerolog.Logger
	store  *badgerstore.Store
	engine *actors.Engine
	links  *links.Store
	http   *http.Server
	httpc  chan error // the listener's end
	bot    *bot.Bot

	stopPurge context.CancelFunc
	purged    sync.WaitGroup
}

// runBot runs the Discord bot until ctx ends: it opens the engine store
// and the token store, starts the engine, starts the HTTP listener (OAuth
// callback and health check) and then the bot. When ctx ends (SIGINT
// or SIGTERM) or the listener fails, it stops them in reverse order: the
// bot (handlers finish first), the listener, the engine (which writes every
// account's state), the token store, the engine store. The end of ctx is a
// normal stop.
func runBot(ctx context.Context, cfg botSettings, key []byte, dir layout, log zerolog.Logger) (err error) {
	if err := dir.prepare(); err != nil {
		return err
	}
	r := &botRun{log: log.With().Str("component", "pinbot").Logger()}
	defer func() {
		if cerr := r.shutdown(); cerr != nil {
			err = errors.Join(err, cerr)
			return
		}
		r.log.Info().Msg("pinbot stopped")
	}()

	if r.store, err = openStore(dir.engine(), log); err != nil {
		return err
	}
	if r.links, err = openLinks(dir.links(), key, log); err != nil {
		return err
	}
	if r.engine, err = actors.New(actors.DefaultConfig(), r.store, log); err != nil {
		return fmt.Errorf("starting the engine: %w", err)
	}
	client, err := pinterest.New(pinterest.Config{
		ClientID:     cfg.clientID,
		ClientSecret: cfg.clientSecret,
		RedirectURL:  cfg.redirectURL,
		APIBase:      cfg.pinterestAPI,
		AuthURL:      cfg.pinterestOAuth,
		Logger:       log,

		ContinuousRefresh: cfg.continuousRefresh,
	})
	if err != nil {
		return &usageError{err: err}
	}
	h, err := web.New(web.Config{Links: r.links, Pinterest: client, Log: log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return fmt.Errorf("listening on %s %s: %w", cfg.httpAddrName, cfg.httpAddr, err)
	}
	r.http = h.Server(cfg.httpAddr)
	r.httpc = make(chan error, 1)
	go func() { r.httpc <- r.http.Serve(ln) }()

	pctx, stop := context.WithCancel(context.Background())
	r.stopPurge = stop
	r.purged.Add(1)
	go r.purgeStates(pctx)

	b, err := bot.New(bot.Config{
		Token:      cfg.token,
		APIURL:     cfg.discordAPI,
		GatewayURL: cfg.discordGateway,
		Shards:     cfg.shards,
		Engine:     r.engine,
		Links:      r.links,
		Pinterest:  client,
		Log:        log,
	})
	if err != nil {
		return &usageError{err: fmt.Errorf("invalid %s: %w", cfg.tokenName, err)}
	}
	r.bot = b
	r.log.Info().Str("http_addr", ln.Addr().String()).Str("redirect_url", cfg.redirectURL).
		Int("shards", cfg.shards).Msg("starting the bot")
	if err := b.Start(ctx); err != nil {
		if ctx.Err() != nil {
			r.log.Info().Msg("interrupted while starting; shutting down")
			return nil
		}
		return fmt.Errorf("starting the bot: %w", err)
	}
	r.log.Info().Msg("pinbot running")

	select {
	case <-ctx.Done():
		r.log.Info().AnErr("cause", context.Cause(ctx)).Msg("shutting down")
		return nil
	case err := <-r.httpc:
		r.httpc = nil
		return fmt.Errorf("the HTTP listener stopped: %w", err)
	}
}

// purgeStates deletes expired OAuth states every purgeEvery until ctx
// ends.
func (r *botRun) purgeStates(ctx context.Context) {
	defer r.purged.Done()
	t := time.NewTicker(purgeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := r.links.PurgeStates(ctx, time.Now())
			switch {
			case err != nil && ctx.Err() == nil:
				r.log.Warn().Err(err).Msg("purging expired OAuth states failed")
			case n > 0:
				r.log.Debug().Int("states", n).Msg("expired OAuth states purged")
			}
		}
	}
}

// shutdown stops what runBot started, in reverse order, each step within
// its own timeout, and returns every error met.
func (r *botRun) shutdown() error {
	var errs []error
	if r.bot != nil {
		ctx, cancel := context.WithTimeout(context.Background(), botCloseTimeout)
		if err := r.bot.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("closing the bot: %w", err))
		}
		cancel()
	}
	if r.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
		if err := r.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("closing the HTTP listener: %w", err))
		}
		cancel()
		if r.httpc != nil {
			if err := <-r.httpc; err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs = append(errs, fmt.Errorf("the HTTP listener: %w", err))
			}
		}
	}
	if r.stopPurge != nil {
		r.stopPurge()
		r.purged.Wait()
	}
	if r.engine != nil {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		if err := r.engine.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("closing the engine: %w", err))
		}
		cancel()
	}
	if r.links != nil {
		if err := r.links.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the token store: %w", err))
		}
	}
	if r.store != nil {
		if err := r.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the engine store: %w", err))
		}
	}
	return errors.Join(errs...)
}

// openLinks opens the token store in dir with key. Another process
// holding it fails with errDataDirInUse; a store written with another key
// says which key to use.
func openLinks(dir string, key []byte, log zerolog.Logger) (*links.Store, error) {
	st, err := links.Open(dir, links.Options{EncryptionKey: key}, log)
	switch {
	case err == nil:
		return st, nil
	case errors.Is(err, links.ErrLocked):
		log.Debug().Err(err).Str("dir", dir).Msg("token store locked")
		return nil, fmt.Errorf("%w (%s); stop it, then try again", errDataDirInUse, dir)
	case errors.Is(err, links.ErrEncryptionKey):
		return nil, &keyError{fmt.Errorf("the token store in %s was written with another key than the one given: "+
			"use the key file it was created with (a data directory the sandbox made uses %s)", dir, sandboxKeyName)}
	}
	return nil, fmt.Errorf("opening the token store in %s: %w", dir, err)
}
