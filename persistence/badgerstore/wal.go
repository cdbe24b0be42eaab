package badgerstore

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

// The index of the journal's events.
//
// Journal events are not stored one key per event: a Badger key costs a
// skiplist insertion, a value-log entry and later compaction work, which
// capped the engine far below what fsync allows (measured: the history
// of docs/benchmarks.md).
// Instead each Write puts all the events of its batch in one WAL record
// (codec.AppendWALRecord) inside its record of the journal's log (see
// log.go), numbered as that record, and the store keeps, in memory,
// an index of the events not yet folded into a snapshot: per account, the
// events in Seq order and the record each came from; per record, how many
// of its events are still needed. A snapshot makes an account's older
// events unneeded; a record whose events are all unneeded (or expired)
// leaves the index, and its log segment can go at a checkpoint. Memory
// and the size of the log are therefore proportional to the events not
// yet snapshotted, which the engine bounds by snapshotting every
// Config.SnapshotEvery events, at passivation, at shutdown and, after a
// crash, in its recovery pass. Opening the store reads the whole log once.

// walChunkBytes bounds one WAL record that Backup stores in Badger (see
// exportEvents). A store with small memtables uses a smaller bound, half
// its value threshold, so that records always live in the LSM tree.
const walChunkBytes = 256 << 10

// tailEvent is an event not yet folded into a snapshot.
type tailEvent struct {
	persistence.Event
	rec uint64 // WAL record holding it
	// exp is when the event expires, in Unix seconds (0: never), capped
	// to fit 32 bits (the year 2106).
	exp uint32
}

// expiresAt returns te's expiry in Unix seconds, 0 for never.
func (te *tailEvent) expiresAt() uint64 { return uint64(te.exp) }

// tailExpiry converts an expiry in Unix seconds to a tailEvent's, capping
// it (an event then lives until 2106 at the latest, never shorter).
func tailExpiry(sec uint64) uint32 { return uint32(min(sec, math.MaxUint32)) }

// walIndex is the in-memory index of the WAL: per account, its events not
// yet folded into a snapshot, ascending by Seq; per record, how many of
// its events those are.
type walIndex struct {
	// tails holds pointers so that a write looks each account up once,
	// when it plans, and appends through the pointer when it applies.
	tails map[string]*tail
	live  map[uint64]int
	next  uint64 // seq of the next record
	// peak is the most accounts tails held since it was made: a Go map
	// keeps the room of its peak, which the collector walks (see shrink).
	peak int

	scratch []tailEvent // reused by the writers (apply, purge)
}

func newWALIndex() walIndex {
	return walIndex{tails: make(map[string]*tail), live: make(map[uint64]int), next: 1}
}

// get returns account's events, decoded (nil if none).
func (x *walIndex) get(account string) []tailEvent {
	if t := x.tails[account]; t != nil {
		return t.all()
	}
	return nil
}

// add adds te to account's events, in Seq order, creating its tail if
// needed.
func (x *walIndex) add(account string, te tailEvent) {
	t := x.tails[account]
	if t == nil {
		t = &tail{}
		x.tails[account] = t
		x.peak = max(x.peak, len(x.tails))
	}
	t.push(te)
}

// has reports whether account has an event numbered seq.
func (x *walIndex) has(account string, seq uint64) bool {
	t := x.tails[account]
	if t == nil {
		return false
	}
	for it := t.iter(); it.next(); {
		if it.te.Seq == seq {
			return true
		}
	}
	return false
}

// events returns account's events with Seq above after that have not
// expired at second nowSec, as a new slice (nil if none).
func (x *walIndex) events(account string, after, nowSec uint64) []persistence.Event {
	t := x.tails[account]
	if t == nil {
		return nil
	}
	var out []persistence.Event
	for it := t.iter(); it.next(); {
		if te := &it.te; te.Seq > after && !expiredAt(te.expiresAt(), nowSec) {
			out = append(out, te.Event)
		}
	}
	return out
}

// hasLive reports whether account has an event that has not expired.
func (x *walIndex) hasLive(account string, nowSec uint64) bool {
	t := x.tails[account]
	if t == nil {
		return false
	}
	for it := t.iter(); it.next(); {
		if !expiredAt(it.te.expiresAt(), nowSec) {
			return true
		}
	}
	return false
}

