package etcdstore

import (
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

func leaseCount(t *testing.T, e *env) int {
	t.Helper()
	resp, err := e.cli.Leases(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.Leases)
}

// testLeaseBuckets: keys expiring within one bucket share a lease, kept
// across writes; each key's lease lasts at least until its expiry.
func testLeaseBuckets(t *testing.T, e *env) {
	clk := newClock()
	s, keys := e.open(t, Options{Partitions: 4, Now: clk.now})
	// Expiries a few minutes ahead: two in one minute, one in the next.
	minute := (clk.now()/60_000 + 3) * 60_000
	e1, e2, e3 := minute+5_500, minute+40_000, minute+65_000
	leases0 := leaseCount(t, e)
	write := func(account string, exp int64, jobExp int64) {
		t.Helper()
		persistencetest.MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{
			Account: account, Events: events(1, 2), Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2}, ExpiresAt: exp,
			Jobs: []persistence.Job{{ID: 1, State: persistence.JobDone, ExpiresAt: jobExp}, {ID: 2, State: persistence.JobWaiting}},
		}}})
	}
	write("a", e1, e2)
	write("b", e2, e1)
	write("c", e2, 0)
	if got := s.leases.granted(); got != 1 {
		t.Errorf("leases granted for one bucket = %d, want 1", got)
	}
	write("d", e3, e1)
	if got := s.leases.granted(); got != 2 {
		t.Errorf("leases granted for two buckets = %d, want 2", got)
	}
	if got := leaseCount(t, e) - leases0; got != 2 {
		t.Errorf("etcd holds %d new leases, want 2", got)
	}

	expiries := map[string]int64{"a": e1, "b": e2, "c": e2, "d": e3}
	jobExpiries := map[string]int64{"a": e2, "b": e1, "c": 0, "d": e1}
	before := time.Now().UnixMilli()
	resp, err := e.cli.Get(t.Context(), keys.States(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	// Per account: the snapshot, event 2 (it supersedes event 1), two jobs.
	if len(resp.Kvs) != 4*4 {
		t.Fatalf("%d keys stored, want 16", len(resp.Kvs))
	}
	for _, kv := range resp.Kvs {
		key := string(kv.Key)
		var want int64 // the instant the key expires, rounded up to a second
		for _, p := range []string{"a", "b", "c", "d"} {
			pt := s.partitionOf(p)
			switch {
			case key == s.l.snapshot(pt, p) || key == numKey(s.l.events(pt, p), 2):
				want = expiries[p]
			case key == numKey(s.l.jobs(pt, p), 1):
				want = jobExpiries[p]
			case key == numKey(s.l.jobs(pt, p), 2):
				want = 0
			default:
				continue
			}
			want = (want + 999) / 1000 * 1000
			if want == 0 {
				if kv.Lease != 0 {
					t.Errorf("%q: lease %x, want none", key, kv.Lease)
				}
				continue
			}
			ttl, err := e.cli.TimeToLive(t.Context(), clientv3.LeaseID(kv.Lease))
			if err != nil {
				t.Fatal(err)
			}
			// TTL is the remaining time rounded down, at an instant after
			// before: the lease ends no earlier than before + TTL.
			if end := before + ttl.TTL*1000; end < want {
				t.Errorf("%q: lease ends by %d, before its expiry %d", key, end, want)
			}
		}
	}
}

// testExpiredHidden: state whose expiry passed on the engine clock is
// hidden from reads and scans while its lease has yet to delete it.
func testExpiredHidden(t *testing.T, e *env) {
	clk := newClock()
	s, keys := e.open(t, Options{Partitions: 4, Now: clk.now})
	t0 := clk.now()
	snap := &persistence.Snapshot{Seq: 1, NextID: 2}
	persistencetest.MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "soon", Snapshot: snap, Events: events(2, 2), ExpiresAt: t0 + 10_000,
			Jobs: []persistence.Job{{ID: 1, State: persistence.JobDone, ExpiresAt: t0 + 10_000}}},
		{Account: "later", Snapshot: snap, ExpiresAt: t0 + 3_600_000},
		{Account: "mixed", Snapshot: snap, ExpiresAt: t0 + 10_000},
	}})
	persistencetest.MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "mixed", Events: events(2, 2), ExpiresAt: t0 + 3_600_000},
	}})
	stored := keyCount(t, e.cli, keys.States())

	clk.ms.Store(t0 + 10_000) // the expiry instant: gone
	persistencetest.CheckLoaded(t, s, "soon", persistence.Loaded{})
	persistencetest.CheckLoaded(t, s, "later", persistence.Loaded{Snapshot: *snap})
	persistencetest.CheckLoaded(t, s, "mixed", persistence.Loaded{Events: events(2, 2)})
	if got := persistencetest.MustJobs(t, s, "soon"); len(got) != 0 {
		t.Errorf("expired jobs read: %+v", got)
	}
	if got := persistencetest.Accounts(t, s); !slices.Equal(got, []string{"later", "mixed"}) {
		t.Errorf("Accounts = %q", got)
	}
	if got, want := journaled(t, s), []string{"mixed"}; !slices.Equal(got, want) {
		t.Errorf("Journaled = %q, want %q", got, want)
	}
	if got := persistencetest.JobAccounts(t, s); len(got) != 0 {
		t.Errorf("JobAccounts = %q, want none", got)
	}
	if now := keyCount(t, e.cli, keys.States()); now != stored {
		t.Errorf("%d keys in etcd, want still %d: the leases have not run out", now, stored)
	}
}

