package actors

import (
	"cmp"
	"slices"
	"time"

	"github.com/pinbot/pinbot/persistence"
)

// MaxBatch is the most slots one Reserve may ask for: a /pin batch holds at
// most 10 messages.
const MaxBatch = 10

// ledger is the whole rate-limit state of one account: the window of pins
// made, the reservations granted and not yet resolved, and the journal
// position. Every pending reservation counts as a used slot, so a pin whose
// outcome is not known yet can never let the window overflow.
//
// A ledger never reads a clock and is not safe for simultaneous use; the
// account actor owns it.
type ledger struct {
	win Window
	// pending is nil when empty, else ascending by ID. A lone one (the
	// bot reserves one slot at a time) is held in pendSmall, inside the
	// ledger, so that an account between a Reserve and its Commit costs
	// the collector no object for it.
	pending   []persistence.Pending
	pendSmall [1]persistence.Pending
	// lapsed are reservations whose lease ran out unresolved, each counted
	// as a pin at its deadline (an entry of win), ascending by ID. They
	// are kept while that pin counts, so that a Commit arriving after the
	// lease can move the pin forward. At most limit of them count at once.
	lapsed []persistence.Lapsed
	nextID uint64 // next reservation ID; IDs start at 1
	lease  int64  // ms a reservation may stay unresolved
	hold   int64  // nothing is granted before this instant
	// rebuilt is the instant as of which the window was rebuilt from
	// Pinterest's listing (see rebuild.go), 0 if never: a restore's hold
	// that began by then binds the account no more.
	rebuilt int64

	// rules are the limits enforced, never changed (ledgers share them).
	// win's width is the longest window of the rules and its limit, the
	// room of its ring, at least their largest limit (see rules.go), so
	// that it keeps every pin some rule counts. Without a change of the
	// rule both are the current rule's.
	rules *ruleSet
}

// newLedger returns an empty ledger enforcing limit pins per width alone.
func newLedger(limit int, width, lease time.Duration) *ledger {
	return newRuledLedger(soleRule(limit, width.Milliseconds()), lease)
}

// expire turns every reservation whose lease ran out by now into a pin made
// at its deadline: its outcome is unknown, so it is counted for as long as a
// pin made at the latest possible moment would be. Such a reservation is
// remembered as lapsed while its pin counts; lapsed ones whose pins no
// longer count at now are forgotten. It returns how many reservations
// lapsed.
func (l *ledger) expire(now int64) int {
	if len(l.lapsed) > 0 {
		l.forgetLapsed(now)
	}
	keep := l.pending[:0]
	for _, p := range l.pending {
		if p.Deadline <= now {
			l.record(p.Deadline)
			l.addLapsed(persistence.Lapsed{ID: p.ID, Deadline: p.Deadline})
		} else {
			keep = append(keep, p)
		}
	}
	lapsed := len(l.pending) - len(keep)
	clear(l.pending[len(keep):])
	l.pending = keep
	l.trimPending()
	return lapsed
}

// forgetLapsed drops the lapsed reservations whose pins no longer count at
// now: a Commit of one of them can no longer change any count.
func (l *ledger) forgetLapsed(now int64) {
	l.lapsed = slices.DeleteFunc(l.lapsed, func(lp persistence.Lapsed) bool { return l.lapsedGone(lp, now) })
	if len(l.lapsed) == 0 {
		l.lapsed = nil
	}
}

// lapsedGone reports whether lp's pin, made at its deadline, no longer
// counts at now.
func (l *ledger) lapsedGone(lp persistence.Lapsed, now int64) bool {
	return lp.Deadline <= now-l.win.width
}

// addLapsed remembers lp, keeping the list ascending by ID.
func (l *ledger) addLapsed(lp persistence.Lapsed) {
	i := len(l.lapsed)
	for i > 0 && l.lapsed[i-1].ID > lp.ID {
		i--
	}
	l.lapsed = slices.Insert(l.lapsed, i, lp)
}

// findLapsed returns the index of lapsed reservation id, or -1.
func (l *ledger) findLapsed(id uint64) int {
	return indexByID(l.lapsed, id, func(lp persistence.Lapsed) uint64 { return lp.ID })
}

// removeLapsed removes lapsed reservation i and returns it.
func (l *ledger) removeLapsed(i int) persistence.Lapsed {
	lp := l.lapsed[i]
	l.lapsed = slices.Delete(l.lapsed, i, i+1)
	if len(l.lapsed) == 0 {
		l.lapsed = nil
	}
	return lp
}

// settleLapsed resolves lapsed reservation i as a pin made at t: its pin,
// counted at the deadline, moves forward to t (never backward), and it is
// no longer lapsed. It returns the pin's time.
func (l *ledger) settleLapsed(i int, t int64) int64 {
	lp := l.removeLapsed(i)
	if t <= lp.Deadline {
		return lp.Deadline
	}
	l.win.Move(lp.Deadline, t)
	return t
}

