package actors

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/pinbot/pinbot/persistence"
)

// occupancy is the span during which a granted slot may count against the
// account on Pinterest's side: from its reservation until it is released,
// or until a window after the latest moment its pin can have been made.
type occupancy struct {
	start    int64
	deadline int64 // end of its lease
	pin      int64 // when its pin counts from; Never while pending or once released
	freed    int64 // when it was released; Never if not
	lapsed   bool  // its lease ran out unresolved: a pin at its deadline
	run      int   // the run (see simRule) that granted it
	late     int64 // when it was committed after its deadline; 0 if not
	// forgotten marks a pin the last snapshot no longer holds, as it
	// counted under no rule in force then: a later, longer window does
	// not count it (see "Changing the limit or the window" in
	// docs/design.md).
	forgotten bool
}

// end returns the end of o's occupancy under a window of width ms.
func (o *occupancy) end(width int64) int64 {
	if o.late != 0 && o.deadline+width <= o.late {
		// Committed after its deadline, once its pin (made by the
		// deadline) had left this window: the ledger counts it again from
		// the Commit, which can only make it stricter.
		return o.deadline + width
	}
	return o.counted(width)
}

// counted returns until when the ledger counts o under a window of width
// ms.
func (o *occupancy) counted(width int64) int64 {
	switch {
	case o.pin == Never:
		return o.freed // Never while pending
	case o.freed != Never:
		// A lapsed reservation given back: it counted as a pin at its
		// deadline until then.
		return min(o.freed, o.pin+width)
	}
	return o.pin + width
}

// simRule is the rule of one run of the simulated engine: the ledger is
// rebuilt from its snapshot and journal at each restart, and a restart
// may change the rule, as a restart of pinbot with another
// --pin-limit or --pin-window would.
type simRule struct {
	limit    int
	width    int64
	lease    int64
	from, to int64 // the run lasted [from, to); to is Never for the current run
}

// ledgerSim drives a ledger with a byte-coded script and checks it against
// a brute-force model after every step.
type ledgerSim struct {
	t              testing.TB
	runs           []simRule // every run so far; the last is the current one
	choices        []simRule // rules a restart picks from; none: no restarts
	stored         persistence.Rules
	led            *ledger
	now            int64
	slots          map[uint64]*occupancy // by reservation ID
	journal        []persistence.Event
	snap           persistence.Snapshot
	seq            uint64
	reservedEvents int
}

func newLedgerSim(t testing.TB, limit int, width, lease time.Duration) *ledgerSim {
	s := &ledgerSim{
		t:   t,
		led: newLedger(limit, width, lease), now: ms(monday), slots: map[uint64]*occupancy{},
	}
	s.runs = []simRule{{limit: limit, width: width.Milliseconds(), lease: lease.Milliseconds(), from: math.MinInt64, to: Never}}
	s.stored = persistence.Rules{Current: persistence.Rule{Limit: limit, Window: width.Milliseconds()}, Lease: lease.Milliseconds()}
	s.snap.NextID = 1
	return s
}

// cur is the current run's rule.
func (s *ledgerSim) cur() *simRule { return &s.runs[len(s.runs)-1] }

// widest is the longest window of every run so far.
func (s *ledgerSim) widest() int64 {
	var w int64
	for _, r := range s.runs {
		w = max(w, r.width)
	}
	return w
}

func (s *ledgerSim) event(e persistence.Event) {
	s.seq++
	e.Seq = s.seq
	s.journal = append(s.journal, e)
}

