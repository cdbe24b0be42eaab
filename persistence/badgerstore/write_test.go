package badgerstore

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
)

// TestBadgerHugeBatchWhole checks that a batch far larger than one
// Badger transaction is written whole: one journal record, its keys
// applied to Badger in as many transactions as they need.
func TestBadgerHugeBatchWhole(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	opts.MemTableSize = 1 << 20 // transactions of at most about 150 KiB
	s := openStore(t, dir, opts)
	huge := persistence.AccountWrite{Account: "huge"}
	for seq := range uint64(20000) {
		huge.Events = append(huge.Events, reserve(seq+1, seq+1, t0))
	}
	var b persistence.Batch
	b.Accounts = append(b.Accounts, huge)
	for i := range 3000 {
		b.Accounts = append(b.Accounts, persistence.AccountWrite{Account: fmt.Sprintf("snap-%04d", i),
			Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2, Committed: []int64{t0}}})
	}
	mustWrite(t, s, &b)
	if got := walSeqs(t, s); !slices.Equal(got, []uint64{1}) {
		t.Errorf("journal records with live events = %v, want [1]", got)
	}
	for range 2 {
		checkLoaded(t, s, "huge", persistence.Loaded{Events: huge.Events})
		checkLoaded(t, s, "snap-2999", persistence.Loaded{Snapshot: *b.Accounts[3000].Snapshot})
		if n := len(accounts(t, s)); n != 3001 {
			t.Errorf("%d accounts, want 3001", n)
		}
		s = reopenWith(t, s, dir, opts)
	}
}

// BenchmarkBadgerWrite: durable Writes of batches of one-event account
// writes, as the journal makes them: the store's cost per group commit
// (docs/benchmarks.md has the numbers).
func BenchmarkBadgerWrite(b *testing.B) {
	for _, perBatch := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", perBatch), func(b *testing.B) { benchBadgerWrite(b, perBatch) })
	}
}

func benchBadgerWrite(b *testing.B, perBatch int) {
	s, err := Open(b.TempDir(), Options{Durable: true}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	batch := persistence.Batch{Accounts: make([]persistence.AccountWrite, perBatch)}
	events := make([]persistence.Event, perBatch)
	for i := range batch.Accounts {
		batch.Accounts[i] = persistence.AccountWrite{
			Account:   fmt.Sprintf("%018d", 100_000_000_000_000_000+i),
			Events:    events[i : i+1 : i+1],
			ExpiresAt: time.Now().Add(13 * time.Hour).UnixMilli(),
		}
	}
	b.ReportAllocs()
	seq := uint64(0)
	for b.Loop() {
		seq++
		for i := range events {
			events[i] = reserve(seq, seq, t0+int64(seq))
		}
		batch.HighWater = t0 + int64(seq)
		if err := s.Write(b.Context(), &batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(seq*uint64(perBatch))/b.Elapsed().Seconds(), "events/s")
}
