// Package actors is pinbot's rate-limit engine. Its promise: no account
// is granted more than Config.Limit slots (100 by default) in any rolling
// Config.Window (12 hours), exactly, under any concurrency and across
// crashes, restarts and clock changes. docs/design.md explains how; the
// quoted names below are its sections.
//
// # The window and the ledger
//
// Window is one account's sliding-window log: the times of its newest
// pins in a ring buffer, a pin made at T counting until T+Window. It never
// reads a clock; every method takes now ("The window"). The account's
// ledger wraps it with the pending and lapsed reservations, the hold that
// Engine.Hold sets when Pinterest says the account is limited, and the
// earlier rules still in force after the limit or the window changed
// ("Changing the limit or the window").
//
// # Reservations
//
// A slot is taken before Pinterest is called, not recorded after it:
// Engine.Reserve grants up to n (at most MaxBatch) slots at once, each
// counted as used while pending; Engine.Commit turns one into a pin at the
// instant Pinterest answered, and Engine.Release frees one that was
// definitely not pinned. A reservation neither committed nor released
// within Config.Lease counts as a pin made at the end of its lease
// ("Reservations").
//
// # Account actors and the registry
//
// Each account's ledger belongs to one protoactor actor, so every request
// for the account is served in turn, without a lock. The registry, a
// sharded map, spawns the actor on first use (it loads the account from the
// store) and passivates it after Config.IdleTimeout without a request,
// once its snapshot is durable ("Actors"). In between, after
// Config.ParkAfter without a request, an account whose state is stored
// parks: its actor stops and leaves the state, in memory the collector
// does not walk, for the next actor to start from (see slab; "Memory and
// the collector"). Engine is the API in front of
// them; it is safe for simultaneous use by multiple goroutines.
//
// # The queue
//
// Engine.Enqueue stores jobs on an account (for the bot, queued pins),
// each run at most once, in order, at the instant a slot frees for it: the
// slot's reservation and the job's start are one durable write, then the
// job goes to the handler of Config.OnJob or Engine.ServeJobs, which ends
// it with Engine.Finish. One timer for the whole engine wakes the accounts
// whose first job is due. While jobs wait, Reserve grants only the slots
// they leave free: a later request never moves the start times that
// Enqueue and Engine.Jobs gave ("The queue").
//
// # Pins made elsewhere
//
// Engine.Observe records pins an account made outside pinbot (found on
// Pinterest by the reconciler, package internal/reconcile) at their
// creation times, so that they count against the limit as pinbot's own
// do ("Pins made elsewhere and drift").
//
// # The journal and the store
//
// Every change is an event of its account, written through a
// persistence.Journal that group-commits the writes of many accounts to
// the persistence.Store given to New. A grant, a hold and a queued job are
// acknowledged only once durable; when the store cannot write, nothing is
// granted (ErrUnavailable). An account is snapshotted every
// Config.SnapshotEvery events, when it passivates and at Close;
// Engine.Recover folds what a crash left in the journal into fresh
// snapshots ("Durability", "Start-up").
//
// # Clocks
//
// The engine reads time, in Unix milliseconds, from a Clock and nowhere
// else. Unless Config.Clock replaces it, that is a RunningClock: a start
// instant advanced by the machine's boot-time clock, so a wall-clock jump
// neither frees pins early nor extends them. The start instant resumes
// from an anchor in the store on the same boot, else comes from the wall
// clock, and is never behind the newest instant stored. Tests pass a
// ManualClock ("Clocks").
package actors