// clone returns a copy of l that shares nothing l changes, for working
// out what would happen without changing l.
func (l *ledger) clone() *ledger {
	c := *l
	// Clone, never share: the window's ring and the pending array may be
	// held inside l itself.
	c.win.ts = slices.Clone(l.win.ts)
	c.pending = slices.Clone(l.pending)
	c.lapsed = slices.Clone(l.lapsed)
	return &c
}

// trimPending gives back the array of pending reservations once none is
// left: an idle account keeps no array of its own (a batch of ten reserved
// at once would otherwise keep its array for as long as the actor lives),
// and a next lone reservation uses pendSmall.
func (l *ledger) trimPending() {
	if len(l.pending) == 0 {
		l.pending = nil
	}
}

// removePending removes the pending reservation at index i.
func (l *ledger) removePending(i int) {
	l.pending = slices.Delete(l.pending, i, i+1)
	l.trimPending()
}

// used returns the slots in use at now under the current rule: pins that
// count plus pending reservations. Call expire(now) first.
func (l *ledger) used(now int64) int { return l.usedUnder(now, l.rules.cur) }

// reserve grants up to n slots at now and returns the first reservation ID
// and how many were granted (IDs first..first+granted-1).
func (l *ledger) reserve(now int64, n int) (first uint64, granted int) {
	l.expire(now)
	if now < l.hold {
		return 0, 0
	}
	granted = min(n, l.free(now))
	if granted <= 0 {
		return 0, 0
	}
	first = l.nextID
	l.addPending(first, granted, now, now+l.lease)
	return first, granted
}

func (l *ledger) addPending(first uint64, count int, at, deadline int64) {
	if l.pending == nil && count <= len(l.pendSmall) {
		l.pending = l.pendSmall[:0]
	}
	for i := 0; i < count; i++ {
		l.pending = append(l.pending, persistence.Pending{ID: first + uint64(i), ReservedAt: at, Deadline: deadline})
	}
	if next := first + uint64(count); next > l.nextID {
		l.nextID = next
	}
}

// find returns the index of pending reservation id, or -1.
func (l *ledger) find(id uint64) int {
	return indexByID(l.pending, id, func(p persistence.Pending) uint64 { return p.ID })
}

// indexByID returns the index of the element of s, ascending by idOf, whose
// ID is id, or -1.
func indexByID[T any](s []T, id uint64, idOf func(T) uint64) int {
	i, ok := slices.BinarySearchFunc(s, id, func(e T, id uint64) int { return cmp.Compare(idOf(e), id) })
	if !ok {
		return -1
	}
	return i
}

// commit turns reservation id into a pin. The pin time is at, kept within
// [reservation time, now]: the pin cannot predate its reservation nor follow
// the report of it. A reservation whose lease ran out already counts as a
// pin at its deadline; that pin moves forward to at (kept within
// [deadline, now]), never backward, so a late answer can only make the
// count stricter. It returns the recorded time and whether id had lapsed,
// or ok false when id is neither pending nor lapsed (unknown, resolved
// already, or lapsed so long ago that its pin no longer counts).
func (l *ledger) commit(now int64, id uint64, at int64) (t int64, late, ok bool) {
	l.expire(now)
	if i := l.find(id); i >= 0 {
		p := l.pending[i]
		l.removePending(i)
		t := min(max(at, p.ReservedAt), max(now, p.ReservedAt))
		l.record(t)
		return t, false, true
	}
	if i := l.findLapsed(id); i >= 0 {
		return l.settleLapsed(i, min(at, now)), true, true
	}
	return 0, false, false
}

// release frees reservation id, whose pin definitely did not happen; a
// lapsed one gives back the pin it counted as.
func (l *ledger) release(now int64, id uint64) bool {
	l.expire(now)
	if i := l.find(id); i >= 0 {
		l.removePending(i)
		return true
	}
	if i := l.findLapsed(id); i >= 0 {
		l.dropLapsed(i)
		return true
	}
	return false
}

// dropLapsed removes lapsed reservation i and the pin it counted as.
func (l *ledger) dropLapsed(i int) {
	l.win.Remove(l.removeLapsed(i).Deadline)
}

// holdUntil keeps every slot from being granted before until; a later
// hold replaces an earlier one, an earlier one changes nothing.
func (l *ledger) holdUntil(until int64) { l.hold = max(l.hold, until) }

// freeAt returns the earliest instant at which k slots are free if nothing
// new is reserved, counting each pending reservation as a pin made at its
// deadline (the latest it can be counted from), and no earlier than the
// end of a hold. Call expire(now) first.
func (l *ledger) freeAt(now int64, k int) int64 {
	t := l.slotsFreeAt(now, k)
	if t == Never {
		return t
	}
	return max(t, l.hold)
}

