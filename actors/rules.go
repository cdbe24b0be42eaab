package actors

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
)

// Changing the limit or the window between runs (see docs/design.md,
// "Changing the limit or the window"): a pin is never freed earlier than
// the rule it was made under says. When the engine starts with a limit or
// window other than the last run's, the last run's rule stays in force
// until every pin made under it has left its window: until the start's
// engine time, plus the last run's lease (a reservation it granted may
// become a pin up to a lease later), plus its window. Meanwhile a slot is
// free only if it is free under every rule in force, and it frees at the
// latest of the instants each rule frees it. A change during a transition
// adds a rule: the earlier ones stay, each until its own end.
//
// A list, not one rule combining the strictest limit and the longest
// window: 100 pins per 12 hours followed by 50 per hour would combine into
// 50 per 12 hours, which neither rule asks for.

// rule is one limit a ledger enforces: at most limit pins in any width ms,
// until until (engine time; Never for the current rule). A restore's hold
// has from, the restore's instant: an account rebuilt from Pinterest's
// listing as of from or later is not bound by it (see rebuild.go); 0 for
// every other rule, which binds every account.
type rule struct {
	limit int
	width int64
	until int64
	from  int64
}

// implies reports whether every slot free under r is free under o too, at
// every instant o is in force and for every account o binds: r is no
// looser than o, lasts as long, and binds every account o binds (a rule
// that a rebuild lifts implies only rules lifted by the same rebuilds).
func (r rule) implies(o rule) bool {
	return r.limit <= o.limit && r.width >= o.width && r.until >= o.until &&
		(r.from == 0 || o.from != 0 && o.from <= r.from)
}

// binds reports whether r binds, at now, an account whose window was
// rebuilt from Pinterest's listing as of rebuilt (0: never).
func (r rule) binds(now, rebuilt int64) bool {
	return r.until > now && (r.from == 0 || r.from > rebuilt)
}

// ruleSet is what a ledger enforces: the current rule (Config.Limit and
// Config.Window) and the earlier rules still in force. It is never
// changed once made, so ledgers share it.
type ruleSet struct {
	cur     rule
	earlier []rule
	// sole is the current rule alone (itself when earlier is empty).
	sole *ruleSet
}

// soleRule returns a ruleSet of limit pins per width ms alone.
func soleRule(limit int, width int64) *ruleSet {
	rs := &ruleSet{cur: rule{limit: limit, width: width, until: Never}}
	rs.sole = rs
	return rs
}

// at returns the rules still in force at now: rs itself when none ended.
func (rs *ruleSet) at(now int64) *ruleSet {
	n := 0
	for _, r := range rs.earlier {
		if r.until > now {
			n++
		}
	}
	switch n {
	case len(rs.earlier):
		return rs
	case 0:
		return rs.sole
	}
	out := &ruleSet{cur: rs.cur, sole: rs.sole}
	for _, r := range rs.earlier {
		if r.until > now {
			out.earlier = append(out.earlier, r)
		}
	}
	return out
}

// capacity is the largest limit of rs, retention its longest window: a
// window holding that many pins for that long keeps every pin the rules
// need (a rule allowing limit pins never needs more than its newest
// limit), unless pins were recorded under a larger limit (see record).
func (rs *ruleSet) capacity() int {
	n := rs.cur.limit
	for _, r := range rs.earlier {
		n = max(n, r.limit)
	}
	return n
}

func (rs *ruleSet) retention() int64 {
	w := rs.cur.width
	for _, r := range rs.earlier {
		w = max(w, r.width)
	}
	return w
}

// newRuledLedger returns an empty ledger enforcing rs.
func newRuledLedger(rs *ruleSet, lease time.Duration) *ledger {
	l := &ledger{}
	l.init(rs, lease)
	return l
}

// init makes l an empty ledger enforcing rs, in place: an account actor
// holds its ledger as a value, one heap object fewer per resident account.
func (l *ledger) init(rs *ruleSet, lease time.Duration) {
	*l = ledger{nextID: 1, lease: lease.Milliseconds(), rules: rs}
	l.win.init(rs.capacity(), time.Duration(rs.retention())*time.Millisecond)
}

// record records a pin at t. The window's ring drops its oldest pin when
// full, which is safe when every pin was made under limits no larger
// than the rules in force (the oldest then counts under none of them):
// after a lowered limit, the stored state and the reservations of the
// last run may hold more pins than that. So when the ring is full and its
// oldest pin may still count (it is inside the longest window of the
// newest pin), the ring gets room for one more instead.
func (l *ledger) record(t int64) {
	w := &l.win
	if w.n > 0 && w.n == w.limit && w.at(0)+w.width > max(t, w.Newest()) {
		w.limit++
	}
	w.Record(t)
}

// usedUnder returns the slots in use at now under r: the pins r counts
// plus the pending reservations. Call expire(now) first.
func (l *ledger) usedUnder(now int64, r rule) int {
	return l.win.n - l.win.firstAfter(now-r.width) + len(l.pending)
}

// free returns how many slots are free at now under every rule in force
// that binds the account, possibly negative. Call expire(now) first.
func (l *ledger) free(now int64) int {
	free := l.rules.cur.limit - l.used(now)
	for _, r := range l.rules.earlier {
		if r.binds(now, l.rebuilt) {
			free = min(free, r.limit-l.usedUnder(now, r))
		}
	}
	return free
}

// blocked returns how many of the slots free at now under the current
// rule an earlier rule in force still refuses (see Status.Blocked). Call
// expire(now) first.
func (l *ledger) blocked(now int64) int {
	return max(l.rules.cur.limit-l.used(now), 0) - max(l.free(now), 0)
}