// step runs one scripted operation coded by op and arg.
func (s *ledgerSim) step(op, arg byte) {
	ops := byte(7)
	if len(s.choices) > 0 {
		ops = 8
	}
	cur := s.cur()
	switch op % ops {
	case 0: // advance a little
		s.now += int64(arg)
	case 1: // advance a lot
		s.now += int64(arg) * s.widest() / 64
	case 2: // reserve
		n := 1 + int(arg)%MaxBatch
		first, granted := s.led.reserve(s.now, n)
		if granted < 0 || granted > n {
			s.t.Fatalf("reserve(%d) granted %d", n, granted)
		}
		for i := 0; i < granted; i++ {
			s.slots[first+uint64(i)] = &occupancy{start: s.now, deadline: s.now + cur.lease, pin: Never, freed: Never, run: len(s.runs) - 1}
		}
		if granted > 0 {
			s.event(persistence.Event{Kind: persistence.EventReserve, ID: first, Count: uint32(granted), At: s.now, Deadline: s.now + cur.lease})
		}
	case 3, 4: // commit or release one pending reservation of this run
		ids := s.pendingIDs()
		if len(ids) == 0 {
			return
		}
		id := ids[int(arg)%len(ids)]
		o := s.slots[id]
		if op%ops == 3 {
			at := s.now - int64(arg%4)*cur.lease/2 // sometimes before the reservation
			t, _, ok := s.led.commit(s.now, id, at)
			if !ok {
				s.t.Fatalf("commit(%d) of a pending reservation failed", id)
			}
			// The pin time is at, clamped to [reservation time, now].
			if want := min(max(at, o.start), s.now); t != want {
				s.t.Fatalf("commit(%d, at %d) recorded the pin at %d, want %d (reserved %d, now %d)", id, at, t, want, o.start, s.now)
			}
			o.pin = t
			s.event(persistence.Event{Kind: persistence.EventCommit, ID: id, At: t})
		} else {
			if !s.led.release(s.now, id) {
				s.t.Fatalf("release(%d) of a pending reservation failed", id)
			}
			o.freed = s.now
			s.event(persistence.Event{Kind: persistence.EventRelease, ID: id})
		}
	case 5: // resolving an unknown or resolved reservation fails; a lapsed one only commits
		if _, _, ok := s.led.commit(s.now, uint64(arg)+1<<40, s.now); ok {
			s.t.Fatalf("commit of unknown reservation succeeded")
		}
		// Only this run's: a restart is a new process, and nobody is left
		// to resolve the reservations of the one before.
		var done []uint64
		for id, o := range s.slots {
			if o.run == len(s.runs)-1 && (o.pin != Never || o.freed != Never || o.deadline <= s.now) {
				done = append(done, id)
			}
		}
		if len(done) == 0 {
			break
		}
		slices.Sort(done)
		id := done[int(arg)%len(done)]
		o := s.slots[id]
		// A lapsed reservation (its lease ran out unresolved) counts as a
		// pin at its deadline while some rule counts it; a Commit within
		// that time moves the pin forward to the Commit's instant.
		lapsed := o.lapsed || (o.freed == Never && o.pin == Never && o.deadline <= s.now)
		counting := o.deadline+s.led.win.width > s.now
		// Each call expires what is due itself: alternate which goes
		// first. A lapsed reservation whose pin still counts is resolved
		// by either: a Commit moves its pin to now, a Release gives it
		// back.
		if arg%2 == 0 {
			ok := s.led.release(s.now, id)
			if lapsed && counting {
				if !ok {
					s.t.Fatalf("release(%d) of a lapsed reservation at %d failed (deadline %d)", id, s.now, o.deadline)
				}
				o.lapsed, o.freed = false, s.now
				s.event(persistence.Event{Kind: persistence.EventRelease, ID: id})
				lapsed = false
			} else if ok {
				s.t.Fatalf("release(%d) of a resolved reservation, or one lapsed out of the window, succeeded", id)
			}
		}
		t, late, ok := s.led.commit(s.now, id, s.now)
		switch {
		case lapsed && counting:
			if !ok || !late || t != s.now {
				s.t.Fatalf("late commit(%d) at %d: %d, %v; want the pin moved from its deadline %d to %d", id, s.now, t, ok, o.deadline, s.now)
			}
			o.lapsed, o.pin, o.late = false, t, t
			s.event(persistence.Event{Kind: persistence.EventCommit, ID: id, At: t})
		case ok:
			s.t.Fatalf("commit(%d) of a resolved reservation, or one lapsed out of the window, succeeded", id)
		}
		if s.led.release(s.now, id) {
			s.t.Fatalf("release(%d) of a resolved reservation succeeded", id)
		}
	case 6: // snapshot, dropping the journal
		s.led.expire(s.now)
		s.snap = s.led.snapshot(s.now, s.seq)
		s.journal = s.journal[:0]
		s.forget()
	case 7: // restart, under a rule picked by arg
		s.restart(s.choices[int(arg)%len(s.choices)])
	}
	s.syncExpired()
	s.check()
}

