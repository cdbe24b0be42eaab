// Package dashboard is the operator dashboard served at /admin on the
// bot's HTTP listener: the accounts nearest their limit, named by their
// Pinterest username and the Discord users who linked them, a timeline of
// pins over the window, the drift between pinbot's count and Pinterest's
// ledger, failures by reason, Pinterest's and Discord's error rates and
// latency over the last 5 minutes, the last hour and since the start, the
// gateway shards and the queue.
//
//	GET /admin             the dashboard, rendered on the server    token
//	GET /admin/data.json   the same data as JSON                    token
//	GET /admin/login       the sign-in page a browser opens
//	GET /admin/static/…    its script, stylesheet and icon
//
// # The token
//
// Requests for the dashboard and its data carry the admin token as
// "Authorization: Bearer <token>"; it is compared in constant time (both
// sides hashed with SHA-256, then crypto/subtle). Without it, or with
// another, they get 401 with "WWW-Authenticate: Bearer" (RFC 6750) and
// nothing else. A program mounts the dashboard only when a token is
// configured: otherwise /admin is the listener's 404.
//
// A browser cannot send that header when it navigates, so /admin/login
// asks for the token, keeps it in the tab's sessionStorage (gone when
// the tab closes, never in a cookie, so no request from another site can
// carry it) and fetches /admin with the header, every 15 seconds, putting
// the dashboard the server rendered into the page. One renderer, on the
// server, with html/template escaping every value, serves both the
// browser and a curl with the header; the script is a few dozen lines,
// embedded with the rest (go:embed), with no build step and nothing
// loaded from elsewhere.
//
// Every answer under /admin is sent with Cache-Control: no-store,
// X-Frame-Options: DENY, Referrer-Policy: no-referrer, nosniff and a
// Content-Security-Policy allowing only the dashboard's own script,
// stylesheet and icon: no inline script or style (the usage bars and the
// timeline are SVG shapes whose sizes are attributes).
//
// # Where the data comes from, and what it costs
//
// The engine: actors.Engine.Survey examines at most Config.MaxAccounts
// accounts (10,000): those with queued pins, then those in memory, then
// stored ones in key order; it reads resident accounts through their
// actors without counting as a use, and the others from the store
// without spawning their actors. The page says when the accounts
// examined are a sample.
//
// The names: Config.Names, the token store's, asked once per assembly
// for each account shown (at most twice Config.Top). An account nobody
// links, or whose name cannot be read, shows its ID alone.
//
// The rules: Config.Rules, the engine's store's. When a limit or window
// in force before a change, or the hold after a restore, still refuses
// slots the current limit leaves free (actors.Status.Blocked), the page
// names that rule and when it ends, and counts those slots as held, not
// free, as /pin does.
//
// The drift: Config.Drift, the reconciler's memory of each account's
// last reconciliation (package internal/reconcile), read without a
// request to Pinterest: a column beside the busiest accounts, and a card
// of the largest drifts.
//
// The metrics: a prometheus.Gatherer, from which the families named by
// the Metric constants are read by name. A family that is absent shows
// "no data".
//
// One assembly of both serves every request for Config.TTL (10 s), and
// requests during an assembly wait for it: the page costs at most one
// survey per TTL, however many operators look.
//
// # Recent windows
//
// Counters since the start hide a recent outage, so the dashboard keeps
// a ring of snapshots of the upstream and failure counters, one a minute
// at most (SampleEvery), back to just past the longest of Windows. A
// window's figures are the latest reading minus the snapshot at or just
// before its start: exact counts over a span up to a minute longer than
// the window. A process younger than a window counts from its start
// (Config.Started), and the page says so. An assembly offers its reading
// to the ring; Run, ticked once a minute, takes a snapshot when none
// was taken in the last minute, so that the windows are right when the
// page is opened after nobody looked.
//
// # Usage
//
//	d, err := dashboard.New(dashboard.Config{Token: token, Engine: eng, Gatherer: reg, Names: names, Rules: store, Log: log})
//	srv.Handler = d.Mount(srv.Handler) // /admin… to d, the rest as before
//	ticker := time.NewTicker(dashboard.SampleEvery)
//	go d.Run(ctx, ticker.C) // snapshots for the recent windows
package dashboard
