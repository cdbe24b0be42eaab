// Package reconcile compares, account by account, what pinbot counts with
// what Pinterest's own ledger lists, and, when asked to, counts the pins
// an account made outside pinbot (in Pinterest's app, with another tool)
// against its limit.
//
// Every Config.Every (PINBOT_RECONCILE_EVERY, 15 minutes) a round takes
// the accounts active in the window (pins or reservations that count, or
// queued pins: actors.Engine.Survey's busiest), those reconciled least
// recently first, and, one account at a time, up to Config.MaxAccounts
// of them: an account that is not linked, needs a new link, or whose
// stored access token is due for renewal is skipped; the others' pins
// created since the window's start, less Config.Skew, are listed (GET
// /v5/pins, pinterest.Client.ListPins). A round stops early when
// Pinterest answers that the listings are rate limited or is not
// answering (its circuit breaker open): the accounts not reached go first
// next round.
//
// With Config.CountAll (PINBOT_COUNT_ALL_PINS), the pins without pinbot's
// mark (pinterest.MarkOf) that the token store does not remember are
// recorded with actors.Engine.Observe, each counted from its creation
// plus Config.Skew, then remembered with links.Observations.MarkObserved:
// a crash between the two counts them twice at the next round, never
// less. Whatever the setting, the round measures each account's drift:
// the pins Pinterest lists in the window (every pin with CountAll, only
// pinbot's own without) minus those pinbot counts as made
// (actors.Status.Used less Pending). It is kept per account for the
// dashboard (Reconciler.Drift), summed up for the metrics
// (Reconciler.Summary), and logged as a warning when Pinterest lists more
// than the rules explain: pins pinbot holds as pending reservations may
// exist, pins made elsewhere explain the rest while they are not counted,
// and pins near the window's start may sit on either side of it by the
// clocks' skew.
//
// A listing that fails changes nothing: no count is ever lowered here.
//
// # Sessions
//
// Pinterest rotates refresh tokens and the previous one dies at once, so
// only the bot's own Session of an account may refresh it. The listings
// use Config.Session; by default ReadOnlySessions, which builds each
// account's Session from its stored access token alone: it never
// refreshes, and an account whose access token is about to expire waits
// for the bot to renew it.
//
// # Usage
//
//	r, err := reconcile.New(reconcile.Config{Engine: eng, Links: st, Pinterest: client, CountAll: true, Log: log})
//	go r.Run(ctx) // a round every Config.Every, by the engine's clock
//	d, ok := r.Drift(account)
package reconcile