// restart rebuilds the ledger from the snapshot and the journal, as a
// restarted engine does, under rule r and the earlier rules still in
// force (nextRules, as startRules computes them).
func (s *ledgerSim) restart(r simRule) {
	s.cur().to = s.now
	r.from, r.to = s.now, Never
	s.runs = append(s.runs, r)
	next, _ := nextRules(s.stored, persistence.Rule{Limit: r.limit, Window: r.width}, r.lease, s.now)
	s.stored = next
	l := newRuledLedger(ruleSetOf(next).at(s.now), time.Duration(r.lease)*time.Millisecond)
	l.restore(s.snap)
	for _, e := range s.journal {
		l.apply(e)
	}
	s.led = l
}

// forget marks the pins the snapshot just taken does not hold: those that
// count under no rule in force (see ledgerSim.check).
func (s *ledgerSim) forget() {
	held := map[int64]int{}
	for _, t := range s.snap.Committed {
		held[t]++
	}
	var pins []*occupancy
	for _, o := range s.slots {
		if o.pin != Never && o.freed == Never && !o.forgotten {
			pins = append(pins, o)
		}
	}
	slices.SortFunc(pins, func(a, b *occupancy) int { return cmp.Compare(b.pin, a.pin) }) // newest first
	for _, o := range pins {
		if held[o.pin] > 0 {
			held[o.pin]--
			continue
		}
		if o.pin+s.led.win.width > s.now {
			s.t.Fatalf("at %d: the snapshot dropped the pin at %d, which counts until %d", s.now, o.pin, o.pin+s.led.win.width)
		}
		o.forgotten = true
	}
}

