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
)

// benchCluster starts three members over a three-member etcd, with an
// engine configured by engine, and returns benchAccounts accounts, each
// served, and the member serving each.
func benchCluster(b *testing.B, engine func(*actors.Config)) (*harness, []string, []*testNode) {
	h := newHarness(b)
	h.engine = engine
	var accounts []string
	for i := range benchAccounts {
		accounts = append(accounts, fmt.Sprintf("bench-%05d", i))
	}
	for _, name := range []string{"a", "b", "c"} {
		h.start(name)
	}
	h.waitSettled(30 * time.Second)
	h.waitServed(accounts, 30*time.Second)
	owner := make([]*testNode, len(accounts))
	for i, a := range accounts {
		owner[i] = h.serving(a)
	}
	return h, accounts, owner
}

// decide makes one durable decision on account i: a Reserve of one slot,
// whose Commit is sent without waiting.
func decide(ctx context.Context, accounts []string, owner []*testNode, i int) error {
	g, err := owner[i].Engine.Reserve(ctx, accounts[i], 1)
	if err != nil {
		return err
	}
	if g.Granted != 1 {
		return fmt.Errorf("Reserve(%s) granted %d", accounts[i], g.Granted)
	}
	_ = owner[i].Engine.CommitAsync(ctx, g.Reservations()[0], time.Now())
	return nil
}

// BenchmarkClusterOpenLoop measures the cluster of BenchmarkClusterGrants
// offered decisions at a steady rate: first its maximum, closed loop
// (256 callers, openLoopProbe), then half of it, paced (openLoopRun),
// each decision's latency taken from its scheduled instant, so that a
// stall counts for every decision it delays. It runs once whatever
// -benchtime says, and reports the maximum, the rate offered and the
// paced decisions' p50 and p99.
func BenchmarkClusterOpenLoop(b *testing.B) {
	for _, pipeline := range []int{1, 4} {
		b.Run(fmt.Sprintf("pipeline=%d", pipeline), func(b *testing.B) { benchClusterOpenLoop(b, pipeline) })
	}
}

func benchClusterOpenLoop(b *testing.B, pipeline int) {
	const (
		openLoopProbe = 3 * time.Second
		openLoopRun   = 10 * time.Second
		callers       = 256
	)
	_, accounts, owner := benchCluster(b, func(c *actors.Config) {
		c.Limit, c.Window, c.Lease = 1<<16, time.Hour, time.Minute
		c.JournalPipeline = pipeline
	})
	ctx := context.Background()
	var next atomic.Int64
	b.ResetTimer()

	// The maximum, closed loop.
	var done atomic.Int64
	stop := time.Now().Add(openLoopProbe)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for time.Now().Before(stop) {
				i := int(next.Add(1)) % len(accounts)
				if err := decide(ctx, accounts, owner, i); err != nil {
					b.Error(err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	maxRate := float64(done.Load()) / openLoopProbe.Seconds()

	// Half of it, paced: decision k is due at start + k/rate; workers
	// take them as they come due, and its latency runs from then.
	rate := maxRate / 2
	total := int(rate * openLoopRun.Seconds())
	due := make(chan time.Time, total)
	lat := make([]time.Duration, 0, total)
	var mu sync.Mutex
	for range 4 * callers {
		wg.Go(func() {
			var mine []time.Duration
			for at := range due {
				i := int(next.Add(1)) % len(accounts)
				if err := decide(ctx, accounts, owner, i); err != nil {
					b.Error(err)
					break
				}
				mine = append(mine, time.Since(at))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	start := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	for k := range total {
		at := start.Add(time.Duration(k) * interval)
		if d := time.Until(at); d > 0 {
			time.Sleep(d) // the pacer: the benchmark's load, not a wait for something to happen
		}
		due <- at
	}
	close(due)
	wg.Wait()
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("no paced decision made")
	}
	b.ReportMetric(maxRate, "max-decisions/s")
	b.ReportMetric(rate, "offered/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkEtcdBytesPerAccount measures what an account at its limit
// (100 pins in its window) keeps in etcd: the bytes of its keys and
// values under the engine's state prefix once every actor has written
// its snapshot (the members stopped gracefully), and the growth of
// etcd's database in use once its history is compacted. It runs once
// whatever -benchtime says.
func BenchmarkEtcdBytesPerAccount(b *testing.B) {
	const accountsFull = 300
	h, accounts, owner := benchCluster(b, func(c *actors.Config) {
		c.Limit, c.Window, c.Lease = 100, 12*time.Hour, time.Minute
	})
	accounts, owner = accounts[:accountsFull], owner[:accountsFull]
	cli := h.etcd.Client()
	ctx := context.Background()
	inUse := func() int64 {
		var sum int64
		for _, ep := range h.etcd.Endpoints() {
			st, err := cli.Status(ctx, ep)
			if err != nil {
				b.Fatal(err)
			}
			sum += st.DbSizeInUse
		}
		return sum / int64(len(h.etcd.Endpoints()))
	}
	before := inUse()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range accounts {
		wg.Go(func() {
			for range 10 { // Reserve takes at most 10 slots at once
				g, err := owner[i].Engine.Reserve(ctx, accounts[i], 10)
				if err != nil || g.Granted != 10 {
					b.Errorf("Reserve(%s, 10): %+v, %v", accounts[i], g, err)
					return
				}
				for _, r := range g.Reservations() {
					if _, err := owner[i].Engine.Commit(ctx, r, time.Now()); err != nil {
						b.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	// The members stop gracefully: every actor writes its snapshot.
	for _, n := range h.nodes {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		if err := n.Close(cctx); err != nil {
			b.Fatal(err)
		}
		cancel()
		n.gone.Store(true)
	}
	b.StopTimer()
	resp, err := cli.Get(ctx, h.keys.States(), clientv3.WithPrefix())
	if err != nil {
		b.Fatal(err)
	}
	// The history of the writes goes, as etcd's auto-compaction would
	// drop it: what stays in use is the state.
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		b.Fatal(err)
	}
	var kv int64
	for _, x := range resp.Kvs {
		kv += int64(len(x.Key) + len(x.Value))
	}
	b.ReportMetric(float64(kv)/accountsFull, "kv-bytes/account")
	b.ReportMetric(float64(len(resp.Kvs))/accountsFull, "keys/account")
	b.ReportMetric(float64(inUse()-before)/accountsFull, "db-bytes/account")
}
