package main

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/discorduser"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/internal/app"
	"github.com/pinbot/pinbot/internal/edge"
	"github.com/pinbot/pinbot/internal/limit/gcra"
)

// runBot runs the Discord bot until ctx ends: it builds the program
// (package internal/app: the stores, the engine, the HTTP listener for the
// OAuth callback and health check, the bot), connects the bot, and when
// ctx ends (SIGINT or SIGTERM) or the listener fails, stops everything in
// reverse order. The end of ctx is a normal stop.
func runBot(ctx context.Context, cfg botSettings, key []byte, dir layout, log zerolog.Logger) (err error) {
	if err := dir.prepare(); err != nil {
		return err
	}
	plog := log.With().Str("component", "pinbot").Logger()
	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return fmt.Errorf("listening on %s %s: %w", cfg.httpAddrName, cfg.httpAddr, err)
	}
	var cluster *app.ClusterConfig
	if len(cfg.etcdEndpoints) > 0 {
		pln, err := net.Listen("tcp", cfg.clusterAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listening for the cluster's peers on %s: %w", cfg.clusterAddr, err)
		}
		cluster = &app.ClusterConfig{Endpoints: cfg.etcdEndpoints, Credentials: cfg.etcdCredentials, Addr: cfg.clusterAddr, Listener: pln, Key: cfg.clusterKey, Join: ctx}
	}
	if cfg.lease > 0 {
		cfg.engine.Lease = cfg.lease
	}
	a, err := app.Build(app.Config{
		Cluster:       cluster,
		EngineDir:     dir.engine(),
		LinksDir:      dir.links(),
		EncryptionKey: key,
		Pinterest: pinterest.Config{
			ClientID:     cfg.clientID,
			ClientSecret: cfg.clientSecret,
			RedirectURL:  cfg.redirectURL,
			APIBase:      cfg.pinterestAPI,
			AuthURL:      cfg.pinterestOAuth,

			ContinuousRefresh: cfg.continuousRefresh,
		},
		Bot: bot.Config{
			Token:      cfg.token,
			APIURL:     cfg.discordAPI,
			GatewayURL: cfg.discordGateway,
			Shards:     cfg.shards,
			UserRate:   cfg.userRate,
			NoUserRate: cfg.userRate.IsZero(),
			// -1 (off) remembers nothing: bot.Config takes a negative value so.
			RememberPinsFor: cfg.rememberPins,
			SlotMargin:      cfg.slotMargin,
			ListingLag:      cfg.listingLag,
			NoReactions:     cfg.noReactions,
			NoAutopin:       cfg.noAutopin,
			PinEmoji:        cfg.pinEmoji,
		},
		Discord: discorduser.Config{
			ClientSecret: cfg.discordClientSecret,
			AuthorizeURL: cfg.discordOAuth,
			RedirectURL:  cfg.discordRedirectURL,
		},
		Engine:   &cfg.engine,
		Listener: ln,
		HTTPLimit: edge.Config{Rate: cfg.httpRate, TrustedProxies: cfg.trustedProxies,
			OperatorRate: cfg.operatorRate, NoOperatorLimit: cfg.operatorRate.IsZero()},
		NoHTTPLimit:    cfg.httpRate.IsZero(),
		AdminToken:     cfg.adminToken,
		ReconcileEvery: cfg.reconcileEvery,
		NoReconcile:    cfg.reconcileEvery == 0,
		CountAllPins:   cfg.countAllPins,
		ControlSocket:  dir.control(),
		Log:            log,
	})
	if err != nil {
		// Build closed what it had opened.
		plog.Info().Msg("pinbot stopped")
		return buildError(cfg, dir, err)
	}
	defer func() {
		if cerr := a.Close(context.Background()); cerr != nil {
			err = errors.Join(err, cerr)
			return
		}
		plog.Info().Msg("pinbot stopped")
	}()

	plog.Info().Str("http_addr", ln.Addr().String()).Str("redirect_url", cfg.redirectURL).
		Bool("discord_sign_in", cfg.discordClientSecret != "").
		Int("shards", cfg.shards).Int("pin_limit", cfg.engine.Limit).Dur("pin_window", cfg.engine.Window).Dur("park_after", cfg.engine.ParkAfter).
		Stringer("http_rate", rateText(cfg.httpRate)).Stringer("operator_rate", rateText(cfg.operatorRate)).Stringer("user_rate", rateText(cfg.userRate)).
		Bool("admin_dashboard", len(cfg.adminToken) > 0).
		Dur("reconcile_every", cfg.reconcileEvery).Bool("count_all_pins", cfg.countAllPins).Dur("remember_pins", cfg.rememberPins).
		Bool("reactions", !cfg.noReactions).Str("pin_emoji", cfg.pinEmoji).Bool("autopin", !cfg.noAutopin).
		Dur("lease", cfg.engine.Lease).Dur("slot_margin", cfg.slotMargin).Dur("listing_lag", cfg.listingLag).
		Strs("etcd_endpoints", cfg.etcdEndpoints).Str("cluster_addr", cfg.clusterAddr).
		Msg("starting the bot")
	if err := a.Start(ctx); err != nil {
		if ctx.Err() != nil {
			plog.Info().Msg("interrupted while starting; shutting down")
			return nil
		}
		return err
	}
	plog.Info().Msg("pinbot running")

	select {
	case <-ctx.Done():
		plog.Info().AnErr("cause", context.Cause(ctx)).Msg("shutting down")
		return nil
	case err := <-a.HTTPFailed():
		return fmt.Errorf("the HTTP listener stopped: %w", err)
	}
}

// buildError explains why the program could not be built, naming the
// setting at fault where there is one.
func buildError(cfg botSettings, dir layout, err error) error {
	switch {
	case errors.Is(err, app.ErrPinterestConfig):
		return &usageError{err: err}
	case errors.Is(err, app.ErrBotConfig):
		return &usageError{err: fmt.Errorf("invalid %s: %w", cfg.tokenName, err)}
	case errors.Is(err, app.ErrDiscordConfig):
		return &usageError{err: err}
	case errors.Is(err, app.ErrDataDirInUse):
		return fmt.Errorf("%w (%s); stop it, then try again", app.ErrDataDirInUse, dir.dir)
	case errors.Is(err, links.ErrEncryptionKey):
		return &keyError{fmt.Errorf("the token store in %s was written with another key than the one given: "+
			"use the key file it was created with (a data directory the sandbox made uses %s)", dir.links(), sandboxKeyName)}
	}
	return err
}

// rateText shows a rate setting in the log: the rate, or off.
type rateText gcra.Rate

func (r rateText) String() string {
	if gcra.Rate(r).IsZero() {
		return "off"
	}
	return gcra.Rate(r).String()
}