// pendingIDs returns this run's reservations that are pending.
func (s *ledgerSim) pendingIDs() []uint64 {
	var ids []uint64
	for id, o := range s.slots {
		if o.run == len(s.runs)-1 && o.pin == Never && o.freed == Never && o.deadline > s.now {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// syncExpired applies lease expiry to the model: the pin may have been
// made until the deadline, so it may count for a window from then.
func (s *ledgerSim) syncExpired() {
	for _, o := range s.slots {
		if o.pin == Never && o.freed == Never && o.deadline <= s.now {
			o.pin = o.deadline
			o.lapsed = true
		}
	}
}

// overlap returns how many slots occupy instant at under run i's rule.
// A slot granted in an earlier run occupies it only as long as both that
// run's window and run i's do: a pin is never freed earlier than the rule
// it was made under says, and a later, longer window counts it at least as
// long as that rule does.
func (s *ledgerSim) overlap(i int, at int64) int {
	n := 0
	for _, o := range s.slots {
		end := o.end(s.runs[i].width)
		if o.run < i {
			end = min(end, o.end(s.runs[o.run].width))
		}
		if o.start <= at && at < end {
			n++
		}
	}
	return n
}

// known returns how many slots the ledger knows of occupy instant at
// under a window of width ms: the pins it did not forget, and the pending
// reservations, which occupy it for good unless lapse is set, in which
// case they become pins at their deadlines.
func (s *ledgerSim) known(width, at int64, lapse bool) int {
	n := 0
	for _, o := range s.slots {
		end := o.counted(width)
		if lapse && o.pin == Never && o.freed == Never {
			end = o.deadline + width
		}
		if o.start <= at && at < end && !o.forgotten {
			n++
		}
	}
	return n
}

// pinsAndPending returns how many pins the ledger knows of count at now
// under a window of width ms, and how many slots are pending.
func (s *ledgerSim) pinsAndPending(width int64) (pins, pending int) {
	for _, o := range s.slots {
		switch {
		case o.freed != Never:
		case o.pin == Never:
			pending++
		case o.pin+width > s.now && !o.forgotten:
			pins++
		}
	}
	return pins, pending
}

// bindsUntil returns until when run i's rule binds: until every slot it
// granted has left its window (Never while one is pending); for the
// current run, Never.
func (s *ledgerSim) bindsUntil(i int) int64 {
	r := s.runs[i]
	if r.to == Never {
		return Never
	}
	until := int64(math.MinInt64)
	for _, o := range s.slots {
		if o.run == i {
			until = max(until, o.end(r.width))
		}
	}
	return until
}

// check verifies the safety invariant over all time so far and the
// exactness of the ledger now.
func (s *ledgerSim) check() {
	s.t.Helper()
	// Safety: every rule holds at every grant made while it bound, that
	// is from its run on until every slot granted under it has left its
	// window: at no such instant do more slots overlap under its window
	// than its limit. Slots of every run count. The maximum overlap is
	// reached at some interval start.
	for i, r := range s.runs {
		until := s.bindsUntil(i)
		for _, o := range s.slots {
			if o.run < i || o.start >= until {
				continue
			}
			if n := s.overlap(i, o.start); n > r.limit {
				for id, x := range s.slots {
					end := x.end(r.width)
					if x.run < i {
						end = min(end, x.end(s.runs[x.run].width))
					}
					if x.start <= o.start && o.start < end {
						s.t.Logf("slot %d: %+v", id, *x)
					}
				}
				s.t.Fatalf("at %d: %d slots in use under run %d's rule %d/%dms, which binds until %d", o.start, n, i, r.limit, r.width, until)
			}
		}
	}
	// Exactness: the ledger counts exactly the slots in use now under the
	// current rule.
	s.led.expire(s.now)
	cur := s.cur()
	pins, pending := s.pinsAndPending(cur.width)
	if got, want := s.led.used(s.now), pins+pending; got != want {
		s.t.Fatalf("at %d: ledger used %d, model %d (%d pins, %d pending)", s.now, got, want, pins, pending)
	}
	// A slot is free now exactly when every rule the ledger enforces now
	// has one. (The ledger ends an earlier rule at the latest instant a
	// pin made under it can leave its window, which may be later than the
	// model's bindsUntil: it is stricter, never looser.)
	fullAt := func(at int64, lapse bool) bool {
		rs := s.led.rules
		if s.known(rs.cur.width, at, lapse) >= rs.cur.limit {
			return true
		}
		for _, r := range rs.earlier {
			if at < r.until && s.known(r.width, at, lapse) >= r.limit {
				return true
			}
		}
		return false
	}
	if free := s.led.free(s.now) > 0; free == fullAt(s.now, false) {
		s.t.Fatalf("at %d: ledger free %v (%d), model full %v", s.now, free, s.led.free(s.now), !free)
	}
	// NextFree: not a slot frees earlier than the ledger says, and one
	// does then if the pending reservations become pins at their
	// deadlines.
	if next := s.led.freeAt(s.now, 1); next != s.now {
		if next < s.now {
			s.t.Fatalf("freeAt %d before now %d", next, s.now)
		}
		if !fullAt(next-1, false) {
			s.t.Fatalf("model has a free slot at %d, before freeAt %d", next-1, next)
		}
		if fullAt(next, true) {
			s.t.Fatalf("at %d: freeAt %d, but the model has no free slot then", s.now, next)
		}
	}
}

// checkReplay rebuilds the ledger from the last snapshot and the journal
// after it and compares it with the live one.
func (s *ledgerSim) checkReplay() {
	s.t.Helper()
	r := newRuledLedger(s.led.rules, time.Duration(s.cur().lease)*time.Millisecond)
	r.restore(s.snap)
	for _, e := range s.journal {
		r.apply(e)
	}
	w, lease := s.widest(), s.cur().lease
	for _, at := range []int64{s.now, s.now + lease, s.now + w/2, s.now + w + lease} {
		a, b := s.cloneLive(), r.clone()
		a.expire(at)
		b.expire(at)
		limit := a.rules.cur.limit
		if a.used(at) != b.used(at) || a.freeAt(at, 1) != b.freeAt(at, 1) || a.freeAt(at, limit) != b.freeAt(at, limit) {
			s.t.Fatalf("replay differs at %d: live used %d next %d, replayed used %d next %d",
				at, a.used(at), a.freeAt(at, 1), b.used(at), b.freeAt(at, 1))
		}
		// A late Commit must find the same lapsed reservations after a
		// replay as before it.
		if !slices.Equal(a.lapsedAt(at), b.lapsedAt(at)) {
			s.t.Fatalf("replay differs at %d: live lapsed %v, replayed %v", at, a.lapsedAt(at), b.lapsedAt(at))
		}
	}
	if r.nextID < s.led.nextID && len(s.led.pending) > 0 {
		s.t.Fatalf("replayed nextID %d below a live pending ID", r.nextID)
	}
}

func (s *ledgerSim) cloneLive() *ledger { return s.led.clone() }

func runScript(t testing.TB, script []byte) {
	s := newLedgerSim(t, 5, time.Second, 100*time.Millisecond)
	for i := 0; i+1 < len(script); i += 2 {
		s.step(script[i], script[i+1])
	}
	s.checkReplay()
}

// ruleChoices are the rules restarts pick from in runRulesScript, around
// runScript's 5 pins per second with 100 ms leases: the same, the limit
// lowered and raised, the window shortened and lengthened, both at once,
// and other leases.
var ruleChoices = []simRule{
	{limit: 5, width: 1000, lease: 100},
	{limit: 3, width: 1000, lease: 100},
	{limit: 8, width: 1000, lease: 100},
	{limit: 5, width: 200, lease: 100},
	{limit: 5, width: 3000, lease: 100},
	{limit: 2, width: 250, lease: 50},
	{limit: 8, width: 300, lease: 150},
	{limit: 3, width: 2500, lease: 20},
}

// runRulesScript is runScript with restarts, each under a rule of
// ruleChoices: whatever the changes, no rule is broken while it binds
// (see ledgerSim.check).
func runRulesScript(t testing.TB, script []byte) {
	s := newLedgerSim(t, 5, time.Second, 100*time.Millisecond)
	s.choices = ruleChoices
	for i := 0; i+1 < len(script); i += 2 {
		s.step(script[i], script[i+1])
	}
	s.checkReplay()
}

func TestLedgerRuleChangesProperty(t *testing.T) {
	for seed := uint64(0); seed < 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 13))
		script := make([]byte, 400)
		for i := range script {
			script[i] = byte(r.UintN(256))
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runRulesScript(t, script) })
	}
}

