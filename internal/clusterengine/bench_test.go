package clusterengine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/internal/partition"
)

// benchAccounts is how many accounts the cluster benchmarks spread their
// decisions over.
const benchAccounts = 3000

// BenchmarkClusterGrants measures durable decisions through three
// members over a three-member etcd on loopback, all in this process: a
// Reserve of one slot (its fenced Txn committed by etcd before it is
// granted) and its Commit, sent without waiting, on accounts spread over
// every partition, by 256 callers. It reports decisions/s and the
// Reserve's p50 and p99, with one journal batch in flight per member and
// with four (actors.Config.JournalPipeline).
func BenchmarkClusterGrants(b *testing.B) {
	for _, pipeline := range []int{1, 4} {
		b.Run(fmt.Sprintf("pipeline=%d", pipeline), func(b *testing.B) { benchClusterGrants(b, pipeline) })
	}
}

func benchClusterGrants(b *testing.B, pipeline int) {
	h, accounts, owner := benchCluster(b, func(c *actors.Config) {
		c.Limit, c.Window, c.Lease = 1<<16, time.Hour, time.Minute
		c.JournalPipeline = pipeline
	})
	var next atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	cli := h.etcd.Client()
	rev := func() int64 {
		resp, err := cli.Get(context.Background(), "rev")
		if err != nil {
			b.Fatal(err)
		}
		return resp.Header.Revision
	}
	rev0 := rev()
	b.SetParallelism(128) // 256 callers on 2 cores
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		ctx := context.Background()
		for pb.Next() {
			i := int(next.Add(1)) % len(accounts)
			t0 := time.Now()
			g, err := owner[i].Engine.Reserve(ctx, accounts[i], 1)
			if err != nil || g.Granted != 1 {
				b.Errorf("Reserve(%s): %+v, %v", accounts[i], g, err)
				return
			}
			mine = append(mine, time.Since(t0))
			_ = owner[i].Engine.CommitAsync(ctx, g.Reservations()[0], time.Now())
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	// Every etcd transaction that writes raises the revision by one: the
	// revisions per decision tell how many decisions a transaction
	// carries (each decision writes twice: its reserve and its commit).
	b.ReportMetric(float64(rev()-rev0)/float64(len(lat)), "txns/decision")
	reportLatency(b, lat, elapsed)
}

// BenchmarkEtcdFencedTxns measures etcd alone doing what the members'
// store does for a grant: a Txn per batch of writes, each batch
// conditional on its partition's owner key, by 256 callers over the same
// three-member etcd, at two batch sizes: compare the cluster with the
// one nearest its own (BenchmarkClusterGrants' txns/decision, each
// decision writing twice). It is the limit of this design: the members
// cannot go faster than etcd commits their fenced Txns.
func BenchmarkEtcdFencedTxns(b *testing.B) {
	for _, batch := range []int{18, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchFencedTxns(b, batch) })
	}
}

func benchFencedTxns(b *testing.B, batch int) {
	h := newHarness(b)
	cli := h.etcd.Client()
	ctx := context.Background()
	revs := make([]int64, testParts)
	for p := range testParts {
		resp, err := cli.Put(ctx, h.keys.Owner(partition.ID(p)), "bench")
		if err != nil {
			b.Fatal(err)
		}
		revs[p] = resp.Header.Revision
	}
	var next atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(128)
	b.ResetTimer()
	start := time.Now()
	var writes atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			n := next.Add(1)
			p := partition.ID(n % testParts)
			ops := make([]clientv3.Op, batch)
			for k := range ops {
				ops[k] = clientv3.OpPut(fmt.Sprintf("%sa/bench-%d\x00e/%016x", h.keys.State(p), n%benchAccounts, n*int64(batch)+int64(k)), "0123456789012345678901234567890123456789")
			}
			t0 := time.Now()
			resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(h.keys.Owner(p)), "=", revs[p])).Then(ops...).Commit()
			if err != nil || !resp.Succeeded {
				b.Errorf("fenced Txn: %v (succeeded %v)", err, err == nil && resp.Succeeded)
				return
			}
			mine = append(mine, time.Since(t0))
			writes.Add(int64(batch))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(writes.Load())/elapsed.Seconds(), "writes/s")
	reportLatency(b, lat, elapsed)
}

func reportLatency(b *testing.B, lat []time.Duration, elapsed time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
