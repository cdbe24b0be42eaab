package badgerstore

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
	"weak"

	"github.com/pinbot/pinbot/persistence"
)

// TestBadgerWALLifecycle follows records from write to deletion: one
// record per batch, whatever its number of accounts; kept while any
// account still needs one of its events, across restarts; deleted in the
// write whose snapshot makes it spent.
func TestBadgerWALLifecycle(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "a", Events: []persistence.Event{reserve(1, 1, t0), commit(2, 1, t1)}},
		{Account: "b", Events: []persistence.Event{reserve(1, 7, t0)}},
		{Account: "c", Events: []persistence.Event{reserve(1, 9, t0)}},
	}})
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "a", Events: []persistence.Event{reserve(3, 2, t2)}},
	}})
	if got, want := walSeqs(t, s), []uint64{1, 2}; !slices.Equal(got, want) {
		t.Fatalf("WAL records = %v, want %v (one per batch)", got, want)
	}
	if got, want := journaled(t, s), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("Journaled = %q, want %q", got, want)
	}

	// Snapshotting a covers its events in both records; record 1 stays for
	// b and c, record 2 is spent and deleted in the same write.
	snapA := &persistence.Snapshot{Seq: 3, NextID: 3, Committed: []int64{t1}, Pending: []persistence.Pending{{ID: 2, ReservedAt: t2, Deadline: t2 + 30_000}}}
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Snapshot: snapA}}})
	if got, want := walSeqs(t, s), []uint64{1}; !slices.Equal(got, want) {
		t.Errorf("WAL records after a's snapshot = %v, want %v", got, want)
	}

	// A restart reads the log back: a's events are covered by its snapshot,
	// b's and c's are still there.
	s = reopen(t, s, dir)
	checkLoaded(t, s, "a", persistence.Loaded{Snapshot: *snapA})
	checkLoaded(t, s, "b", persistence.Loaded{Events: []persistence.Event{reserve(1, 7, t0)}})
	checkLoaded(t, s, "c", persistence.Loaded{Events: []persistence.Event{reserve(1, 9, t0)}})
	if got, want := journaled(t, s), []string{"b", "c"}; !slices.Equal(got, want) {
		t.Errorf("Journaled after reopen = %q, want %q", got, want)
	}
	if got, want := accounts(t, s), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("Accounts after reopen = %q, want %q", got, want)
	}

	// New records are numbered on from the log's last one (records 2
	// and 3 are spent, and numbers are never reused).
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "b", Snapshot: &persistence.Snapshot{Seq: 1, NextID: 8, Pending: []persistence.Pending{{ID: 7, ReservedAt: t0, Deadline: t0 + 30_000}}}},
		{Account: "d", Events: []persistence.Event{reserve(1, 1, t3)}},
	}})
	if got, want := walSeqs(t, s), []uint64{1, 4}; !slices.Equal(got, want) {
		t.Errorf("WAL records = %v, want %v", got, want)
	}
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "c", Snapshot: &persistence.Snapshot{Seq: 1, NextID: 10}},
		{Account: "d", Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2}},
	}})
	if got := walSeqs(t, s); len(got) != 0 {
		t.Errorf("WAL records after every account's snapshot = %v, want none", got)
	}
	if got := journaled(t, s); len(got) != 0 {
		t.Errorf("Journaled = %q, want none", got)
	}
}

// TestBadgerWALChunks: a batch too big for one record is stored in several,
// and an account's events may span records; all read back in order.
func TestBadgerWALOneRecordPerBatch(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	var b persistence.Batch
	want := map[string][]persistence.Event{}
	for i := range 40 {
		acct := fmt.Sprintf("account-%02d", i)
		aw := persistence.AccountWrite{Account: acct}
		for seq := range uint64(100) {
			aw.Events = append(aw.Events, reserve(seq+1, seq+1, t0+int64(seq)))
		}
		want[acct] = aw.Events
		b.Accounts = append(b.Accounts, aw)
	}
	mustWrite(t, s, &b)
	if n := len(walSeqs(t, s)); n != 1 {
		t.Errorf("4,000 events of one batch stored in %d journal records, want 1", n)
	}
	s = reopen(t, s, dir)
	for acct, evs := range want {
		checkLoaded(t, s, acct, persistence.Loaded{Events: evs})
	}
}

