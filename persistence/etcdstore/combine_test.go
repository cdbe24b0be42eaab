package etcdstore

import (
	"errors"
	"testing"

	"github.com/pinbot/pinbot/internal/partition"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// testCombined: the writes of a batch's partitions go in one transaction
// comparing every partition's fence; when one fence is stale, that
// partition's writes alone fail and the others land, as they would one
// transaction each.
func testCombined(t *testing.T, e *env) {
	const parts = 8
	s, keys := e.open(t, Options{Partitions: parts, Fenced: true})
	ctx := t.Context()
	ps := []partition.ID{1, 3, 5}
	var accts []string
	var fences [][]byte
	for _, p := range ps {
		accts = append(accts, accountIn(t, "c", p, parts))
		fences = append(fences, own(t, e, keys, p).Encode())
	}
	rev := func() int64 {
		resp, err := e.cli.Get(ctx, "rev")
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	batch := func(seq uint64) *persistence.Batch {
		b := &persistence.Batch{HighWater: persistencetest.T1}
		for i, a := range accts {
			b.Accounts = append(b.Accounts, write1(a, fences[i], ev(seq)))
		}
		return b
	}

	before := rev()
	persistencetest.MustWrite(t, s, batch(1))
	if n := rev() - before; n != 1 {
		t.Fatalf("a batch of %d partitions took %d transactions, want 1", len(ps), n)
	}
	for _, a := range accts {
		persistencetest.CheckLoaded(t, s, a, persistence.Loaded{Events: events(1, 1)})
	}

	// The middle partition changes hands: its writes fail, the others'
	// land.
	disown(t, e, keys, ps[1])
	own(t, e, keys, ps[1])
	err := s.Write(ctx, batch(2))
	var pe *persistence.PartialWriteError
	if !errors.As(err, &pe) {
		t.Fatalf("batch with one stale fence = %v, want a PartialWriteError", err)
	}
	for i := range accts {
		got := persistence.WriteOutcome(err, i)
		if stale := i == 1; stale != errors.Is(got, persistence.ErrFenced) || (!stale && got != nil) {
			t.Errorf("WriteOutcome(%d) = %v", i, got)
		}
	}
	persistencetest.CheckLoaded(t, s, accts[0], persistence.Loaded{Events: events(1, 2)})
	persistencetest.CheckLoaded(t, s, accts[1], persistence.Loaded{Events: events(1, 1)})
	persistencetest.CheckLoaded(t, s, accts[2], persistence.Loaded{Events: events(1, 2)})
	for _, p := range []partition.ID{ps[0], ps[2]} {
		if hw, err := s.PartitionHighWater(ctx, p); err != nil || hw != persistencetest.T1 {
			t.Errorf("PartitionHighWater(%d) = %d, %v; want %d", p, hw, err, persistencetest.T1)
		}
	}
}
