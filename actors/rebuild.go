package actors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pinbot/pinbot/persistence"
)

// Rebuilding an account's window from Pinterest's listing (see
// docs/design.md, "Backup and restore"). After a restore, or a data
// directory lost without a backup, the pins made by the runs before are
// unknown, and a hold refuses every slot of every account until they have
// left their window (restore.go). Pinterest knows them: its listing of an
// account's pins, begun once every pin those runs can have made is
// listed, says which count. Rebuild replaces the account's window with
// what the listing says, keeping what the stored state counts that the
// listing does not explain, and records the instant as of which it was
// rebuilt: a hold that began by then no longer binds the account.

// ErrRebuildEarly is wrapped by the error of a Rebuild whose listing may
// lack pins of the runs a hold in force stands for: it began too soon
// after the hold (Listing.Began less Listing.Settle is before the hold's
// Hold.From). Nothing changed.
var ErrRebuildEarly = errors.New("actors: the listing began too early to rebuild the window")

// Hold is a restore's hold in force: no account is granted a slot before
// Until unless its window is rebuilt from Pinterest's listing as of From
// or later (Engine.Rebuild).
type Hold struct {
	// From is the engine time of the restore (or of `pinbot reconcile`).
	From time.Time
	// Until is when the hold ends for every account.
	Until time.Time
	// Window is the longest window in force at the restore: a listing
	// for a rebuild reaches back that far (and the clocks' skew).
	Window time.Duration
}

// Holds returns the restores' holds in force at now that a rebuild can
// lift, ending first first; none when there is nothing to rebuild. Holds
// stored by a pinbot that did not record their start bind every account
// to their end, and are not listed.
func (e *Engine) Holds() []Hold {
	now := e.clock.Now()
	var out []Hold
	for _, r := range e.rules.earlier {
		if r.from != 0 && r.until > now {
			out = append(out, Hold{From: time.UnixMilli(r.from), Until: time.UnixMilli(r.until), Window: time.Duration(r.width) * time.Millisecond})
		}
	}
	slices.SortFunc(out, func(a, b Hold) int { return a.Until.Compare(b.Until) })
	return out
}

// Listing is what Pinterest's listing of an account's pins says, for
// Rebuild.
type Listing struct {
	// Pins are the creation times, by Pinterest's clock, of the listed
	// pins that count against the account's limit: those with pinbot's
	// mark, or every pin when the pins made elsewhere count too. Pins too
	// old to count are ignored, so the listing may reach further back.
	Pins []time.Time
	// Began is the engine time at which the listing began: no later than
	// the engine's now.
	Began time.Time
	// Settle is how long after the runs before stopped their pins may
	// still be missing from a listing: Pinterest's delay to act on a
	// request (the SlotMargin assumption) plus the listing's own lag
	// behind creation. The window is rebuilt as of Began less Settle.
	Settle time.Duration
	// Skew bounds how far Pinterest's clock may lag the engine's: each
	// listed pin counts from its creation plus Skew.
	Skew time.Duration
}

// rebuildArgs carries a Rebuild request to an actor; times in Unix ms.
type rebuildArgs struct {
	check  bool    // AwaitsRebuild: only say whether a hold binds
	pins   []int64 // created_at, Pinterest's clock
	asOf   int64   // Began less Settle
	skew   int64
	result *RebuildResult
}

// AwaitsRebuild reports whether a restore's hold that a rebuild lifts
// binds account now: whether Rebuild would do anything. It writes
// nothing.
func (e *Engine) AwaitsRebuild(ctx context.Context, account string) (bool, error) {
	args := &rebuildArgs{check: true, result: new(RebuildResult)}
	resp, err := e.call(ctx, account, request{op: opRebuild, rebuild: args})
	if err != nil || resp.status.Account == "" {
		return false, err
	}
	return args.result.Rebuilt, nil
}

// RebuildResult is what Rebuild did.
type RebuildResult struct {
	// Status is the account's standing after it.
	Status Status
	// Rebuilt says the window was rebuilt and the holds lifted; false
	// when no hold that a rebuild lifts bound the account (none in force,
	// or the window was rebuilt already): nothing was written.
	Rebuilt bool
	// Listed is how many of the listing's pins count at now, and Kept how
	// many pins of the stored state that no listed pin matches still
	// count all the same (a pin deleted since still counts for
	// Pinterest).
	Listed, Kept int
}

