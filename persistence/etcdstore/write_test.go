package etcdstore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// testSplitByOps: a batch of many more operations than a transaction
// holds lands whole, in one partition and across partitions.
func testSplitByOps(t *testing.T, e *env) {
	for _, parts := range []int{1, 3} {
		s, _ := e.open(t, Options{Partitions: parts})
		var b persistence.Batch
		var want []string
		for i := range 5 * testTxnOps {
			a := fmt.Sprintf("acct%04d", i)
			want = append(want, a)
			b.Accounts = append(b.Accounts, persistence.AccountWrite{Account: a, Events: events(1, 2),
				Jobs: []persistence.Job{{ID: 1, State: persistence.JobWaiting, Payload: []byte(a)}}})
		}
		b.HighWater = persistencetest.T1
		persistencetest.MustWrite(t, s, &b)
		if got := persistencetest.Accounts(t, s); !slices.Equal(got, want) {
			t.Fatalf("%d partitions: Accounts = %d accounts, want %d", parts, len(got), len(want))
		}
		for _, a := range want {
			persistencetest.CheckLoaded(t, s, a, persistence.Loaded{Events: events(1, 2)})
		}
		if got := persistencetest.JobAccounts(t, s); !slices.Equal(got, want) {
			t.Errorf("%d partitions: JobAccounts = %d accounts, want %d", parts, len(got), len(want))
		}
		if hw, err := s.HighWater(t.Context()); err != nil || hw != persistencetest.T1 {
			t.Errorf("HighWater = %d, %v", hw, err)
		}
	}
}

// bigSnapshot returns a snapshot whose encoding takes about n bytes.
func bigSnapshot(seq uint64, n int) *persistence.Snapshot {
	snap := &persistence.Snapshot{Seq: seq, NextID: seq + 1}
	for i := range n / 2 { // deltas of 100 ms take 2 bytes each
		snap.Committed = append(snap.Committed, persistencetest.T0+int64(i)*100)
	}
	return snap
}

// testSplitByBytes: writes too big together for one transaction, each
// small enough alone, land whole; the server's request limit is the
// store's MaxTxnBytes, so an estimate that undercounts fails here.
func testSplitByBytes(t *testing.T, e *env) {
	s, _ := e.open(t, Options{Partitions: 1})
	var b persistence.Batch
	for i := range 12 {
		b.Accounts = append(b.Accounts, persistence.AccountWrite{
			Account: fmt.Sprintf("big%02d", i), Snapshot: bigSnapshot(3, testTxnBytes/5), Events: events(4, 5),
		})
	}
	persistencetest.MustWrite(t, s, &b)
	for _, aw := range b.Accounts {
		persistencetest.CheckLoaded(t, s, aw.Account, persistence.Loaded{Snapshot: *aw.Snapshot, Events: events(4, 5)})
	}
}

// testFullTxn: writes that fill a transaction to its byte budget, by
// the store's estimate, go in one transaction, which the server, whose
// request limit is barely above MaxTxnBytes, accepts: the estimate does
// not undercount.
func testFullTxn(t *testing.T, e *env) {
	s, keys := e.open(t, Options{Partitions: 1, Fenced: true})
	b := persistence.Batch{Fence: own(t, e, keys, 0).Encode()}
	used := 0
	add := func(aw persistence.AccountWrite) int {
		w, err := s.accountOps(t.Context(), 0, &aw, s.now())
		if err != nil {
			t.Fatal(err)
		}
		b.Accounts = append(b.Accounts, aw)
		used += w.size
		return w.size
	}
	for i := range 20 {
		add(persistence.AccountWrite{Account: fmt.Sprintf("small%02d", i), Events: events(1, 1)})
	}
	for i := range 3 {
		add(persistence.AccountWrite{Account: fmt.Sprintf("big%d", i), Snapshot: bigSnapshot(0, testTxnBytes/4)})
	}
	// The last write takes what remains, to within a Committed time.
	n := s.txnSize - used
	for {
		w, err := s.accountOps(t.Context(), 0, &persistence.AccountWrite{Account: "last", Snapshot: bigSnapshot(0, n)}, s.now())
		if err != nil {
			t.Fatal(err)
		}
		if used+w.size <= s.txnSize {
			break
		}
		n -= 2
	}
	add(persistence.AccountWrite{Account: "last", Snapshot: bigSnapshot(0, n)})
	if used > s.txnSize || used < s.txnSize-4 || len(b.Accounts) > s.txnOps {
		t.Fatalf("batch of %d bytes, %d writes: not a full transaction of %d bytes", used, len(b.Accounts), s.txnSize)
	}
	before, err := e.cli.Get(t.Context(), "any")
	if err != nil {
		t.Fatal(err)
	}
	b.HighWater = persistencetest.T1
	persistencetest.MustWrite(t, s, &b)
	after, err := e.cli.Get(t.Context(), "any")
	if err != nil {
		t.Fatal(err)
	}
	if revs := after.Header.Revision - before.Header.Revision; revs != 1 {
		t.Errorf("the batch took %d transactions, want 1", revs)
	}
	persistencetest.CheckLoaded(t, s, "last", persistence.Loaded{Snapshot: *bigSnapshot(0, n)})
}