func FuzzLedgerRules(f *testing.F) {
	f.Add([]byte{2, 9, 2, 9, 7, 3, 2, 9, 1, 20, 2, 9, 7, 5, 0, 50, 2, 9})
	f.Add([]byte{2, 4, 2, 4, 7, 1, 2, 9, 0, 200, 2, 9, 7, 2, 1, 64, 2, 9, 6, 0, 7, 4, 2, 9})
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 4000 {
			script = script[:4000]
		}
		runRulesScript(t, script)
	})
}

func TestLedgerProperty(t *testing.T) {
	for seed := uint64(0); seed < 150; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		script := make([]byte, 400)
		for i := range script {
			script[i] = byte(r.UintN(256))
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runScript(t, script) })
	}
}

func FuzzLedger(f *testing.F) {
	f.Add([]byte{2, 9, 2, 9, 3, 0, 1, 200, 2, 3, 4, 1, 6, 0, 0, 50, 2, 1})
	f.Add([]byte{2, 4, 1, 10, 2, 4, 1, 64, 1, 64, 2, 9, 5, 5, 6, 6})
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 4000 {
			script = script[:4000]
		}
		runScript(t, script)
	})
}

func TestLedgerReserveAtLimit(t *testing.T) {
	l := newLedger(100, 12*time.Hour, 5*time.Minute)
	now := ms(monday)
	for i := 0; i < 95; i++ {
		first, g := l.reserve(now, 1)
		if g != 1 {
			t.Fatalf("reserve %d: granted %d", i, g)
		}
		l.commit(now, first, now)
	}
	first, g := l.reserve(now, 10)
	if g != 5 {
		t.Fatalf("reserve(10) at 95/100 granted %d want 5", g)
	}
	if _, g := l.reserve(now, 1); g != 0 {
		t.Fatalf("reserve at 100/100 granted %d", g)
	}
	// A release gives the slot back at once.
	l.release(now, first)
	if _, g := l.reserve(now, 3); g != 1 {
		t.Fatalf("after a release granted %d want 1", g)
	}
	// Expired leases count as pins made at the deadline.
	deadline := now + l.lease
	l.expire(deadline)
	if got := l.used(deadline + 12*3600_000 - 1); got != 5 {
		t.Fatalf("expired reservations: used %d want 5 just before deadline+12h", got)
	}
	if got := l.freeAt(deadline, 1); got != now+12*3600_000 {
		t.Fatalf("freeAt = %d want %d", got, now+12*3600_000)
	}
}

// TestLedgerGivesBackPendingArray: once a batch of reservations is
// resolved, the ledger does not keep the array that held them.
func TestLedgerGivesBackPendingArray(t *testing.T) {
	l := newLedger(100, 12*time.Hour, 5*time.Minute)
	now := int64(1_000_000)
	first, n := l.reserve(now, 10)
	if n != 10 {
		t.Fatalf("granted %d, want 10", n)
	}
	for id := first; id < first+10; id++ {
		if _, _, ok := l.commit(now, id, now); !ok {
			t.Fatalf("commit %d failed", id)
		}
	}
	if c := cap(l.pending); c != 0 {
		t.Errorf("pending array of capacity %d kept after every reservation was resolved", c)
	}
	if got := l.used(now); got != 10 {
		t.Errorf("used = %d, want 10", got)
	}
	// Expiry empties it too.
	first, _ = l.reserve(now, 10)
	l.expire(now + (5 * time.Minute).Milliseconds())
	if c := cap(l.pending); c != 0 || first == 0 {
		t.Errorf("pending array of capacity %d kept after the leases ran out", c)
	}
}

