package badgerstore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
)

// TestBadgerTxnSplit checks that a batch too large for one Badger
// transaction is committed in several, at account boundaries, and that an
// account write too large for any transaction fails whole.
func TestBadgerTxnSplit(t *testing.T) {
	s := newTestStore(t)
	const n = 3000 // entries; testOptions allow about 1,600 per transaction
	var b persistence.Batch
	b.HighWater = t3
	for i := range n {
		aw := persistence.AccountWrite{Account: fmt.Sprintf("acct%05d", i), Events: []persistence.Event{reserve(1, 1, t0)}}
		if i%5 != 0 {
			aw.Events = append(aw.Events, commit(2, 1, t1), reserve(3, 2, t2))
			aw.Snapshot = &persistence.Snapshot{Seq: 2, NextID: 2, Committed: []int64{t1}}
		}
		b.Accounts = append(b.Accounts, aw)
	}
	before := s.db.MaxVersion()
	mustWrite(t, s, &b)
	if commits := s.db.MaxVersion() - before; commits < 2 {
		t.Errorf("batch of %d entries committed in %d transaction(s), want a split", n, commits)
	}
	for i := range n {
		a := fmt.Sprintf("acct%05d", i)
		want := persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t0)}}
		if i%5 != 0 {
			want = persistence.Loaded{Snapshot: persistence.Snapshot{Seq: 2, NextID: 2, Committed: []int64{t1}}, Events: []persistence.Event{reserve(3, 2, t2)}}
		}
		checkLoaded(t, s, a, want)
	}
	if hw, _ := s.HighWater(); hw != t3 {
		t.Errorf("HighWater = %d, want %d", hw, t3)
	}

	huge := persistence.AccountWrite{Account: "huge"}
	for seq := range uint64(20000) {
		huge.Events = append(huge.Events, reserve(seq+1, seq+1, t0))
	}
	tests := []struct {
		name      string
		batch     persistence.Batch
		message   string
		committed []string
	}{
		{"alone", persistence.Batch{Accounts: []persistence.AccountWrite{huge}},
			`persistence: account "huge": write of 20000 events does not fit in one transaction`, nil},
		{"after another", persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "small", Events: []persistence.Event{reserve(1, 1, t0)}}, huge}},
			"persistence: write: batch split: 1 of 2 account writes committed, the rest not", []string{"small"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t)
			err := s.Write(&tt.batch)
			if err == nil || !strings.HasPrefix(err.Error(), tt.message) || !errors.Is(err, badger.ErrTxnTooBig) {
				t.Errorf("Write = %v, want error starting %q", err, tt.message)
			}
			if got := accounts(t, s); !slices.Equal(got, tt.committed) {
				t.Errorf("stored accounts = %q, want %q", got, tt.committed)
			}
		})
	}
}

// TestSplitPartialCommitIndex: a split batch that commits only a prefix
// leaves the index exactly what
// was committed (snapshot covers applied, records counted), in memory and
// after a reopen, and index and disk agree on the live records.
func TestSplitPartialCommitIndex(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "a", Events: []persistence.Event{reserve(1, 1, t0), commit(2, 1, t1)}},
		{Account: "b", Events: []persistence.Event{reserve(1, 1, t0)}},
	}})
	huge := persistence.AccountWrite{Account: "huge"}
	for seq := range uint64(20000) {
		huge.Events = append(huge.Events, reserve(seq+1, seq+1, t0))
	}
	snapA := &persistence.Snapshot{Seq: 3, NextID: 3, Committed: []int64{t1}, Pending: []persistence.Pending{{ID: 2, ReservedAt: t2, Deadline: t2 + 30_000}}}
	err := s.Write(&persistence.Batch{HighWater: t3, Accounts: []persistence.AccountWrite{
		{Account: "a", Events: []persistence.Event{reserve(3, 2, t2)}, Snapshot: snapA},
		{Account: "b", Events: []persistence.Event{commit(2, 1, t1)}},
		huge,
		{Account: "b", Snapshot: &persistence.Snapshot{Seq: 2, NextID: 2, Committed: []int64{t1}}},
	}})
	if err == nil || !strings.Contains(err.Error(), "2 of 4") {
		t.Fatalf("Write = %v, want 2 of 4 committed", err)
	}
	wantA := persistence.Loaded{Snapshot: *snapA}
	wantB := persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t0), commit(2, 1, t1)}}
	for round := range 2 {
		checkLoaded(t, s, "a", wantA)
		checkLoaded(t, s, "b", wantB)
		if hw, _ := s.HighWater(); hw != t3 {
			t.Errorf("round %d: HighWater = %d, want %d", round, hw, t3)
		}
		if disk := walSeqs(t, s); len(disk) != s.Records() {
			t.Errorf("round %d: %d records on disk, %d live in the index", round, len(disk), s.Records())
		}
		s = reopen(t, s, dir)
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
		if err := s.Write(&batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(seq*uint64(perBatch))/b.Elapsed().Seconds(), "events/s")
}