// accounts returns, sorted, the accounts with events not expired at nowSec.
func (x *walIndex) accounts(nowSec uint64) []string {
	out := make([]string, 0, len(x.tails))
	for a := range x.tails {
		if x.hasLive(a, nowSec) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// indexed returns the accounts that have events in x, in no order.
func (x *walIndex) indexed() []string {
	return slices.AppendSeq(make([]string, 0, len(x.tails)), maps.Keys(x.tails))
}

// staleLimit returns the newest live record older than the newest keep;
// ok is false when there is none.
func (x *walIndex) staleLimit(keep int) (limit uint64, ok bool) {
	if len(x.live) <= max(keep, 0) {
		return 0, false
	}
	recs := slices.Sorted(maps.Keys(x.live))
	return recs[len(recs)-max(keep, 0)-1], true
}

// staleIn appends to out those of accounts with events in records up to
// limit, and returns it.
func (x *walIndex) staleIn(out, accounts []string, limit uint64) []string {
	for _, a := range accounts {
		t := x.tails[a]
		if t == nil {
			continue
		}
		old := false
		for it := t.iter(); !old && it.next(); {
			old = it.te.rec <= limit
		}
		if old {
			out = append(out, a)
		}
	}
	return out
}

// shrinkFloor is the fewest accounts a tails map must have held before
// shrink remakes it.
const shrinkFloor = 4096

// roomy reports whether tails holds under a quarter of its peak, of at
// least shrinkFloor accounts.
func (x *walIndex) roomy() bool {
	return x.peak >= shrinkFloor && len(x.tails) < x.peak/4
}

// shrink remakes tails at its present size. The tails themselves are
// kept: an update planned before holds pointers to them.
func (x *walIndex) shrink() {
	m := make(map[string]*tail, len(x.tails))
	maps.Copy(m, x.tails)
	x.tails, x.peak = m, len(m)
}

// expiredIn appends to out the accounts among accounts that hold an event
// expired at nowSec, and returns it.
func (x *walIndex) expiredIn(out, accounts []string, nowSec uint64) []string {
	for _, a := range accounts {
		t := x.tails[a]
		if t == nil {
			continue
		}
		for it := t.iter(); it.next(); {
			if expiredAt(it.te.expiresAt(), nowSec) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// expiredAt reports whether a key expiring at Unix second expiresAt (0:
// never) has expired at second nowSec.
func expiredAt(expiresAt, nowSec uint64) bool { return expiresAt != 0 && expiresAt <= nowSec }

// purge drops the events of accounts that expired at nowSec from x (Load
// hides them already: their account's window ended); a record left with
// no live event leaves the index, and its segment can go at the next
// checkpoint. Without it, events nobody can load would keep their
// records, and name their accounts in staleIn, until the store is opened
// again.
func (x *walIndex) purge(accounts []string, nowSec uint64) {
	live := func(te *tailEvent) bool { return !expiredAt(te.expiresAt(), nowSec) }
	drop := func(te *tailEvent) {
		if n := x.live[te.rec] - 1; n > 0 {
			x.live[te.rec] = n
		} else {
			delete(x.live, te.rec)
		}
	}
	for _, acct := range accounts {
		t := x.tails[acct]
		if t == nil {
			continue
		}
		x.scratch = t.filter(x.scratch, live, drop)
		if t.n == 0 {
			delete(x.tails, acct)
		}
	}
}

// walUpdate is the change one Write makes to the index, computed before the
// transaction and applied after it committed.
type walUpdate struct {
	adds   []walAdd          // events appended, in batch order
	covers map[string]uint64 // per account, the newest snapshot's Seq
	// coveredExp is, per account with a snapshot, the latest expiry
	// (Unix seconds, 0: never) of the stored events the snapshot covers:
	// the snapshot must not expire before them, or they would come back
	// when the store is opened again (their record may stay alive).
	coveredExp map[string]uint64
	delta      map[uint64]int // change of each record's live count
	dead       []uint64       // records left with no live event: deleted
	recs       []walRecord    // records to store
	next       uint64         // the index's next record seq after the write
}

type walAdd struct {
	account string
	ev      tailEvent
	// t is account's tail when the write was planned, nil if it had none;
	// apply appends to it without looking the account up again.
	t *tail
}

type walRecord struct {
	seq     uint64
	entries []codec.WALEntry
}

// plan computes the update that writing accounts (a slice of a Batch) makes
// to x, without changing x: events go to new WAL records, at most chunk
// bytes each, and snapshots drop the events they cover. An event that a
// snapshot of the same batch covers is not stored at all.
//
// u is reused from write to write, to keep allocation off the hot path.
func (x *walIndex) plan(accounts []persistence.AccountWrite, chunk int, u *walUpdate) {
	u.reset(x.next)
	for i := range accounts {
		if sn := accounts[i].Snapshot; sn != nil {
			if u.covers == nil {
				u.covers = make(map[string]uint64)
			}
			u.covers[accounts[i].Account] = max(u.covers[accounts[i].Account], sn.Seq)
		}
	}
	var cur *walRecord
	size := 0
	for i := range accounts {
		aw := &accounts[i]
		covered := u.covers[aw.Account]
		keep := aw.Events
		if covered > 0 {
			keep = nil
			for _, ev := range aw.Events {
				if ev.Seq > covered {
					keep = append(keep, ev)
				}
			}
		}
		exp := aw.ExpirySecond()
		var t *tail
		if len(keep) > 0 {
			t = x.tails[aw.Account]
		}
		// Store keep in the current record, opening new ones as each fills;
		// a long run of events may span several records.
		for len(keep) > 0 {
			if cur == nil || size+codec.WALEntryLen(aw.Account, 1) > chunk {
				cur = u.newRecord()
				size = 0
			}
			n := min(len(keep), max(1, (chunk-size-codec.WALEntryLen(aw.Account, 0))/codec.WALEventLen))
			part := keep[:n:n]
			keep = keep[n:]
			cur.entries = append(cur.entries, codec.WALEntry{Account: aw.Account, ExpiresAt: exp, Events: part})
			size += codec.WALEntryLen(aw.Account, n)
			for _, ev := range part {
				u.adds = append(u.adds, walAdd{account: aw.Account, ev: tailEvent{Event: ev, rec: cur.seq, exp: tailExpiry(exp)}, t: t})
			}
			u.delta[cur.seq] += n
		}
	}
	for acct, covered := range u.covers {
		exp, some := uint64(0), false
		t := x.tails[acct]
		if t == nil {
			continue
		}
		for it := t.iter(); it.next(); {
			if te := &it.te; te.Seq <= covered {
				u.delta[te.rec]--
				e := te.expiresAt()
				switch {
				case !some:
					exp, some = e, true
				case exp != 0 && (e == 0 || e > exp):
					exp = e
				}
			}
		}
		if some {
			if u.coveredExp == nil {
				u.coveredExp = make(map[string]uint64)
			}
			u.coveredExp[acct] = exp
		}
	}
	for rec, d := range u.delta {
		if d < 0 && x.live[rec]+d <= 0 {
			u.dead = append(u.dead, rec)
		}
	}
	slices.Sort(u.dead)
}

// reset empties u, keeping its memory, for a plan starting at record next.
func (u *walUpdate) reset(next uint64) {
	clear(u.adds) // their tail pointers would keep deleted tails alive
	u.adds = u.adds[:0]
	clear(u.covers)
	clear(u.coveredExp)
	if u.delta == nil {
		u.delta = make(map[uint64]int)
	}
	clear(u.delta)
	u.dead = u.dead[:0]
	for i := range u.recs {
		clear(u.recs[i].entries)
	}
	u.recs = u.recs[:0]
	u.next = next
}

// newRecord adds a record numbered u.next to u.recs, reusing the memory of
// an earlier write's record when there is one.
func (u *walUpdate) newRecord() *walRecord {
	if n := len(u.recs); n < cap(u.recs) {
		u.recs = u.recs[:n+1]
	} else {
		u.recs = append(u.recs, walRecord{})
	}
	r := &u.recs[len(u.recs)-1]
	r.seq, r.entries = u.next, r.entries[:0]
	u.next++
	return r
}

// apply installs an update whose transaction committed.
//
// The appended events go in first, through the tails plan found: no add
// is covered by a snapshot of the same write (plan left those out), so
// dropping the covered events afterwards gives the same index, and a tail
// emptied by a snapshot is removed only after every add used it.
func (x *walIndex) apply(u *walUpdate) {
	for i := range u.adds {
		a := &u.adds[i]
		t := a.t
		if t == nil {
			// New to the index at planning time; an earlier add of this
			// write may have created its tail.
			if t = x.tails[a.account]; t == nil {
				t = &tail{}
				x.tails[a.account] = t
			}
		}
		t.push(a.ev)
	}
	x.peak = max(x.peak, len(x.tails))
	for acct, covered := range u.covers {
		t := x.tails[acct]
		if t == nil {
			continue
		}
		x.scratch = t.filter(x.scratch, func(te *tailEvent) bool { return te.Seq > covered }, nil)
		if t.n == 0 {
			delete(x.tails, acct)
		}
	}
	for rec, d := range u.delta {
		if n := x.live[rec] + d; n > 0 {
			x.live[rec] = n
		} else {
			delete(x.live, rec)
		}
	}
	x.next = u.next
}

// walRecordName names a record in error messages.
func walRecordName(seq uint64) string { return "WAL record " + strconv.FormatUint(seq, 10) }

// wallSeconds is the wall-clock Unix second, the clock Badger's TTL uses.
func wallSeconds() uint64 { return uint64(max(time.Now().Unix(), 0)) }