// TestLedgerLongSpansReplay drives the ledger model of ledger_test.go
// with the widest window and leases longer than it (deadlines recorded
// MaxWindow and more after other pins), with replays from snapshot and
// journal along the way.
func TestLedgerLongSpansReplay(t *testing.T) {
	type params struct {
		limit        int
		width, lease time.Duration
	}
	for _, p := range []params{
		{3, MaxWindow, 30 * 24 * time.Hour},
		{3, MaxWindow, time.Hour},
		{2, MaxWindow - time.Millisecond, 3 * MaxWindow},
		{4, 20 * 24 * time.Hour, 26 * 24 * time.Hour},
	} {
		for seed := uint64(0); seed < 40; seed++ {
			r := rand.New(rand.NewPCG(seed, 11))
			script := make([]byte, 600)
			for i := range script {
				script[i] = byte(r.UintN(256))
			}
			t.Run(fmt.Sprintf("%d/%v/%v/%d", p.limit, p.width, p.lease, seed), func(t *testing.T) {
				s := newLedgerSim(t, p.limit, p.width, p.lease)
				for i := 0; i+1 < len(script); i += 2 {
					s.step(script[i], script[i+1])
					if i%20 == 0 {
						s.checkReplay()
					}
				}
				s.checkReplay()
			})
		}
	}
}

// TestLedgerSmallStateInside: a Reserve of one slot and its Commit
// allocate nothing (the pending reservation and the first pins are held
// inside the ledger), and nothing stays pending once resolved, even after
// a batch.
func TestLedgerSmallStateInside(t *testing.T) {
	l := newLedger(100, 12*time.Hour, 5*time.Minute)
	now := ms(monday)
	if a := testing.AllocsPerRun(1, func() {
		first, n := l.reserve(now, 1)
		if n != 1 {
			t.Fatalf("granted %d, want 1", n)
		}
		if _, _, ok := l.commit(now, first, now); !ok {
			t.Fatalf("commit %d failed", first)
		}
	}); a != 0 {
		t.Fatalf("reserve and commit of 1 allocated %v times, want 0", a)
	}
	if c := cap(l.pending); c != 0 {
		t.Fatalf("pending of capacity %d kept once resolved", c)
	}
	first, n := l.reserve(now, 2) // more than the ledger holds: an array of their own
	if n != 2 || &l.pending[0] == &l.pendSmall[0] {
		t.Fatalf("granted %d, held in the ledger: %v", n, &l.pending[0] == &l.pendSmall[0])
	}
	l.release(now, first)
	l.release(now, first+1)
	if c := cap(l.pending); c != 0 {
		t.Fatalf("pending of capacity %d kept once resolved", c)
	}
}

// TestLedgerCloneSharesNothing: changes that move a clone's pins and
// pending reservation in place leave the original as it was, although
// both are held inside the ledger.
func TestLedgerCloneSharesNothing(t *testing.T) {
	l := newLedger(100, 12*time.Hour, 5*time.Minute)
	now := ms(monday)
	first, _ := l.reserve(now, 2)
	l.commit(now, first, now)
	l.commit(now+1, first+1, now+1)
	second, n := l.reserve(now+2, 1)
	if n != 1 || &l.win.ts[0] != &l.win.small[0] || &l.pending[0] != &l.pendSmall[0] {
		t.Fatal("the pins and the pending reservation are not held inside the ledger")
	}
	times, pending := l.win.Times(nil, now+3), slices.Clone(l.pending)

	c := l.clone()
	c.win.Remove(now)
	if _, _, ok := c.commit(now+3, second, now+3); !ok {
		t.Fatal("clone: commit failed")
	}
	if got := l.win.Times(nil, now+3); !slices.Equal(got, times) {
		t.Errorf("original's pins %v, want %v", got, times)
	}
	if !slices.Equal(l.pending, pending) {
		t.Errorf("original's pending %v, want %v", l.pending, pending)
	}
}
