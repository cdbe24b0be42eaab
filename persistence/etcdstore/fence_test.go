package etcdstore

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/partition"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// own creates partition p's owner key under a lease, as a member taking
// p over does, and returns its fence.
func own(t *testing.T, e *env, keys partition.Keys, p partition.ID) partition.Fence {
	t.Helper()
	lease, err := e.cli.Grant(t.Context(), 60)
	if err != nil {
		t.Fatal(err)
	}
	owner := keys.Owner(p)
	resp, err := e.cli.Txn(t.Context()).
		If(clientv3.Compare(clientv3.CreateRevision(owner), "=", 0)).
		Then(clientv3.OpPut(owner, "member", clientv3.WithLease(lease.ID))).
		Commit()
	if err != nil || !resp.Succeeded {
		t.Fatalf("create owner key of partition %d: %v (succeeded %v)", p, err, resp != nil && resp.Succeeded)
	}
	return partition.Fence{Partition: p, Revision: resp.Header.Revision}
}

// disown deletes partition p's owner key, as its lease expiring does.
func disown(t *testing.T, e *env, keys partition.Keys, p partition.ID) {
	t.Helper()
	if _, err := e.cli.Delete(t.Context(), keys.Owner(p)); err != nil {
		t.Fatal(err)
	}
}

func write1(account string, fence []byte, evs ...persistence.Event) persistence.AccountWrite {
	return persistence.AccountWrite{Account: account, Events: evs, Fence: fence}
}

// testFencing: writes land under the owner key's current revision, and
// are refused, whole, under an earlier one, even when the key was
// created again by the same member.
func testFencing(t *testing.T, e *env) {
	const parts = 4
	s, keys := e.open(t, Options{Partitions: parts, Fenced: true})
	ctx := t.Context()
	pa, pb := partition.ID(1), partition.ID(2)
	a, b := accountIn(t, "a", pa, parts), accountIn(t, "b", pb, parts)

	fa1 := own(t, e, keys, pa)
	persistencetest.MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{write1(a, fa1.Encode(), ev(1))}, HighWater: persistencetest.T0})
	persistencetest.CheckLoaded(t, s, a, persistence.Loaded{Events: events(1, 1)})

	// The partition changes hands: the old fence is refused.
	disown(t, e, keys, pa)
	fa2 := own(t, e, keys, pa)
	err := s.Write(ctx, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: a, Events: events(2, 3), Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2}, Jobs: []persistence.Job{{ID: 1, State: persistence.JobWaiting}}},
	}, HighWater: persistencetest.T2, Fence: fa1.Encode()})
	if !errors.Is(err, persistence.ErrFenced) || !strings.Contains(err.Error(), fmt.Sprintf("partition %d", pa)) {
		t.Fatalf("write under a stale fence = %v, want ErrFenced naming partition %d", err, pa)
	}
	persistencetest.CheckLoaded(t, s, a, persistence.Loaded{Events: events(1, 1)})
	if jobs := persistencetest.MustJobs(t, s, a); len(jobs) != 0 {
		t.Errorf("jobs after a fenced-off write: %+v", jobs)
	}
	if hw, err := s.PartitionHighWater(ctx, pa); err != nil || hw != persistencetest.T0 {
		t.Errorf("PartitionHighWater after a fenced-off write = %d, %v; want %d", hw, err, persistencetest.T0)
	}

	// A batch of two partitions, one fence stale: only its writes fail.
	fb := own(t, e, keys, pb)
	batch := &persistence.Batch{Accounts: []persistence.AccountWrite{
		write1(b, fb.Encode(), ev(1)),
		write1(a, fa1.Encode(), ev(2)),
		write1(b, nil, ev(2)), // the batch's fence, which is b's
	}, HighWater: persistencetest.T3, Fence: fb.Encode()}
	err = s.Write(ctx, batch)
	var pe *persistence.PartialWriteError
	if !errors.As(err, &pe) || !errors.Is(err, persistence.ErrFenced) {
		t.Fatalf("batch with one stale fence = %v, want a PartialWriteError wrapping ErrFenced", err)
	}
	for i, wantFenced := range []bool{false, true, false} {
		got := persistence.WriteOutcome(err, i)
		if wantFenced != errors.Is(got, persistence.ErrFenced) || (!wantFenced && got != nil) {
			t.Errorf("WriteOutcome(%d) = %v, fenced %v wanted", i, got, wantFenced)
		}
	}
	if pe.HighWaterErr != nil {
		t.Errorf("HighWaterErr = %v, want nil: partition %d's transaction raised it", pe.HighWaterErr, pb)
	}
	persistencetest.CheckLoaded(t, s, b, persistence.Loaded{Events: events(1, 2)})
	persistencetest.CheckLoaded(t, s, a, persistence.Loaded{Events: events(1, 1)})
	if hw, err := s.HighWater(ctx); err != nil || hw != persistencetest.T3 {
		t.Errorf("HighWater = %d, %v; want %d", hw, err, persistencetest.T3)
	}

	// The current fence still writes.
	persistencetest.MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{write1(a, fa2.Encode(), ev(2))}})
	persistencetest.CheckLoaded(t, s, a, persistence.Loaded{Events: events(1, 2)})

	// The same key without fencing: fences are ignored.
	u := e.openKeys(t, keys, Options{Partitions: parts})
	persistencetest.MustWrite(t, u, &persistence.Batch{Accounts: []persistence.AccountWrite{write1(a, fa1.Encode(), ev(3))}})
	persistencetest.CheckLoaded(t, s, a, persistence.Loaded{Events: events(1, 3)})
}

