package app

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pinbot/pinbot/internal/dashboard"
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
	d, err := dashboard.New(dashboard.Config{Token: cfg.AdminToken, Engine: a.Engine, Gatherer: g, Log: cfg.Log})
	if err != nil {
		return nil, err
	}
	return d.Mount(next), nil
}
