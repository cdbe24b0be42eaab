// Package rebuild lifts, account by account, the hold a restore (`pinbot
// restore`, or `pinbot reconcile` after a data directory was lost) puts
// on every account, by rebuilding each linked account's window from
// Pinterest's own listing of its pins (actors.Engine.Rebuild).
//
// After a restore the pins made by the runs before are unknown to the
// engine, so it grants no slot to any account until they have left their
// window (the restore's instant plus a lease and the window: 12 hours 5
// minutes by default). Pinterest knows them. Once every pin those runs
// can have made must be listed (the restore's instant plus Pinterest's
// delay to act on a request, Config.SlotMargin, plus the listing's lag
// behind creation, Config.ListingLag), a Rebuilder lists each linked
// account's pins created since the longest window in force and
// Config.Skew before (GET /v5/pins, pinterest.Client.ListPins, one
// account at a time, through the client's quota and circuit breaker),
// and rebuilds the account's window from it: pinbot's own pins (those
// with its mark), or every pin with Config.CountAll
// (PINBOT_COUNT_ALL_PINS), each counting from its creation plus Skew.
// The account pins again at once, up to what the listing leaves free.
//
// An account that cannot be read (its link needs renewing, Pinterest
// refuses its token, the listing fails after the client's retries) stays
// held, as without a rebuild: it is named in the log and by Held, which
// the operator dashboard shows, and tried again every Config.RetryEvery
// until it is read or the hold ends. Accounts linked meanwhile are
// rebuilt by the next round. A round stops early when Pinterest rate
// limits the listings or is not answering; the accounts not reached go
// in the next one.
//
// # Usage
//
//	r, err := rebuild.New(rebuild.Config{Engine: eng, Links: st, Pinterest: client, Log: log})
//	go r.Run(ctx) // nothing to do unless a restore's hold is in force
//	held := r.Held()
package rebuild
