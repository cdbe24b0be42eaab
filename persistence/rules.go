package persistence

import "context"

// Rule is a rate limit: at most Limit pins in any Window milliseconds.
type Rule struct {
	Limit  int
	Window int64 // ms
	// Until is, for an earlier rule (Rules.Earlier), the engine time (Unix
	// ms) from which it binds no pin any more; 0 for Rules.Current.
	Until int64
	// From is, for the hold a restore stores (Limit 0), the engine time
	// (Unix ms) of the restore: an account whose window was rebuilt from
	// Pinterest's listing as of From or later (Snapshot.Rebuilt) is no
	// longer bound by it. 0 for every other rule, and for holds stored
	// before rules had it: those bind every account to their Until.
	From int64
}

// Rules records the limits the engine enforces, so that a start under
// another limit or window keeps what the earlier ones promised: a pin is
// never freed earlier than the rule it was made under says. See
// docs/design.md, "Changing the limit or the window".
type Rules struct {
	// Current is the rule of the last run; the zero Rule when no rule was
	// ever stored.
	Current Rule
	// Lease is the last run's reservation lease, in ms: a reservation it
	// granted may become a pin up to a lease after it stopped.
	Lease int64
	// Earlier are rules of runs before the last that still bind pins made
	// under them, each until its Until.
	Earlier []Rule
}

// RuleKeeper is implemented by stores that keep the engine's Rules beside
// the accounts' state. The engine reads them at start and stores them
// again when Config.Limit or Config.Window changed; over a store that is
// not a RuleKeeper it enforces its configuration alone.
type RuleKeeper interface {
	// Rules returns the stored rules, the zero Rules when none were
	// stored.
	Rules(ctx context.Context) (Rules, error)
	// SetRules stores r in place of the stored rules; when it returns
	// nil, r is durable (if the store was opened durable).
	SetRules(ctx context.Context, r Rules) error
}