// TestBadgerWALExpiry: events whose account state expired are not loaded,
// and at the next open their records are deleted as spent.
func TestBadgerWALExpiry(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	past := time.Now().Add(-time.Hour).UnixMilli()
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "old", Events: []persistence.Event{reserve(1, 1, t0)}, ExpiresAt: past}}})
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "new", Events: []persistence.Event{reserve(1, 1, t0)}}}})
	checkLoaded(t, s, "old", persistence.Loaded{})
	if got, want := accounts(t, s), []string{"new"}; !slices.Equal(got, want) {
		t.Errorf("Accounts = %q, want %q", got, want)
	}
	s = reopen(t, s, dir)
	if got, want := walSeqs(t, s), []uint64{2}; !slices.Equal(got, want) {
		t.Errorf("WAL records after reopen = %v, want %v", got, want)
	}
	checkLoaded(t, s, "new", persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t0)}})
}

// TestBadgerWALIndexModel writes random batches, in which one account may
// appear several times, with events before and after a snapshot of the
// same batch, and checks after every write, and after reopening, that each
// account loads exactly its newest snapshot and the events after it. It
// covers the order in which a write updates the index (appended events
// first, then the ones a snapshot covers).
func TestBadgerWALIndexModel(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	rng := rand.New(rand.NewPCG(7, 11))
	names := []string{"a", "b", "c", "d", "e"}
	type model struct {
		seq  uint64 // last event's Seq
		snap uint64 // newest snapshot's Seq (0: none)
		evs  []persistence.Event
	}
	m := map[string]*model{}
	for _, n := range names {
		m[n] = &model{}
	}
	check := func(step int) {
		t.Helper()
		for _, n := range names {
			want := persistence.Loaded{Events: m[n].evs}
			if m[n].snap > 0 {
				want.Snapshot = persistence.Snapshot{Seq: m[n].snap, NextID: m[n].snap + 1}
			}
			l := mustLoad(t, s, n)
			if l.Snapshot.Seq != want.Snapshot.Seq || !slices.Equal(l.Events, want.Events) {
				t.Fatalf("step %d: account %s loads snapshot %d and events %v, want snapshot %d and %v",
					step, n, l.Snapshot.Seq, l.Events, want.Snapshot.Seq, want.Events)
			}
		}
	}
	for step := range 300 {
		var b persistence.Batch
		for range 1 + rng.IntN(6) {
			n := names[rng.IntN(len(names))]
			mo := m[n]
			aw := persistence.AccountWrite{Account: n}
			for range rng.IntN(3) {
				mo.seq++
				ev := reserve(mo.seq, mo.seq, t0+int64(mo.seq))
				aw.Events = append(aw.Events, ev)
				mo.evs = append(mo.evs, ev)
			}
			if rng.IntN(3) == 0 && mo.seq > mo.snap {
				// A snapshot up to a Seq at or below the last event, some
				// of this very write's events included.
				mo.snap = mo.snap + 1 + uint64(rng.IntN(int(mo.seq-mo.snap)))
				aw.Snapshot = &persistence.Snapshot{Seq: mo.snap, NextID: mo.snap + 1}
				mo.evs = slices.DeleteFunc(mo.evs, func(e persistence.Event) bool { return e.Seq <= mo.snap })
			}
			if len(mo.evs) == 0 {
				mo.evs = nil
			}
			b.Accounts = append(b.Accounts, aw)
		}
		mustWrite(t, s, &b)
		check(step)
		if step%50 == 49 {
			s = reopen(t, s, dir)
			check(step)
		}
	}
}

