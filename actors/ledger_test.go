package actors

import (
	"fmt"
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
	start, end int64 // end is Never while pending
	lapsed     bool  // its lease ran out unresolved: a pin at its deadline
}

// ledgerSim drives a ledger with a byte-coded script and checks it against
// a brute-force model after every step.
type ledgerSim struct {
	t              testing.TB
	limit          int
	width, lease   int64
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
		t: t, limit: limit, width: width.Milliseconds(), lease: lease.Milliseconds(),
		led: newLedger(limit, width, lease), now: ms(monday), slots: map[uint64]*occupancy{},
	}
	s.snap.NextID = 1
	return s
}

func (s *ledgerSim) event(e persistence.Event) {
	s.seq++
	e.Seq = s.seq
	s.journal = append(s.journal, e)
}

// step runs one scripted operation coded by op and arg.
func (s *ledgerSim) step(op, arg byte) {
	switch op % 7 {
	case 0: // advance a little
		s.now += int64(arg)
	case 1: // advance a lot
		s.now += int64(arg) * s.width / 64
	case 2: // reserve
		n := 1 + int(arg)%MaxBatch
		first, granted := s.led.reserve(s.now, n)
		if granted < 0 || granted > n {
			s.t.Fatalf("reserve(%d) granted %d", n, granted)
		}
		for i := 0; i < granted; i++ {
			s.slots[first+uint64(i)] = &occupancy{start: s.now, end: Never}
		}
		if granted > 0 {
			s.event(persistence.Event{Kind: persistence.EventReserve, ID: first, Count: uint32(granted), At: s.now, Deadline: s.now + s.lease})
		}
	case 3, 4: // commit or release one pending reservation
		ids := s.pendingIDs()
		if len(ids) == 0 {
			return
		}
		id := ids[int(arg)%len(ids)]
		if op%7 == 3 {
			at := s.now - int64(arg%4)*s.lease/2 // sometimes before the reservation
			t, _, ok := s.led.commit(s.now, id, at)
			if !ok {
				s.t.Fatalf("commit(%d) of a pending reservation failed", id)
			}
			// The pin time is at, clamped to [reservation time, now].
			if want := min(max(at, s.slots[id].start), s.now); t != want {
				s.t.Fatalf("commit(%d, at %d) recorded the pin at %d, want %d (reserved %d, now %d)", id, at, t, want, s.slots[id].start, s.now)
			}
			s.slots[id].end = t + s.width
			s.event(persistence.Event{Kind: persistence.EventCommit, ID: id, At: t})
		} else {
			if !s.led.release(s.now, id) {
				s.t.Fatalf("release(%d) of a pending reservation failed", id)
			}
			s.slots[id].end = s.now
			s.event(persistence.Event{Kind: persistence.EventRelease, ID: id})
		}
	case 5: // resolving an unknown or resolved reservation fails; a lapsed one only commits
		if _, _, ok := s.led.commit(s.now, uint64(arg)+1<<40, s.now); ok {
			s.t.Fatalf("commit of unknown reservation succeeded")
		}
		var done []uint64
		for id, o := range s.slots {
			if o.end != Never || o.start+s.lease <= s.now {
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
		// pin at its deadline for a window; a Commit within that window
		// moves the pin forward to the Commit's instant.
		lapsed := o.lapsed || (o.end == Never && o.start+s.lease <= s.now)
		deadline := o.start + s.lease
		counting := deadline+s.width > s.now
		// Each call expires what is due itself: alternate which goes
		// first. A lapsed reservation whose pin still counts is resolved
		// by either: a Commit moves its pin to now, a Release gives it
		// back.
		if arg%2 == 0 {
			ok := s.led.release(s.now, id)
			if lapsed && counting {
				if !ok {
					s.t.Fatalf("release(%d) of a lapsed reservation at %d failed (deadline %d)", id, s.now, deadline)
				}
				o.lapsed, o.end = false, s.now
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
				s.t.Fatalf("late commit(%d) at %d: %d, %v; want the pin moved from its deadline %d to %d", id, s.now, t, ok, deadline, s.now)
			}
			o.lapsed, o.end = false, t+s.width
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
	}
	s.syncExpired()
	s.check()
}

func (s *ledgerSim) pendingIDs() []uint64 {
	var ids []uint64
	for id, o := range s.slots {
		if o.end == Never && o.start+s.lease > s.now {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// syncExpired applies lease expiry to the model: the pin may have been
// made until the deadline, so it may count until deadline + window.
func (s *ledgerSim) syncExpired() {
	for _, o := range s.slots {
		if o.end == Never && o.start+s.lease <= s.now {
			o.end = o.start + s.lease + s.width
			o.lapsed = true
		}
	}
}

func (s *ledgerSim) modelUsed(at int64) int {
	n := 0
	for _, o := range s.slots {
		if o.start <= at && at < o.end {
			n++
		}
	}
	return n
}

// check verifies the safety invariant over all time so far and the
// exactness of the ledger now.
func (s *ledgerSim) check() {
	s.t.Helper()
	// Safety: at no instant do more slots overlap than the limit. The
	// maximum overlap is reached at some interval start.
	for _, o := range s.slots {
		if n := s.modelUsed(o.start); n > s.limit {
			s.t.Fatalf("at %d: %d slots in use, limit %d", o.start, n, s.limit)
		}
	}
	// Exactness: the ledger counts exactly the slots in use now.
	s.led.expire(s.now)
	if got, want := s.led.used(s.now), s.modelUsed(s.now); got != want {
		s.t.Fatalf("at %d: ledger used %d, model %d", s.now, got, want)
	}
	// NextFree: nothing frees earlier than the ledger says.
	if next := s.led.freeAt(s.now, 1); next != s.now {
		if next < s.now {
			s.t.Fatalf("freeAt %d before now %d", next, s.now)
		}
		if n := s.modelUsed(next - 1); n < s.limit {
			s.t.Fatalf("model has a free slot at %d, before freeAt %d", next-1, next)
		}
	}
}

// checkReplay rebuilds the ledger from the last snapshot and the journal
// after it and compares it with the live one.
func (s *ledgerSim) checkReplay() {
	s.t.Helper()
	r := newLedger(s.limit, time.Duration(s.width)*time.Millisecond, time.Duration(s.lease)*time.Millisecond)
	r.restore(s.snap)
	for _, e := range s.journal {
		r.apply(e)
	}
	for _, at := range []int64{s.now, s.now + s.lease, s.now + s.width/2, s.now + s.width + s.lease} {
		a, b := s.cloneLive(), r.clone()
		a.expire(at)
		b.expire(at)
		if a.used(at) != b.used(at) || a.freeAt(at, 1) != b.freeAt(at, 1) || a.freeAt(at, a.win.Limit()) != b.freeAt(at, b.win.Limit()) {
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

func (l *ledger) clone() *ledger {
	c := *l
	c.win.ts = slices.Clone(l.win.ts)
	c.pending = slices.Clone(l.pending)
	c.lapsed = slices.Clone(l.lapsed)
	return &c
}

func runScript(t testing.TB, script []byte) {
	s := newLedgerSim(t, 5, time.Second, 100*time.Millisecond)
	for i := 0; i+1 < len(script); i += 2 {
		s.step(script[i], script[i+1])
	}
	s.checkReplay()
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
