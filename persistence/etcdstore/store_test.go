package etcdstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/partition"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// The shared cluster's limits, far below etcd's defaults so that the
// tests reach them; the stores are told the same.
const (
	testTxnOps      = 32
	testRequestSize = 48 << 10
	testTxnBytes    = testRequestSize - 64 // etcd's request header
)

func serverLimits(c *embed.Config) {
	c.MaxTxnOps = testTxnOps
	c.MaxRequestBytes = testRequestSize
}

// env is an etcd cluster shared by subtests, each of which opens stores
// under keys of its own.
type env struct {
	c   *etcdtest.Cluster
	cli *clientv3.Client
}

var prefixes atomic.Int64

// newKeys returns keys no other store of the test process uses.
func newKeys() partition.Keys {
	return partition.NewKeys(fmt.Sprintf("/test%d/", prefixes.Add(1)))
}

// open opens a store under new keys, with the cluster's limits unless
// opts sets its own, closed when t ends.
func (e *env) open(t *testing.T, opts Options) (*Store, partition.Keys) {
	t.Helper()
	keys := newKeys()
	return e.openKeys(t, keys, opts), keys
}

func (e *env) openKeys(t *testing.T, keys partition.Keys, opts Options) *Store {
	t.Helper()
	if opts.MaxTxnOps == 0 {
		opts.MaxTxnOps = testTxnOps
	}
	if opts.MaxTxnBytes == 0 {
		opts.MaxTxnBytes = testTxnBytes
	}
	s, err := Open(t.Context(), e.cli, keys, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// storedSeqs reads the journal seqs etcd holds for account, those Load
// hides included; [0], which no event has, when it cannot.
func storedSeqs(cli *clientv3.Client, s *Store, account string) []uint64 {
	prefix := s.l.events(s.partitionOf(account), account)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return []uint64{0}
	}
	var seqs []uint64
	for _, kv := range resp.Kvs {
		seq, ok := parseNum(string(kv.Key[len(prefix):]))
		if !ok {
			return []uint64{0}
		}
		seqs = append(seqs, seq)
	}
	return seqs
}

// TestStore runs every test of the package over one cluster.
func TestStore(t *testing.T) { testStore(t, etcdtest.Start) }

// testStore runs every test of the package over one cluster of startEtcd's.
func testStore(t *testing.T, startEtcd etcdtest.Starter) {
	c := startEtcd(t, 1, serverLimits)
	e := &env{c: c, cli: c.Client()}
	t.Run("Conformance", func(t *testing.T) {
		persistencetest.TestStore(t,
			func(t *testing.T) persistence.Store {
				s, _ := e.open(t, Options{Partitions: 16, Member: "m1"})
				return s
			},
			func(s persistence.Store, account string) []uint64 {
				return storedSeqs(e.cli, s.(*Store), account)
			})
	})
	t.Run("Fencing", func(t *testing.T) { testFencing(t, e) })
	t.Run("FenceRefusals", func(t *testing.T) { testFenceRefusals(t, e) })
	t.Run("Combined", func(t *testing.T) { testCombined(t, e) })
	t.Run("SplitByOps", func(t *testing.T) { testSplitByOps(t, e) })
	t.Run("SplitByBytes", func(t *testing.T) { testSplitByBytes(t, e) })
	t.Run("FullTxn", func(t *testing.T) { testFullTxn(t, e) })
	t.Run("TooLarge", func(t *testing.T) { testTooLarge(t, e) })
	t.Run("SameAccountTwice", func(t *testing.T) { testSameAccountTwice(t, e) })
	t.Run("LeaseBuckets", func(t *testing.T) { testLeaseBuckets(t, e) })
	t.Run("LeaseRevoked", func(t *testing.T) { testLeaseRevoked(t, e) })
	t.Run("ExpiredHidden", func(t *testing.T) { testExpiredHidden(t, e) })
	t.Run("ExpiredNotWritten", func(t *testing.T) { testExpiredNotWritten(t, e) })
	t.Run("PartitionScans", func(t *testing.T) { testPartitionScans(t, e) })
	t.Run("ScanAcrossPartitions", func(t *testing.T) { testScanAcrossPartitions(t, e) })
	t.Run("HighWater", func(t *testing.T) { testHighWater(t, e) })
	t.Run("Corrupt", func(t *testing.T) { testCorrupt(t, e) })
	t.Run("Anchors", func(t *testing.T) { testAnchors(t, e) })
	t.Run("Options", func(t *testing.T) { testOptions(t, e) })
}

// clock is a settable engine clock, Unix ms.
type clock struct{ ms atomic.Int64 }

// newClock returns a clock stopped at the wall clock's current second,
// so that an expiry at a whole number of ms after it passes exactly then.
func newClock() *clock {
	c := &clock{}
	c.ms.Store(time.Now().UnixMilli() / 1000 * 1000)
	return c
}

func (c *clock) now() int64 { return c.ms.Load() }

// accountIn returns an account ID of partition p among count, made of
// prefix and a number.
func accountIn(t *testing.T, prefix string, p partition.ID, count int) string {
	t.Helper()
	for i := range 100_000 {
		a := fmt.Sprintf("%s%d", prefix, i)
		if partition.Of(a, count) == p {
			return a
		}
	}
	t.Fatalf("no account of prefix %q in partition %d", prefix, p)
	return ""
}

func ev(seq uint64) persistence.Event {
	return persistencetest.Reserve(seq, seq, persistencetest.T0)
}

func events(from, to uint64) []persistence.Event {
	var evs []persistence.Event
	for seq := from; seq <= to; seq++ {
		evs = append(evs, ev(seq))
	}
	return evs
}

// keyCount returns how many keys etcd holds under prefix.
func keyCount(t *testing.T, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := cli.Get(t.Context(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("count %q: %v", prefix, err)
	}
	return resp.Count
}

func testAnchors(t *testing.T, e *env) {
	keys := newKeys()
	a := e.openKeys(t, keys, Options{Partitions: 4, Member: "a"})
	b := e.openKeys(t, keys, Options{Partitions: 4, Member: "b"})
	want := persistence.ClockAnchor{BootID: "boot", Uptime: 5, Engine: persistencetest.T1}
	if err := a.SetAnchor(t.Context(), want); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Anchor(t.Context()); err != nil || got != want {
		t.Errorf("Anchor of a = %+v, %v; want %+v", got, err, want)
	}
	if got, err := b.Anchor(t.Context()); err != nil || got != (persistence.ClockAnchor{}) {
		t.Errorf("Anchor of b = %+v, %v; want none: each member has its own", got, err)
	}
	// The rules are the cluster's.
	r := persistence.Rules{Current: persistence.Rule{Limit: 100, Window: 43_200_000}, Lease: 300_000}
	if err := a.SetRules(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Rules(t.Context()); err != nil || got.Current != r.Current || got.Lease != r.Lease {
		t.Errorf("Rules through b = %+v, %v; want %+v", got, err, r)
	}
}

func testOptions(t *testing.T, e *env) {
	bad := []Options{
		{Partitions: -1},
		{Partitions: partition.MaxCount + 1},
		{MaxTxnOps: 2},
		{MaxTxnBytes: 100},
		{LeaseBucket: 1500 * time.Millisecond},
		{RequestTimeout: -time.Second},
		{ScanPage: -1},
	}
	for _, o := range bad {
		if _, err := Open(t.Context(), e.cli, newKeys(), o); err == nil {
			t.Errorf("Open with %+v succeeded", o)
		}
	}
	if _, err := Open(t.Context(), nil, newKeys(), Options{}); err == nil {
		t.Error("Open with no client succeeded")
	}
	s, err := Open(t.Context(), e.cli, newKeys(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Partitions() != partition.DefaultCount || s.opts.MaxTxnOps != DefaultMaxTxnOps || s.opts.MaxTxnBytes != DefaultMaxTxnBytes {
		t.Errorf("defaults: %+v", s.opts)
	}
}