// slotsFreeAt returns the earliest instant at which k slots are free
// under every rule in force then, if nothing new is reserved, counting
// each pending reservation as a pin made at its deadline; Never if k
// exceeds the current limit. An earlier rule frees every slot at its end.
// Call expire(now) first.
func (l *ledger) slotsFreeAt(now int64, k int) int64 {
	t := l.slotsFreeUnder(now, k, l.rules.cur)
	for _, r := range l.rules.earlier {
		if r.binds(now, l.rebuilt) && t != Never {
			t = max(t, min(l.slotsFreeUnder(now, k, r), r.until))
		}
	}
	return t
}

// startRules returns the rules the engine enforces from now, its engine
// time at start, and stores them when they differ from the stored ones.
// The stored current rule, when other than cfg's, becomes an earlier rule
// in force until now plus the stored lease plus its window; earlier rules
// that ended by now go, and so do those another rule implies. A store with
// state but no rules was written by a pinbot that kept none, which always
// ran under DefaultLimit and DefaultWindow. A store that is not a
// persistence.RuleKeeper cannot carry rules: cfg's rule applies alone.
func startRules(ctx context.Context, cfg Config, store persistence.Store, now int64, log zerolog.Logger) (*ruleSet, error) {
	cur := persistence.Rule{Limit: cfg.Limit, Window: cfg.Window.Milliseconds()}
	rk, ok := store.(persistence.RuleKeeper)
	if !ok {
		log.Debug().Msg("the store keeps no rules: a change of the limit or window takes effect at once")
		return soleRule(cur.Limit, cur.Window), nil
	}
	stored, err := rk.Rules(ctx)
	if err != nil {
		return nil, fmt.Errorf("actors: reading the stored rules: %w", err)
	}
	if stored.Current.Limit == 0 {
		hw, err := store.HighWater(ctx)
		if err != nil {
			return nil, fmt.Errorf("actors: reading the stored high-water mark: %w", err)
		}
		if hw != 0 {
			stored = persistence.Rules{
				Current: persistence.Rule{Limit: DefaultLimit, Window: DefaultWindow.Milliseconds()},
				Lease:   DefaultConfig().Lease.Milliseconds(),
			}
		}
	}
	next, changed := nextRules(stored, cur, cfg.Lease.Milliseconds(), now)
	if !sameRules(stored, next) {
		if err := rk.SetRules(ctx, next); err != nil {
			return nil, fmt.Errorf("actors: storing the rules: %w", err)
		}
	}
	if changed {
		ev := log.Warn().Int("limit", cur.Limit).Dur("window", cfg.Window).
			Int("last_limit", stored.Current.Limit).Dur("last_window", time.Duration(stored.Current.Window)*time.Millisecond)
		if len(next.Earlier) == 0 {
			ev.Msg("the pin limit or window changed since the last run; the new rule implies the last one and applies alone")
		} else {
			var until int64
			for _, r := range next.Earlier {
				until = max(until, r.Until)
			}
			ev.Int("earlier_rules", len(next.Earlier)).Time("earlier_until", time.UnixMilli(until)).
				Msg("the pin limit or window changed since the last run; until the pins made under the earlier rules have left their windows, a slot is free only if every rule in force frees it")
		}
	}
	return ruleSetOf(next), nil
}

// nextRules returns the rules of a start at now under cur and lease (ms),
// after a run that stored stored, and whether cur differs from the last
// run's rule. See startRules.
func nextRules(stored persistence.Rules, cur persistence.Rule, lease, now int64) (next persistence.Rules, changed bool) {
	next = persistence.Rules{Current: cur, Lease: lease}
	for _, r := range stored.Earlier {
		if r.Until > now {
			next.Earlier = append(next.Earlier, r)
		}
	}
	last := stored.Current
	changed = last.Limit != 0 && (last.Limit != cur.Limit || last.Window != cur.Window)
	if changed {
		last.Until = now + stored.Lease + last.Window
		next.Earlier = append(next.Earlier, last)
	}
	next.Earlier = pruneRules(cur, next.Earlier)
	return next, changed
}

// ruleSetOf returns the ruleSet of r.
func ruleSetOf(r persistence.Rules) *ruleSet {
	rs := soleRule(r.Current.Limit, r.Current.Window)
	if len(r.Earlier) == 0 {
		return rs
	}
	all := &ruleSet{cur: rs.cur, sole: rs}
	for _, e := range r.Earlier {
		all.earlier = append(all.earlier, rule{limit: e.Limit, width: e.Window, until: e.Until, from: e.From})
	}
	return all
}

// pruneRules drops from earlier the rules that cur, or another earlier
// rule, implies (of two equal ones, the first stays).
func pruneRules(cur persistence.Rule, earlier []persistence.Rule) []persistence.Rule {
	conv := func(r persistence.Rule) rule {
		return rule{limit: r.Limit, width: r.Window, until: r.Until, from: r.From}
	}
	c := conv(persistence.Rule{Limit: cur.Limit, Window: cur.Window, Until: Never})
	var out []persistence.Rule
	for i, e := range earlier {
		re := conv(e)
		implied := c.implies(re)
		for j, o := range earlier {
			if implied {
				break
			}
			ro := conv(o)
			implied = j != i && ro.implies(re) && (!re.implies(ro) || j < i)
		}
		if !implied {
			out = append(out, e)
		}
	}
	return out
}

// sameRules reports whether a and b are the same rules.
func sameRules(a, b persistence.Rules) bool {
	return a.Current == b.Current && a.Lease == b.Lease && slices.Equal(a.Earlier, b.Earlier)
}

// initLedger makes l an empty ledger for an account actor loading now: it
// enforces the rules still in force.
func (e *Engine) initLedger(l *ledger) {
	l.init(e.rules.at(e.clock.Now()), e.cfg.Lease)
}
