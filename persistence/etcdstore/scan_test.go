package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pinbot/pinbot/internal/partition"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// scanFunc is one of the store's partition-scoped scans.
type scanFunc func(s *Store, ctx context.Context, p partition.ID, fn func(string) error) error

func collect(t *testing.T, s *Store, scan scanFunc, p partition.ID) []string {
	t.Helper()
	var got []string
	if err := scan(s, t.Context(), p, func(a string) error { got = append(got, a); return nil }); err != nil {
		t.Fatalf("scan of partition %d: %v", p, err)
	}
	return got
}

// testPartitionScans: each partition-scoped scan lists the accounts of
// its partition alone, in byte order, across pages of two keys, whatever
// mix of snapshot, events and jobs each account has.
func testPartitionScans(t *testing.T, e *env) {
	const parts = 3
	s, _ := e.open(t, Options{Partitions: parts, ScanPage: 2})
	ctx := t.Context()
	snap := &persistence.Snapshot{Seq: 1, NextID: 2}
	job := []persistence.Job{{ID: 1, State: persistence.JobWaiting}, {ID: 2, State: persistence.JobWaiting}, {ID: 3, State: persistence.JobWaiting}}
	var b persistence.Batch
	type kinds struct{ state, journal, jobs bool }
	all := map[string]kinds{}
	for i := range 30 {
		a := fmt.Sprintf("acct%02d", i)
		aw := persistence.AccountWrite{Account: a}
		var k kinds
		switch i % 5 {
		case 0: // snapshot only
			aw.Snapshot, k = snap, kinds{state: true}
		case 1: // many events, spanning pages
			aw.Events, k = events(1, 5), kinds{state: true, journal: true}
		case 2: // both
			aw.Snapshot, aw.Events, k = snap, events(2, 4), kinds{state: true, journal: true}
		case 3: // jobs only
			aw.Jobs, k = job, kinds{jobs: true}
		case 4: // everything
			aw.Snapshot, aw.Events, aw.Jobs, k = snap, events(2, 2), job, kinds{true, true, true}
		}
		all[a] = k
		b.Accounts = append(b.Accounts, aw)
	}
	// IDs that are prefixes of each other.
	for _, a := range []string{"z", "z\x01", "zz"} {
		b.Accounts = append(b.Accounts, persistence.AccountWrite{Account: a, Events: events(1, 3), Jobs: job})
		all[a] = kinds{true, true, true}
	}
	b.HighWater = persistencetest.T2
	persistencetest.MustWrite(t, s, &b)

	scans := []struct {
		name string
		scan scanFunc
		has  func(kinds) bool
	}{
		{"PartitionAccounts", (*Store).PartitionAccounts, func(k kinds) bool { return k.state }},
		{"PartitionJournaled", (*Store).PartitionJournaled, func(k kinds) bool { return k.journal }},
		{"PartitionJobAccounts", (*Store).PartitionJobAccounts, func(k kinds) bool { return k.jobs }},
	}
	for _, sc := range scans {
		for p := range partition.ID(parts) {
			var want []string
			for a, k := range all {
				if sc.has(k) && s.partitionOf(a) == p {
					want = append(want, a)
				}
			}
			slices.Sort(want)
			if got := collect(t, s, sc.scan, p); !slices.Equal(got, want) {
				t.Errorf("%s(%d) = %q, want %q", sc.name, p, got, want)
			}
		}
		if err := sc.scan(s, ctx, parts, func(string) error { return nil }); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("%s of partition %d of %d = %v, want an error", sc.name, parts, parts, err)
		}
		stop := errors.New("stop")
		if err := sc.scan(s, ctx, s.partitionOf("z"), func(string) error { return stop }); !errors.Is(err, stop) {
			t.Errorf("%s stopped = %v, want stop", sc.name, err)
		}
	}
	for p := range partition.ID(parts) {
		if hw, err := s.PartitionHighWater(ctx, p); err != nil || hw != persistencetest.T2 {
			t.Errorf("PartitionHighWater(%d) = %d, %v", p, hw, err)
		}
	}
}

// testScanAcrossPartitions: the scans of every partition merge them in
// byte order, whatever the partitions' count, the first reads of many
// partitions taking several transactions.
func testScanAcrossPartitions(t *testing.T, e *env) {
	s, _ := e.open(t, Options{ScanPage: 3}) // the default 256 partitions
	var b persistence.Batch
	var want []string
	for i := range 60 {
		a := fmt.Sprintf("m%d", i*7919%1000)
		want = append(want, a)
		b.Accounts = append(b.Accounts, persistence.AccountWrite{Account: a, Events: events(1, 1+uint64(i%4)),
			Jobs: []persistence.Job{{ID: 1, State: persistence.JobWaiting}}})
	}
	slices.Sort(want)
	persistencetest.MustWrite(t, s, &b)
	if got := persistencetest.Accounts(t, s); !slices.Equal(got, want) {
		t.Errorf("Accounts = %q, want %q", got, want)
	}
	if got := journaled(t, s); !slices.Equal(got, want) {
		t.Errorf("Journaled = %q, want %q", got, want)
	}
	if got := persistencetest.JobAccounts(t, s); !slices.Equal(got, want) {
		t.Errorf("JobAccounts = %q, want %q", got, want)
	}
}