// TestBadgerWALTailShrinks: the memory an account's tail grew to while
// events piled up goes back once a snapshot covers most of them, and an
// event takes far less than a decoded tailEvent.
func TestBadgerWALTailShrinks(t *testing.T) {
	s := newTestStore(t)
	for seq := uint64(1); seq <= 40; seq++ {
		ev := reserve(seq, seq, t0+int64(seq)*1000)
		if seq%2 == 0 {
			ev = commit(seq, seq-1, t0+int64(seq)*1000)
		}
		mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Events: []persistence.Event{ev}}}})
	}
	s.Settle() // the index is read directly below
	tl := s.wal.tails["a"]
	if tl.n != 40 || len(tl.buf) > 40*16 {
		t.Fatalf("tail holds %d events in %d bytes, want 40 in at most %d", tl.n, len(tl.buf), 40*16)
	}
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Snapshot: &persistence.Snapshot{Seq: 39, NextID: 40}}}})
	s.Settle()
	evs := s.wal.get("a")
	if len(evs) != 1 || evs[0].Seq != 40 {
		t.Fatalf("tail after the snapshot = %v, want event 40 alone", evs)
	}
	if c := cap(s.wal.tails["a"].buf); c > 64 {
		t.Errorf("tail buffer of capacity %d for 1 event after the snapshot, want at most 64", c)
	}
	checkLoaded(t, s, "a", persistence.Loaded{Snapshot: persistence.Snapshot{Seq: 39, NextID: 40}, Events: []persistence.Event{commit(40, 39, t0+40_000)}})
}

// TestBadgerSnapshottedTailsAreFreed: once a snapshot covers all of an
// account's events, its tail leaves the index and nothing else keeps it:
// not the plan every Write reuses, whose adds point at tails.
func TestBadgerSnapshottedTailsAreFreed(t *testing.T) {
	s := newTestStore(t)
	const n = 200
	var b persistence.Batch
	for i := range n {
		a := fmt.Sprintf("acct-%03d", i)
		b.Accounts = append(b.Accounts, persistence.AccountWrite{Account: a, Events: []persistence.Event{reserve(1, 1, t0)}})
	}
	mustWrite(t, s, &b) // creates n tails, through apply's t == nil path
	// A second event per account: these adds carry the tail pointer plan found.
	for i := range b.Accounts {
		b.Accounts[i].Events = []persistence.Event{commit(2, 1, t1)}
	}
	mustWrite(t, s, &b)
	s.Settle() // the index is read directly below
	weaks := make([]weak.Pointer[tail], 0, n)
	for i := range n {
		weaks = append(weaks, weak.Make(s.wal.tails[fmt.Sprintf("acct-%03d", i)]))
	}
	// Snapshots fold every event: the tails leave the index.
	var snaps persistence.Batch
	for i := range n {
		snaps.Accounts = append(snaps.Accounts, persistence.AccountWrite{Account: fmt.Sprintf("acct-%03d", i),
			Snapshot: &persistence.Snapshot{Seq: 2, NextID: 2, Committed: []int64{t1}}})
	}
	mustWrite(t, s, &snaps)
	s.Settle()
	if len(s.wal.tails) != 0 {
		t.Fatalf("%d tails left in the index, want 0", len(s.wal.tails))
	}
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "other", Events: []persistence.Event{reserve(1, 1, t2)}}}})
	alive := func() int {
		runtime.GC()
		runtime.GC()
		k := 0
		for _, w := range weaks {
			if w.Value() != nil {
				k++
			}
		}
		return k
	}
	if k := alive(); k != 0 {
		// Diagnose: clearing the spare capacity of s.upd.adds frees them.
		clear(s.upd.adds[:cap(s.upd.adds)])
		t.Errorf("%d of %d tails removed from the index are still reachable; after clearing s.upd.adds, %d", k, n, alive())
	}
}