// Rebuild replaces account's window with what Pinterest's listing l says,
// lifting the restores' holds that began no later than l.Began less
// l.Settle, in one durable write, and returns once it is durable.
//
// The window is rebuilt conservatively. Every listed pin that counts
// counts from its creation plus l.Skew. A pin of the stored state (from
// the backup, or a pin made elsewhere that was observed) that no listed
// pin matches is kept where it was: a pin deleted since still counts for
// Pinterest. A stored pin recorded at t matches a listed pin created at c
// when t - lease - Skew <= c <= t + Skew (created at most Skew after
// pinbot recorded it, at most a lease and Skew before: a pin whose lease
// ran out counts from its reservation's deadline); each listed pin
// matches at most one stored pin, and a matched pair counts once, from
// the later of the two instants. Pending reservations stay pending (their
// pins may still come); lapsed ones are forgotten, their pins kept as
// pins (a late Commit or Release of one changes nothing).
//
// When no hold a rebuild lifts binds the account, Rebuild writes nothing
// and reports Rebuilt false. When one began after l.Began less l.Settle,
// the error wraps ErrRebuildEarly and nothing changes. When the journal
// cannot write, the error wraps ErrUnavailable and the rebuilt window is
// in force until the account's actor next loads its state, which then
// holds the account again: stricter, never looser.
func (e *Engine) Rebuild(ctx context.Context, account string, l Listing) (RebuildResult, error) {
	if l.Settle < 0 || l.Skew < 0 {
		return RebuildResult{}, fmt.Errorf("actors: rebuild: negative settle (%v) or skew (%v)", l.Settle, l.Skew)
	}
	if l.Began.After(e.Now()) {
		return RebuildResult{}, fmt.Errorf("actors: rebuild: the listing began at %v, after now %v", l.Began, e.Now())
	}
	args := &rebuildArgs{
		pins:   make([]int64, len(l.Pins)),
		asOf:   l.Began.Add(-l.Settle).UnixMilli(),
		skew:   l.Skew.Milliseconds(),
		result: new(RebuildResult),
	}
	for i, p := range l.Pins {
		args.pins[i] = p.UnixMilli()
	}
	resp, err := e.call(ctx, account, request{op: opRebuild, rebuild: args})
	if resp.status.Account == "" {
		// Not answered (ctx ended), or refused before the actor looked:
		// the result is not the caller's to read.
		return RebuildResult{}, err
	}
	res := *args.result
	res.Status = resp.status
	return res, err
}

// rebuild serves a Rebuild request: it answers once the rebuilt window is
// durable.
func (a *accountActor) rebuild(m *request, now int64) {
	args := m.rebuild
	a.led.expire(now)
	from, held := a.led.liftable(now)
	switch {
	case args.check:
		// AwaitsRebuild: Rebuilt says whether a hold binds.
		*args.result = RebuildResult{Rebuilt: held}
		a.answer(m, response{status: a.status(now)})
		return
	case !held:
		a.answer(m, response{status: a.status(now)})
		return
	case from > args.asOf:
		a.answer(m, response{status: a.status(now), err: fmt.Errorf("actors: account %q: %w: rebuilt as of %v, the hold began at %v",
			a.account, ErrRebuildEarly, time.UnixMilli(args.asOf), time.UnixMilli(from))})
		return
	}
	listed, kept := a.led.rebuild(now, args.pins, args.skew, args.asOf)
	*args.result = RebuildResult{Rebuilt: true, Listed: listed, Kept: kept}
	w := persistence.AccountWrite{Account: a.account, ExpiresAt: a.expiry(now)}
	a.attachSnapshot(&w, now)
	a.appended = true
	reply, st, account := m.reply, a.status(now), a.account
	a.replied = true // by the journal callback below
	a.journalWrite(w, now, func(err error) {
		if err != nil {
			err = fmt.Errorf("actors: account %q: rebuild: %w: %w", account, ErrUnavailable, err)
		}
		if reply != nil {
			reply <- response{status: st, err: err}
		}
	})
	if a.waiting > 0 {
		// Slots the hold refused may be free now: the jobs due go first.
		a.runDue(now)
	}
}

// liftable returns the latest start of the holds in force at now that
// bind the account and that a rebuild lifts, and whether there is one.
func (l *ledger) liftable(now int64) (from int64, ok bool) {
	for _, r := range l.rules.earlier {
		if r.from != 0 && r.binds(now, l.rebuilt) {
			from, ok = max(from, r.from), true
		}
	}
	return from, ok
}

// rebuild replaces the window with the pins created at created (the
// listing's, by Pinterest's clock), each counted from its creation plus
// skew, merged with the stored pins that none of them matches (see
// Engine.Rebuild), and records asOf as the instant it was rebuilt. It
// returns how many listed pins and how many unmatched stored pins count
// at now. Call expire(now) first.
func (l *ledger) rebuild(now int64, created []int64, skew, asOf int64) (listed, kept int) {
	cut := now - l.win.width // a pin at or before it counts under no rule in force
	var cs []int64
	for _, c := range created {
		if c+skew > cut {
			cs = append(cs, c)
		}
	}
	slices.SortFunc(cs, cmp.Compare[int64])
	stored := l.win.Times(nil, now)
	out := make([]int64, 0, len(cs)+len(stored))
	// Each stored pin, oldest first, takes the oldest listed pin it may
	// match that no earlier one took: with windows of one length sliding
	// forward, that matches as many as can be.
	j := 0
	for _, t := range stored {
		for j < len(cs) && cs[j] < t-l.lease-skew {
			out = append(out, cs[j]+skew)
			j++
		}
		if j < len(cs) && cs[j] <= t+skew {
			out = append(out, max(t, cs[j]+skew))
			j++
			continue
		}
		out = append(out, t)
		kept++
	}
	for ; j < len(cs); j++ {
		out = append(out, cs[j]+skew)
	}
	slices.SortFunc(out, cmp.Compare[int64])
	l.win.init(l.rules.capacity(), time.Duration(l.win.width)*time.Millisecond)
	for _, t := range out {
		l.record(t)
	}
	l.lapsed = nil
	l.rebuilt = max(l.rebuilt, asOf)
	return len(cs), kept
}

// rebuiltFrom returns the instant the window was rebuilt as of, while a
// hold a rebuild lifts is in force at now (it matters no more after), or
// 0.
func (l *ledger) rebuiltFrom(now int64) int64 {
	if l.rebuilt == 0 {
		return 0
	}
	for _, r := range l.rules.earlier {
		if r.from != 0 && r.until > now {
			return l.rebuilt
		}
	}
	return 0
}
