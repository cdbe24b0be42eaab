package app

import (
	"context"

	"github.com/pinbot/pinbot/internal/dashboard"
	"github.com/pinbot/pinbot/internal/rebuild"
)

// startRebuilder starts, when a restore's hold that a rebuild lifts is in
// force (after `pinbot restore` or `pinbot reconcile`), the rebuild of
// each linked account's window from Pinterest's listing of its pins
// (package internal/rebuild), under the bot's assumptions of Pinterest's
// delays. Close stops it, a round in progress cut short, before the
// engine and the token store close.
func (a *App) startRebuilder(cfg Config) error {
	if len(a.Engine.Holds()) == 0 {
		return nil
	}
	r, err := rebuild.New(rebuild.Config{
		Engine: a.Engine, Links: a.Links, Pinterest: a.Pinterest, CountAll: cfg.CountAllPins,
		SlotMargin: cfg.Bot.SlotMargin, ListingLag: cfg.Bot.ListingLag, Log: cfg.Log,
	})
	if err != nil {
		return err
	}
	a.Rebuilder = r
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	a.push("the rebuild after a restore", 0, func(context.Context) error {
		stop()
		<-done
		return nil
	})
	return nil
}

// heldReader shows on the dashboard the accounts the rebuild could not
// read.
type heldReader struct{ r *rebuild.Rebuilder }

func (h heldReader) Held() []dashboard.HeldAccount {
	held := h.r.Held()
	out := make([]dashboard.HeldAccount, len(held))
	for i, x := range held {
		out[i] = dashboard.HeldAccount{Account: x.Account, Username: x.Username, Reason: x.Reason, Since: x.Since, Retry: x.Retry, Until: x.Until}
	}
	return out
}
