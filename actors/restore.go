package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
)

// Restoring a backup (see docs/design.md, "Backup and restore"). A backup
// holds each account's pins as of the moment it was taken. The pins made
// after it, by the runs whose data the restore replaces, are unknown, and
// so are the accounts first used after it: any account may have made its
// whole limit of pins just before the restore, or, through a reservation
// granted then, up to a lease after it. So nothing is provably free until
// every such pin has left its window: after a restore, no account is
// granted a slot until the restore's engine time plus the longest lease
// and window in force. The hold is a rule among the stored rules
// (persistence.RuleKeeper), one that allows no pin, in force until then;
// every engine start keeps it until its end, as it keeps the earlier rules
// of a change of the limit or the window. The hold knows when it began
// (persistence.Rule.From): an account whose window is rebuilt from
// Pinterest's own listing of its pins (Engine.Rebuild, rebuild.go) is no
// longer bound by it, since the pins it did not know are then known.

// Restored is what AfterRestore did.
type Restored struct {
	// At is the engine time of the restore.
	At time.Time
	// HoldUntil is the end of the hold: no account is granted a slot
	// before it, unless its window is rebuilt from Pinterest's listing
	// (Engine.Rebuild).
	HoldUntil time.Time
	// Window is the longest window the hold was sized for: the next runs'
	// window and those the store keeps in force.
	Window time.Duration
	// Unfinished is how many queued jobs were waiting or running in the
	// backup. Each may have run after the backup was taken: the next
	// engine hands them out as recovered (Job.Recovered), to be finished
	// with Outcome.Unknown, and never runs them.
	Unfinished int
}

// unfinishedBatch is how many jobs one store write of AfterRestore
// carries at most.
const unfinishedBatch = 1024

// AfterRestore readies store, just loaded from a backup, for the engines
// that will run on it; call it before any does. It serves as well for a
// store whose data was lost without a backup (`pinbot reconcile`): the
// pins made before are unknown either way. It starts the engine clock on
// store as New would (storing the clock anchor), and stores:
//
//   - the hold: among the rules in force, a rule that allows no pin until
//     the restore's engine time plus the longest lease and window, of
//     cfg's and the stored rules', beginning at the restore's engine time
//     (an account rebuilt from Pinterest's listing after it is no longer
//     bound, see Engine.Rebuild);
//   - the high-water mark, at the restore's engine time;
//   - every queued job that was waiting or running in the backup, as
//     running without a slot: whether it ran after the backup was taken
//     is unknown, so the next engine hands it out as recovered and it is
//     never run again.
//
// Every write carries cfg.Fence. cfg's limit and window are those the
// next runs are expected to use; the stored rules are not changed
// otherwise. The store must keep rules (persistence.RuleKeeper).
func AfterRestore(ctx context.Context, cfg Config, store persistence.Store, log zerolog.Logger) (Restored, error) {
	if err := cfg.Validate(); err != nil {
		return Restored{}, err
	}
	rk, ok := store.(persistence.RuleKeeper)
	if !ok {
		return Restored{}, errors.New("actors: after a restore: the store keeps no rules, so it cannot keep the hold")
	}
	log = log.With().Str("component", "engine").Logger()
	wall := cfg.Wall
	if wall == nil {
		wall = func() int64 { return time.Now().UnixMilli() }
	}
	clock, err := startClock(ctx, cfg, store, wall, log)
	if err != nil {
		return Restored{}, err
	}
	now := clock.Now()

	stored, err := rk.Rules(ctx)
	if err != nil {
		return Restored{}, fmt.Errorf("actors: reading the stored rules: %w", err)
	}
	if stored.Current.Limit == 0 {
		hw, err := store.HighWater(ctx)
		if err != nil {
			return Restored{}, fmt.Errorf("actors: reading the stored high-water mark: %w", err)
		}
		stored = persistence.Rules{
			Current: persistence.Rule{Limit: cfg.Limit, Window: cfg.Window.Milliseconds()},
			Lease:   cfg.Lease.Milliseconds(),
		}
		if hw != 0 {
			// Written by a pinbot that kept no rules (see startRules).
			stored.Current = persistence.Rule{Limit: DefaultLimit, Window: DefaultWindow.Milliseconds()}
			stored.Lease = DefaultConfig().Lease.Milliseconds()
		}
	}
	next, hold := holdRules(stored, cfg.Window.Milliseconds(), cfg.Lease.Milliseconds(), now)
	if err := rk.SetRules(ctx, next); err != nil {
		return Restored{}, fmt.Errorf("actors: storing the restore's hold: %w", err)
	}
	if err := store.Write(ctx, &persistence.Batch{HighWater: now, Fence: cfg.Fence}); err != nil {
		return Restored{}, fmt.Errorf("actors: storing the restore's instant: %w", err)
	}
	unfinished, err := unfinishJobs(ctx, store, cfg.Fence)
	if err != nil {
		return Restored{}, err
	}
	r := Restored{At: time.UnixMilli(now), HoldUntil: time.UnixMilli(hold.Until), Window: time.Duration(hold.Window) * time.Millisecond, Unfinished: unfinished}
	log.Info().Time("hold_until", r.HoldUntil).Int("unfinished_jobs", unfinished).
		Msg("the pins made before are unknown: no account is granted a slot before the hold ends, or before the next start rebuilds its window from Pinterest's listing")
	return r, nil
}