// testHighWater: the mark is the largest of every partition's and of
// the batches of no account, and never falls.
func testHighWater(t *testing.T, e *env) {
	s, _ := e.open(t, Options{Partitions: 4})
	ctx := t.Context()
	steps := []struct {
		accounts []string
		hw, want int64
	}{
		{nil, persistencetest.T1, persistencetest.T1},
		{[]string{"a"}, persistencetest.T0, persistencetest.T1},
		{[]string{"b", "c"}, persistencetest.T2, persistencetest.T2},
		{nil, persistencetest.T1, persistencetest.T2},
		{[]string{"a"}, persistencetest.T3, persistencetest.T3},
		{[]string{"d"}, -1, persistencetest.T3},
	}
	partHW := make(map[partition.ID]int64)
	for i, st := range steps {
		b := &persistence.Batch{HighWater: st.hw}
		for _, a := range st.accounts {
			b.Accounts = append(b.Accounts, persistence.AccountWrite{Account: a, Events: events(uint64(i+1), uint64(i+1))})
			if p := s.partitionOf(a); st.hw > partHW[p] {
				partHW[p] = st.hw
			}
		}
		persistencetest.MustWrite(t, s, b)
		if got, err := s.HighWater(ctx); err != nil || got != st.want {
			t.Errorf("step %d: HighWater = %d, %v; want %d", i, got, err, st.want)
		}
		for p := range partition.ID(4) {
			if got, err := s.PartitionHighWater(ctx, p); err != nil || got != partHW[p] {
				t.Errorf("step %d: PartitionHighWater(%d) = %d, %v; want %d", i, p, got, err, partHW[p])
			}
		}
	}
}

// testCorrupt: unreadable values fail Load and Jobs with ErrCorrupt
// naming the account; scans still list it.
func testCorrupt(t *testing.T, e *env) {
	s, _ := e.open(t, Options{Partitions: 2})
	ctx := t.Context()
	persistencetest.MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "ok", Events: events(1, 1)},
		{Account: "badsnap", Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2}},
		{Account: "badevent", Events: events(1, 2)},
		{Account: "badjob", Jobs: []persistence.Job{{ID: 1, State: persistence.JobWaiting}}},
		{Account: "moved", Events: events(1, 1), Jobs: []persistence.Job{{ID: 4, State: persistence.JobWaiting}}},
	}})
	put := func(key string, value []byte) {
		t.Helper()
		if _, err := e.cli.Put(ctx, key, string(value)); err != nil {
			t.Fatal(err)
		}
	}
	p := s.partitionOf
	put(s.l.snapshot(p("badsnap"), "badsnap"), []byte{formatExpiringV1, 0, 0x21, 1, 2})
	put(numKey(s.l.events(p("badevent"), "badevent"), 2), []byte{0x7f})
	put(numKey(s.l.jobs(p("badjob"), "badjob"), 1), []byte{formatExpiringV1, 0x80, 0x00})
	// A value stored under another seq's or ID's key.
	moved, err := e.cli.Get(ctx, numKey(s.l.events(p("moved"), "moved"), 1))
	if err != nil {
		t.Fatal(err)
	}
	put(numKey(s.l.events(p("moved"), "moved"), 7), moved.Kvs[0].Value)
	job, err := e.cli.Get(ctx, numKey(s.l.jobs(p("moved"), "moved"), 4))
	if err != nil {
		t.Fatal(err)
	}
	put(numKey(s.l.jobs(p("moved"), "moved"), 5), job.Kvs[0].Value)

	for _, a := range []string{"badsnap", "badevent", "moved"} {
		if _, err := s.Load(ctx, a); !errors.Is(err, persistence.ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("%q", a)) {
			t.Errorf("Load(%q) = %v, want ErrCorrupt naming it", a, err)
		}
	}
	for _, a := range []string{"badjob", "moved"} {
		if _, err := s.Jobs(ctx, a); !errors.Is(err, persistence.ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("%q", a)) {
			t.Errorf("Jobs(%q) = %v, want ErrCorrupt naming it", a, err)
		}
	}
	persistencetest.CheckLoaded(t, s, "ok", persistence.Loaded{Events: events(1, 1)})
	if got, want := persistencetest.Accounts(t, s), []string{"badevent", "badsnap", "moved", "ok"}; !slices.Equal(got, want) {
		t.Errorf("Accounts = %q, want %q", got, want)
	}
	put(s.l.highWater(p("ok")), []byte("x"))
	if _, err := s.HighWater(ctx); !errors.Is(err, persistence.ErrCorrupt) {
		t.Errorf("HighWater over a corrupt mark = %v, want ErrCorrupt", err)
	}
}
