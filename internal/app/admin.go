package app

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/internal/dashboard"
	"github.com/pinbot/pinbot/internal/reconcile"
)

// withAdmin mounts the operator dashboard (package internal/dashboard) at
// /admin in front of next when cfg holds an admin token; without one
// there is no dashboard, and /admin is next's 404.
func (a *App) withAdmin(cfg Config, next http.Handler) (http.Handler, error) {
	if len(cfg.AdminToken) == 0 {
		return next, nil
	}
	g := cfg.Gatherer
	if g == nil && a.Metrics != nil {
		g = a.Metrics.Registry()
	}
	if g == nil {
		g = prometheus.DefaultGatherer
	}
	dcfg := dashboard.Config{
		Token: cfg.AdminToken, Engine: a.Engine, Gatherer: g, Log: cfg.Log,
		Names: a.accountName, Rules: a.rules,
	}
	if a.Reconciler != nil {
		dcfg.Drift = driftReader{a.Reconciler}
	}
	if a.Rebuilder != nil {
		dcfg.Held = heldReader{a.Rebuilder}
	}
	d, err := dashboard.New(dcfg)
	if err != nil {
		return nil, err
	}
	// Snapshots of the counters once a minute keep the dashboard's recent
	// windows right when it is opened after nobody looked.
	ctx, stop := context.WithCancel(context.Background())
	ticker := time.NewTicker(dashboard.SampleEvery)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx, ticker.C)
	}()
	a.push("the dashboard's sampler", 0, func(context.Context) error {
		ticker.Stop()
		stop()
		<-done
		return nil
	})
	return d.Mount(next), nil
}

// accountName names an account for the dashboard from the token store:
// its Pinterest username and the Discord users who link it; nothing for
// an account nobody links.
func (a *App) accountName(ctx context.Context, account string) (dashboard.Name, error) {
	acct, users, err := a.Links.AccountUsers(ctx, account)
	switch {
	case errors.Is(err, links.ErrNoToken), errors.Is(err, links.ErrInvalid):
		return dashboard.Name{}, nil
	case err != nil:
		return dashboard.Name{}, err
	}
	return dashboard.Name{Username: acct.Username, LinkedBy: users}, nil
}

// driftReader shows the reconciler's drifts on the dashboard.
type driftReader struct{ r *reconcile.Reconciler }

func (d driftReader) Drift(account string) (dashboard.Drift, bool) {
	x, ok := d.r.Drift(account)
	return dashboardDrift(x), ok
}

func (d driftReader) Largest(n int) []dashboard.Drift {
	ds := d.r.Drifts(n)
	out := make([]dashboard.Drift, len(ds))
	for i, x := range ds {
		out[i] = dashboardDrift(x)
	}
	return out
}

func dashboardDrift(x reconcile.Drift) dashboard.Drift {
	return dashboard.Drift{
		Account: x.Account, At: x.At, Pinterest: x.Pinterest, Counted: x.Counted, Pending: x.Pending,
		Elsewhere: x.Elsewhere, CountAll: x.CountAll, Drift: x.Drift, Unexplained: x.Unexplained,
	}
}