// holdRules returns stored with the hold of a restore at now added to its
// earlier rules, and the hold: a rule allowing no pin, from now until now
// plus the longest lease and window of stored's rules in force and of the
// window and lease (ms) given. Earlier rules that ended by now go, and so
// do those the hold implies (a hold of an earlier restore, lifted by the
// same rebuilds; not the rules of a change of the limit or window, which
// a rebuild leaves in force).
func holdRules(stored persistence.Rules, window, lease, now int64) (persistence.Rules, persistence.Rule) {
	width := max(window, stored.Current.Window)
	var earlier []persistence.Rule
	for _, r := range stored.Earlier {
		if r.Until > now {
			earlier = append(earlier, r)
			width = max(width, r.Window)
		}
	}
	hold := persistence.Rule{Limit: 0, Window: width, Until: now + max(lease, stored.Lease) + width, From: now}
	next := stored
	next.Earlier = pruneRules(stored.Current, append(earlier, hold))
	return next, hold
}

// unfinishJobs stores every waiting job of store as running without a
// slot, writing under fence, and returns how many jobs are now running.
func unfinishJobs(ctx context.Context, store persistence.Store, fence []byte) (int, error) {
	var accounts []string
	if err := store.JobAccounts(ctx, func(account string) error {
		accounts = append(accounts, account)
		return nil
	}); err != nil {
		return 0, fmt.Errorf("actors: listing the accounts with queued jobs: %w", err)
	}
	n := 0
	batch := persistence.Batch{Fence: fence}
	size := 0
	flush := func() error {
		if len(batch.Accounts) == 0 {
			return nil
		}
		if err := store.Write(ctx, &batch); err != nil {
			return fmt.Errorf("actors: marking the restored jobs unfinished: %w", err)
		}
		batch, size = persistence.Batch{Fence: fence}, 0
		return nil
	}
	for _, account := range accounts {
		jobs, err := store.Jobs(ctx, account)
		if err != nil {
			return 0, fmt.Errorf("actors: reading the restored jobs: %w", err)
		}
		var changed []persistence.Job
		for _, j := range jobs {
			switch j.State {
			case persistence.JobWaiting:
				j.State, j.Slot, j.Deadline = persistence.JobRunning, 0, 0
				changed = append(changed, j)
				n++
			case persistence.JobRunning:
				n++
			}
		}
		if len(changed) == 0 {
			continue
		}
		if size+len(changed) > unfinishedBatch {
			if err := flush(); err != nil {
				return 0, err
			}
		}
		batch.Accounts = append(batch.Accounts, persistence.AccountWrite{Account: account, Jobs: changed})
		size += len(changed)
	}
	return n, flush()
}