// testLeaseRevoked: a cached lease etcd no longer knows is replaced,
// and the write goes through.
func testLeaseRevoked(t *testing.T, e *env) {
	clk := newClock()
	s, _ := e.open(t, Options{Partitions: 1, Now: clk.now})
	exp := clk.now() + 3_600_000
	write := func(seq uint64) {
		t.Helper()
		persistencetest.MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Events: events(seq, seq), ExpiresAt: exp}}})
	}
	leaseOf := func(seq uint64) clientv3.LeaseID {
		t.Helper()
		resp, err := e.cli.Get(t.Context(), numKey(s.l.events(0, "a"), seq))
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("get event %d: %v", seq, err)
		}
		return clientv3.LeaseID(resp.Kvs[0].Lease)
	}
	write(1)
	first := leaseOf(1)
	if _, err := e.cli.Revoke(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	write(2)
	if second := leaseOf(2); second == first || second == clientv3.NoLease {
		t.Errorf("lease after revocation = %x, want a new one (was %x)", second, first)
	}
	if got := s.leases.granted(); got != 2 {
		t.Errorf("%d leases granted, want 2", got)
	}
	persistencetest.CheckLoaded(t, s, "a", persistence.Loaded{Events: events(2, 2)})
}

func journaled(t *testing.T, s persistence.Store) []string {
	t.Helper()
	var got []string
	if err := s.Journaled(t.Context(), func(a string) error { got = append(got, a); return nil }); err != nil {
		t.Fatal(err)
	}
	return got
}

// testExpiredNotWritten: a write whose expiry has passed puts nothing,
// and still deletes what it supersedes.
func testExpiredNotWritten(t *testing.T, e *env) {
	clk := newClock()
	s, _ := e.open(t, Options{Partitions: 1, Now: clk.now})
	t0 := clk.now()
	persistencetest.MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "a", Events: events(1, 3), Jobs: []persistence.Job{{ID: 1, State: persistence.JobDone, ExpiresAt: t0 + 60_000}}},
	}})
	grants := s.leases.granted()
	persistencetest.MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "a", Snapshot: &persistence.Snapshot{Seq: 2, NextID: 3}, Events: events(4, 4), ExpiresAt: t0 - 1,
			Jobs: []persistence.Job{{ID: 1, State: persistence.JobDone, ExpiresAt: t0 - 1}, {ID: 2, State: persistence.JobDone, ExpiresAt: t0}}},
		{Account: "b", Events: events(1, 1), ExpiresAt: t0},
	}})
	if got := storedSeqs(e.cli, s, "a"); !slices.Equal(got, []uint64{3}) {
		t.Errorf("stored seqs = %v, want [3]: the snapshot's delete applies, its puts do not", got)
	}
	if n := keyCount(t, e.cli, s.l.snapshot(0, "a")); n != 0 {
		t.Error("an expired snapshot was written")
	}
	if n := keyCount(t, e.cli, s.l.jobsRoot(0)); n != 0 {
		t.Errorf("%d job keys, want none: an expired job replaces and deletes the stored one", n)
	}
	if n := keyCount(t, e.cli, s.l.account(0, "b")); n != 0 {
		t.Error("an expired write of b was written")
	}
	if got := s.leases.granted(); got != grants {
		t.Errorf("%d leases granted for expired keys", got-grants)
	}
}
