package actors

import (
	"github.com/asynkron/protoactor-go/actor"
	"github.com/pinbot/pinbot/persistence"
)

// tryPark parks the account, idle for Config.ParkAfter, if it can (see
// slab): its actor stops and hands its state to the registry. Only a
// state that is stored whole parks, so that a parked account has nothing
// to write at Close, at a checkpoint or when evicted, and can be dropped
// without a write. When the state is not stored yet, tryPark snapshots
// it, and a later sweep parks the account once that write is durable
// and nothing changed since (or writes it again if it failed).
func (a *accountActor) tryPark(c actor.Context, now int64) {
	if a.stopping || !a.canPark() {
		return
	}
	if !a.durable() {
		if a.parkWrite == a.seq && a.snapSeq == a.seq && !a.inc.parkFailed.Swap(false) {
			return // its snapshot is on its way
		}
		w := persistence.AccountWrite{Account: a.account, ExpiresAt: a.expiry(now)}
		a.attachSnapshot(&w, now)
		a.appended = true
		a.parkWrite = a.seq
		inc, seq := a.inc, a.seq
		a.journalWrite(w, now, func(err error) {
			if err == nil {
				inc.markDurable(seq)
			} else {
				inc.parkFailed.Store(true)
			}
		})
		return
	}
	a.parking = true
	a.passivate(c)
}

// canPark reports whether the actor's state fits a slab: a loaded ledger
// with nothing pending or lapsed, no waiting or running jobs, done jobs
// only as stored, rules a slot can name.
func (a *accountActor) canPark() bool {
	if a.led == nil || a.loadErr != nil || a.dropped || a.jobsUnstored {
		return false
	}
	l := a.led
	return len(l.pending) == 0 && len(l.lapsed) == 0 &&
		len(a.jobs) == 0 && a.waiting == 0 && !a.timed &&
		(len(a.done) == 0 || a.eng.cfg.KeepDone > 0) &&
		(l.rules == a.eng.rules || l.rules == a.eng.rules.sole) &&
		l.win.n <= ringClassSize(ringClasses-1) &&
		len(a.account)+len(a.fence) <= maxParkName
}

// durable reports whether everything the actor holds is stored: a
// snapshot up to its last journal event is durable, and no grant waits to
// be rolled back.
func (a *accountActor) durable() bool {
	return a.snapSeq == a.seq && a.inc.durableSeq.Load() == a.seq && a.inc.settled()
}

// parkState returns the actor's state to park; canPark and durable hold.
func (a *accountActor) parkState() *parked {
	l := a.led
	p := &parked{
		slot: parkSlot{
			winLimit:    uint32(l.win.limit),
			winBase:     l.win.base,
			nextID:      l.nextID,
			hold:        l.hold,
			rebuilt:     l.rebuilt,
			durableHold: a.inc.durableHold.Load(),
			seq:         a.seq,
			snapSeq:     a.snapSeq,
			sinceSnap:   int64(a.sinceSnap),
			served:      int64(a.served),
			lastUsed:    a.lastUsed,
			nextJob:     a.nextJob,
			retryAt:     a.retryAt,
			hasFence:    a.fence != nil,
			hasDone:     len(a.done) > 0 || a.doneStored,
		},
		ring:  l.win.offsets(make([]uint32, 0, l.win.n)),
		fence: a.fence,
	}
	if l.rules == a.eng.rules {
		p.slot.ruleTag = ruleTagAll
	} else {
		p.slot.ruleTag = ruleTagSole
	}
	return p
}

// resume takes back the state p that a parked actor of the account left,
// instead of loading it: a new incarnation, whose writes of the past are
// all stored.
func (a *accountActor) resume(p *parked) {
	s := &p.slot
	rs := a.eng.rules
	if s.ruleTag == ruleTagSole {
		rs = rs.sole
	}
	led := &a.ledv
	led.init(rs, a.eng.cfg.Lease)
	led.win.restoreOffsets(s.winBase, int(s.winLimit), p.ring)
	led.nextID, led.hold, led.rebuilt = s.nextID, s.hold, s.rebuilt
	a.seq, a.snapSeq, a.sinceSnap = s.seq, s.snapSeq, int(s.sinceSnap)
	a.served, a.lastUsed = int(s.served), s.lastUsed
	a.nextJob, a.retryAt = s.nextJob, s.retryAt
	a.doneStored = s.hasDone
	a.fence = nil
	if s.hasFence {
		a.fence = p.fence
		if a.fence == nil {
			a.fence = []byte{}
		}
	}
	a.loadErr = nil
	a.led = led
	a.inc = &a.incv
	a.inc.durableHold.Store(s.durableHold)
	a.inc.durableSeq.Store(s.seq)
}