// slotsFreeUnder is slotsFreeAt under rule r alone.
func (l *ledger) slotsFreeUnder(now int64, k int, r rule) int64 {
	if k > r.limit {
		return Never
	}
	used := l.usedUnder(now, r)
	need := k - (r.limit - used)
	if need <= 0 {
		return now
	}
	// Merge live pins (ascending) with pending deadlines (ascending by
	// deadline) and take the need-th oldest.
	first := l.win.firstAfter(now - r.width)
	if len(l.pending) == 0 {
		return l.win.at(first+need-1) + r.width
	}
	deadlines := make([]int64, 0, len(l.pending))
	for _, p := range l.pending {
		deadlines = append(deadlines, p.Deadline)
	}
	slices.Sort(deadlines)
	i, j := first, 0
	var t int64
	for c := 0; c < need; c++ {
		if j >= len(deadlines) || (i < l.win.n && l.win.at(i) <= deadlines[j]) {
			t = l.win.at(i)
			i++
		} else {
			t = deadlines[j]
			j++
		}
	}
	return t + r.width
}

// newest returns the latest instant any part of the state refers to.
func (l *ledger) newest() int64 {
	t := max(l.win.Newest(), l.hold, l.rebuilt)
	for _, p := range l.pending {
		t = max(t, p.Deadline)
	}
	return t
}

// expiresAt is the instant from which the state holds nothing that counts
// under any rule in force when the ledger was made.
func (l *ledger) expiresAt() int64 {
	n := l.newest()
	if n == 0 {
		return 0
	}
	return n + l.win.width
}

// apply replays one journal event. Replay reads no clock: expiry happens
// at the next operation, exactly as it would have without the restart.
func (l *ledger) apply(e persistence.Event) {
	switch e.Kind {
	case persistence.EventReserve:
		l.addPending(e.ID, int(e.Count), e.At, e.Deadline)
	case persistence.EventCommit:
		if e.ID == ObservedID {
			// A pin made elsewhere (Engine.Observe): no reservation, and
			// recorded as Observe recorded it.
			l.observe(e.At)
			return
		}
		switch i, j := l.find(e.ID), l.findLapsed(e.ID); {
		case i >= 0:
			l.removePending(i)
			l.record(e.At)
		case j >= 0:
			l.settleLapsed(j, e.At)
		default:
			// Record even when the reservation is unknown (its event may
			// have expired away): a pin that happened is never dropped.
			l.record(e.At)
		}
		if e.ID >= l.nextID {
			l.nextID = e.ID + 1
		}
	case persistence.EventHold:
		l.holdUntil(e.At)
	case persistence.EventRelease:
		if i := l.find(e.ID); i >= 0 {
			l.removePending(i)
		} else if i := l.findLapsed(e.ID); i >= 0 {
			l.dropLapsed(i)
		}
		if e.ID >= l.nextID {
			l.nextID = e.ID + 1
		}
	}
}

// restore loads a snapshot.
func (l *ledger) restore(s persistence.Snapshot) {
	for _, t := range s.Committed {
		l.record(t)
	}
	l.pending = append(l.pending[:0], s.Pending...)
	slices.SortFunc(l.pending, func(a, b persistence.Pending) int { return cmp.Compare(a.ID, b.ID) })
	l.lapsed = slices.Clone(s.Lapsed)
	slices.SortFunc(l.lapsed, func(a, b persistence.Lapsed) int { return cmp.Compare(a.ID, b.ID) })
	l.hold = s.HoldUntil
	l.rebuilt = s.Rebuilt
	l.nextID = max(s.NextID, 1)
	for _, p := range l.pending {
		l.nextID = max(l.nextID, p.ID+1)
	}
	for _, lp := range l.lapsed {
		l.nextID = max(l.nextID, lp.ID+1)
	}
}

// snapshot captures the state, dropping pins that no longer count at now.
func (l *ledger) snapshot(now int64, seq uint64) persistence.Snapshot {
	return persistence.Snapshot{
		Seq:       seq,
		NextID:    l.nextID,
		Committed: l.win.Times(nil, now),
		Pending:   slices.Clone(l.pending),
		HoldUntil: l.holdFrom(now),
		Lapsed:    l.lapsedAt(now),
		Rebuilt:   l.rebuiltFrom(now),
	}
}

// lapsedAt returns a copy of the lapsed reservations whose pins count at
// now, or nil.
func (l *ledger) lapsedAt(now int64) []persistence.Lapsed {
	var out []persistence.Lapsed
	for _, lp := range l.lapsed {
		if !l.lapsedGone(lp, now) {
			out = append(out, lp)
		}
	}
	return out
}

// holdFrom returns the hold still in force at now, or 0.
func (l *ledger) holdFrom(now int64) int64 {
	if l.hold > now {
		return l.hold
	}
	return 0
}