// testFenceRefusals: a fenced store refuses, one write at a time, a
// missing, malformed or misplaced fence, and a partition nobody owns.
func testFenceRefusals(t *testing.T, e *env) {
	const parts = 4
	s, keys := e.open(t, Options{Partitions: parts, Fenced: true})
	pa, pb, pc := partition.ID(0), partition.ID(3), partition.ID(2)
	a, b, c := accountIn(t, "a", pa, parts), accountIn(t, "b", pb, parts), accountIn(t, "c", pc, parts)
	fa, fb := own(t, e, keys, pa), own(t, e, keys, pb)
	unowned := partition.Fence{Partition: pc, Revision: fa.Revision}

	tests := []struct {
		name  string
		fence []byte
	}{
		{"missing", nil},
		{"malformed", []byte("fence")},
		{"zero revision", make([]byte, partition.FenceLen)},
		{"another partition's", fb.Encode()},
	}
	for _, tt := range tests {
		err := s.Write(t.Context(), &persistence.Batch{Accounts: []persistence.AccountWrite{
			write1(a, tt.fence, ev(1)),
		}})
		if !errors.Is(err, persistence.ErrFenced) {
			t.Errorf("%s fence: Write = %v, want ErrFenced", tt.name, err)
		}
	}
	persistencetest.CheckLoaded(t, s, a, persistence.Loaded{})

	// In one batch, each write fails for its own fence, and a write
	// after a failed one of the same account is not attempted.
	err := s.Write(t.Context(), &persistence.Batch{Accounts: []persistence.AccountWrite{
		write1(a, nil, ev(1)),
		write1(b, fb.Encode(), ev(1)),
		write1(c, unowned.Encode(), ev(1)),
		write1(a, fa.Encode(), ev(2)),
	}})
	for i, wantFenced := range []bool{true, false, true, true} {
		got := persistence.WriteOutcome(err, i)
		if wantFenced != errors.Is(got, persistence.ErrFenced) || (!wantFenced && got != nil) {
			t.Errorf("WriteOutcome(%d) = %v, fenced %v wanted", i, got, wantFenced)
		}
	}
	if got := persistence.WriteOutcome(err, 2); got == nil || !strings.Contains(got.Error(), "absent") {
		t.Errorf("write to an unowned partition: %v, want it to say the owner key is absent", got)
	}
	if got := persistence.WriteOutcome(err, 3); got == nil || !strings.Contains(got.Error(), "earlier write") {
		t.Errorf("write after a refused one of the same account: %v, want it to name the earlier failure", got)
	}
	persistencetest.CheckLoaded(t, s, a, persistence.Loaded{})
	persistencetest.CheckLoaded(t, s, b, persistence.Loaded{Events: events(1, 1)})
	persistencetest.CheckLoaded(t, s, c, persistence.Loaded{})
	persistencetest.MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{write1(a, fa.Encode(), ev(1))}})
	persistencetest.CheckLoaded(t, s, a, persistence.Loaded{Events: events(1, 1)})
}