// testTooLarge: an AccountWrite that fits no transaction fails with a
// clear error, alone, as do later writes of its account in the batch;
// the rest of the batch lands.
func testTooLarge(t *testing.T, e *env) {
	s, _ := e.open(t, Options{Partitions: 1})
	b := &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "ops", Events: events(1, testTxnOps)},
		{Account: "fine", Events: events(1, 1)},
		{Account: "bytes", Snapshot: bigSnapshot(1, testTxnBytes+1024)},
		{Account: "ops", Events: events(testTxnOps+1, testTxnOps+1)},
	}}
	err := s.Write(t.Context(), b)
	var pe *persistence.PartialWriteError
	if !errors.As(err, &pe) || len(pe.Failed) != 3 {
		t.Fatalf("Write = %v, want a PartialWriteError failing 3 writes", err)
	}
	for _, i := range []int{0, 2} {
		if got := pe.Failed[i]; !errors.Is(got, ErrTooLarge) || !strings.Contains(got.Error(), b.Accounts[i].Account) {
			t.Errorf("write %d: %v, want ErrTooLarge naming %q", i, got, b.Accounts[i].Account)
		}
	}
	if got := pe.Failed[3]; !errors.Is(got, ErrTooLarge) || !strings.Contains(got.Error(), "earlier write") {
		t.Errorf("write 3: %v, want it to follow the failure of write 0", got)
	}
	persistencetest.CheckLoaded(t, s, "fine", persistence.Loaded{Events: events(1, 1)})
	persistencetest.CheckLoaded(t, s, "ops", persistence.Loaded{})
	persistencetest.CheckLoaded(t, s, "bytes", persistence.Loaded{})

	// Alone, the error is the write's own.
	err = s.Write(t.Context(), &persistence.Batch{Accounts: b.Accounts[:1]})
	if !errors.Is(err, ErrTooLarge) || errors.As(err, &pe) || !strings.Contains(err.Error(), "too large for one etcd transaction") {
		t.Errorf("Write of one write too large = %v, want ErrTooLarge itself", err)
	}
}

// testSameAccountTwice: writes of one account in one batch apply in
// order, though etcd refuses a transaction that writes a key twice.
func testSameAccountTwice(t *testing.T, e *env) {
	s, _ := e.open(t, Options{Partitions: 2})
	snap := &persistence.Snapshot{Seq: 2, NextID: 3, Committed: []int64{persistencetest.T0}}
	snap2 := &persistence.Snapshot{Seq: 3, NextID: 4, Committed: []int64{persistencetest.T0, persistencetest.T1}}
	job := persistence.Job{ID: 1, State: persistence.JobWaiting, Payload: []byte("p")}
	ran := job
	ran.State, ran.Slot = persistence.JobRunning, 3
	persistencetest.MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "x", Events: events(1, 2), Jobs: []persistence.Job{job}},
		{Account: "y", Events: events(1, 1)},
		{Account: "x", Events: events(3, 3), Snapshot: snap},
		{Account: "x", Events: events(4, 4), Snapshot: snap2, Jobs: []persistence.Job{ran}},
		// Duplicates inside one write: the last wins.
		{Account: "y", Events: []persistence.Event{ev(3), ev(2), persistencetest.Commit(2, 9, persistencetest.T1)},
			Jobs: []persistence.Job{job, ran}, DropJobs: []uint64{1, 1, 2, 2}},
	}})
	persistencetest.CheckLoaded(t, s, "x", persistence.Loaded{Snapshot: *snap2, Events: events(4, 4)})
	if got := persistencetest.MustJobs(t, s, "x"); len(got) != 1 || got[0].State != persistence.JobRunning {
		t.Errorf("jobs of x = %+v, want the running one", got)
	}
	persistencetest.CheckLoaded(t, s, "y", persistence.Loaded{Events: []persistence.Event{ev(1), persistencetest.Commit(2, 9, persistencetest.T1), ev(3)}})
	if got := persistencetest.MustJobs(t, s, "y"); len(got) != 1 || got[0].State != persistence.JobRunning {
		t.Errorf("jobs of y = %+v, want the running one", got)
	}
	if got := storedSeqs(e.cli, s, "x"); !slices.Equal(got, []uint64{4}) {
		t.Errorf("stored seqs of x = %v, want [4]", got)
	}
}
