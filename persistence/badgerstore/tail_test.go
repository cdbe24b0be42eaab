package badgerstore

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

// randomTailEvent returns an event with fields anywhere in their range
// (extreme values included), or close to prev, as the engine writes them.
func randomTailEvent(r *rand.Rand, prev tailEvent) tailEvent {
	pick := func(near uint64) uint64 {
		switch r.IntN(4) {
		case 0:
			return r.Uint64()
		case 1:
			return []uint64{0, 1, math.MaxUint64, math.MaxInt64, 1 << 63}[r.IntN(5)]
		default:
			return near + uint64(r.IntN(1000)) - 500
		}
	}
	te := tailEvent{
		Event: persistence.Event{
			Seq:      prev.Seq + uint64(r.IntN(3)),
			ID:       pick(prev.ID),
			At:       int64(pick(uint64(prev.At))),
			Kind:     persistence.EventKind(r.IntN(256)),
			Deadline: 0,
		},
		rec: pick(prev.rec),
		exp: uint32(pick(uint64(prev.exp))),
	}
	if r.IntN(2) == 0 {
		te.Deadline = int64(pick(uint64(te.At)))
	}
	if r.IntN(2) == 0 {
		te.Count = uint32(r.Uint64())
	}
	return te
}

// insertBySeq is the model of tail.push: te goes after every event with a
// Seq at or below its own.
func insertBySeq(evs []tailEvent, te tailEvent) []tailEvent {
	i := len(evs)
	for i > 0 && evs[i-1].Seq > te.Seq {
		i--
	}
	return slices.Insert(evs, i, te)
}

// TestTailRoundTrip: whatever the events, a tail gives back exactly what
// was pushed, in Seq order (equal Seqs in push order), after filtering
// too.
func TestTailRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for round := range 2000 {
		var tl tail
		var want []tailEvent
		var prev tailEvent
		for range r.IntN(40) {
			te := randomTailEvent(r, prev)
			if r.IntN(10) == 0 {
				te.Seq = r.Uint64N(prev.Seq + 1) // out of order now and then
			}
			prev = te
			tl.push(te)
			want = insertBySeq(want, te)
		}
		if got := tl.all(); !slices.Equal(got, want) || tl.n != len(want) {
			t.Fatalf("round %d: tail gives back\n%v\nwant\n%v", round, got, want)
		}
		cut := r.Uint64()
		if len(want) > 0 {
			cut = want[r.IntN(len(want))].Seq
		}
		var dropped []tailEvent
		tl.filter(nil, func(te *tailEvent) bool { return te.Seq > cut }, func(te *tailEvent) { dropped = append(dropped, *te) })
		kept := slices.DeleteFunc(slices.Clone(want), func(te tailEvent) bool { return te.Seq <= cut })
		if got := tl.all(); !slices.Equal(got, kept) || tl.n != len(kept) {
			t.Fatalf("round %d: after filtering Seq > %d the tail gives back\n%v\nwant\n%v", round, cut, got, kept)
		}
		if len(dropped)+len(kept) != len(want) {
			t.Fatalf("round %d: %d dropped + %d kept of %d", round, len(dropped), len(kept), len(want))
		}
		// More events after a filter are encoded against the right base.
		te := randomTailEvent(r, prev)
		te.Seq = max(te.Seq, prev.Seq)
		if len(kept) > 0 {
			te.Seq = max(te.Seq, kept[len(kept)-1].Seq)
		}
		tl.push(te)
		if got := tl.all(); !slices.Equal(got, append(kept, te)) {
			t.Fatalf("round %d: after a push following the filter:\n%v\nwant\n%v", round, got, append(kept, te))
		}
	}
}

// FuzzTail pushes events read from the input into a tail and checks that
// it gives them back in order, before and after a filter.
func FuzzTail(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, uint64(3))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 1}, uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, cut uint64) {
		next := func() uint64 {
			v, n := binary.Uvarint(data)
			if n <= 0 {
				data = nil
				return 0
			}
			data = data[n:]
			return v
		}
		var tl tail
		var want []tailEvent
		for len(data) > 0 && len(want) < 200 {
			te := tailEvent{Event: persistence.Event{Seq: next(), ID: next(), At: int64(next()), Deadline: int64(next()),
				Count: uint32(next()), Kind: persistence.EventKind(next())}, rec: next(), exp: uint32(next())}
			tl.push(te)
			want = insertBySeq(want, te)
		}
		if got := tl.all(); !slices.Equal(got, want) || tl.n != len(want) {
			t.Fatalf("tail gives back\n%v\nwant\n%v", got, want)
		}
		tl.filter(nil, func(te *tailEvent) bool { return te.Seq > cut }, nil)
		want = slices.DeleteFunc(want, func(te tailEvent) bool { return te.Seq <= cut })
		if got := tl.all(); !slices.Equal(got, want) || tl.n != len(want) {
			t.Fatalf("after filtering Seq > %d the tail gives back\n%v\nwant\n%v", cut, got, want)
		}
	})
}

// TestWALIndexReadsAllocateNothing: going through an account's events to
// plan a snapshot's cover, to find stale or live accounts, or to decode
// them for a filter allocates nothing per event (a callback taking a
// pointer to each decoded event once moved every event to the heap).
func TestWALIndexReadsAllocateNothing(t *testing.T) {
	x := newWALIndex()
	for i := range 16 {
		x.add("a", tailEvent{Event: persistence.Event{Seq: uint64(i + 1), Kind: persistence.EventReserve, ID: uint64(i), Count: 1, At: t0 + int64(i), Deadline: t0 + 60_000}, rec: 1, exp: 2_000_000_000})
	}
	x.live[1] = 16
	snap := []persistence.AccountWrite{{Account: "a", Snapshot: &persistence.Snapshot{Seq: 8, NextID: 9}}}
	var u walUpdate
	x.plan(snap, walChunkBytes, &u) // sizes u's maps and slices
	scratch := x.tails["a"].appendAll(nil)
	allocs := testing.AllocsPerRun(100, func() {
		x.plan(snap, walChunkBytes, &u)
		if !x.hasLive("a", 1) {
			t.Fatal("no live event")
		}
		scratch = x.tails["a"].appendAll(scratch[:0])
	})
	if allocs != 0 {
		t.Errorf("%v allocations per plan, live check and decode of 16 events, want 0", allocs)
	}
	if got := u.delta[1]; got != -8 {
		t.Errorf("the snapshot at 8 covers %d events of record 1, want 8", -got)
	}
	if len(scratch) != 16 || scratch[15].Seq != 16 {
		t.Errorf("decoded %d events, the last %+v; want 16, the last with Seq 16", len(scratch), scratch[len(scratch)-1])
	}
}
