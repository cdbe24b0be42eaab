package actors

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/pinbot/pinbot/persistence"
	"github.com/rs/zerolog"
)

// Benchmarks of the engine; docs/benchmarks.md has the numbers and the
// commands. The callers' count is benchCallers whatever GOMAXPROCS is.

const (
	benchAccounts = 100_000
	benchCallers  = 256
)

func benchAccount(i int) string { return "acct-" + fmt.Sprint(i) }

func openBenchEngine(b *testing.B, durable bool) (*Engine, *persistence.BadgerStore) {
	b.Helper()
	store, err := persistence.OpenBadger(b.TempDir(), persistence.BadgerOptions{Durable: durable}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Recover = false
	eng, err := New(cfg, store, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = eng.Close(context.Background())
		_ = store.Close()
	})
	return eng, store
}

// runCallers runs fn b.N times spread over benchCallers goroutines and
// returns the latency of every call.
func runCallers(b *testing.B, fn func(r *rand.Rand) error) []time.Duration {
	b.Helper()
	var next atomic.Int64
	lat := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	b.ResetTimer()
	for c := 0; c < benchCallers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 99))
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				if err := fn(r); err != nil {
					failed.Store(&err)
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	return lat
}

func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	q := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(0.999), "p99.9-ms")
}

// BenchmarkEngineReserveCommit: one op is a durable Reserve of one slot
// and its Commit, on a random account out of 100k, from 256 callers.
func BenchmarkEngineReserveCommit(b *testing.B) {
	for _, durable := range []bool{true, false} {
		b.Run(fmt.Sprintf("durable=%v", durable), func(b *testing.B) {
			eng, _ := openBenchEngine(b, durable)
			ctx := context.Background()
			lat := runCallers(b, func(r *rand.Rand) error {
				acc := benchAccount(r.IntN(benchAccounts))
				g, err := eng.Reserve(ctx, acc, 1)
				if err != nil {
					return err
				}
				if g.Granted == 1 {
					_, err = eng.Commit(ctx, Reservation{Account: acc, ID: g.First}, eng.Now())
				}
				return err
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grants/s")
			reportLatency(b, lat)
		})
	}
}

// echoActor answers every request: the bare cost of a protoactor
// RequestFuture round trip, the ceiling for any actor-based engine.
type echoActor struct{}

func (echoActor) Receive(c actor.Context) {
	if m, ok := c.Message().(int); ok {
		c.Respond(m)
	}
}

func BenchmarkRequestFutureRoundTrip(b *testing.B) {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	// As many actors as callers, so the comparison has the same spread.
	pids := make([]*actor.PID, 1024)
	for i := range pids {
		pids[i] = system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return echoActor{} }))
	}
	defer system.Shutdown()
	lat := runCallers(b, func(r *rand.Rand) error {
		_, err := system.Root.RequestFuture(pids[r.IntN(len(pids))], 1, 10*time.Second).Result()
		return err
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "roundtrips/s")
	reportLatency(b, lat)
}

// BenchmarkEngineReserveCommitPaced offers Reserve+Commit at a fixed rate
// (PINBOT_BENCH_RATE per second, default 100000) instead of as fast as
// possible, to read the latency at a given load.
func BenchmarkEngineReserveCommitPaced(b *testing.B) {
	rate := 100_000.0
	if s := os.Getenv("PINBOT_BENCH_RATE"); s != "" {
		if _, err := fmt.Sscan(s, &rate); err != nil || rate <= 0 {
			b.Fatalf("PINBOT_BENCH_RATE=%q: want a positive number", s)
		}
	}
	eng, _ := openBenchEngine(b, true)
	ctx := context.Background()
	interval := time.Duration(float64(time.Second) / rate * benchCallers)
	start := time.Now()
	var issued atomic.Int64
	lat := runCallers(b, func(r *rand.Rand) error {
		// Each op has a start slot on a fixed schedule; latency counts from
		// the slot, so queueing delay is not hidden (no coordinated omission).
		i := issued.Add(1) - 1
		slot := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if d := time.Until(slot); d > 0 {
			time.Sleep(d) // pacing the offered load, not waiting for a result
		}
		_ = interval
		acc := benchAccount(r.IntN(benchAccounts))
		g, err := eng.Reserve(ctx, acc, 1)
		if err == nil && g.Granted == 1 {
			_, err = eng.Commit(ctx, Reservation{Account: acc, ID: g.First}, eng.Now())
		}
		return err
	})
	b.ReportMetric(rate, "offered/s")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grants/s")
	reportLatency(b, lat)
}

// BenchmarkResidentMemory measures the heap held per resident account
// actor with a few pins each.
func BenchmarkResidentMemory(b *testing.B) {
	const n = 100_000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		eng, _ := openBenchEngine(b, false)
		ctx := context.Background()
		before := heapInUse()
		b.StartTimer()
		var wg sync.WaitGroup
		sem := make(chan struct{}, benchCallers)
		for a := 0; a < n; a++ {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				acc := benchAccount(a)
				g, err := eng.Reserve(ctx, acc, 3)
				if err != nil {
					b.Error(err)
					return
				}
				for _, r := range g.Reservations() {
					_, _ = eng.Commit(ctx, r, eng.Now())
				}
			}()
		}
		wg.Wait()
		b.StopTimer()
		if got := eng.Resident(); got != n {
			b.Fatalf("resident %d want %d", got, n)
		}
		b.ReportMetric(float64(heapInUse()-before)/n, "B/account")
		_ = eng.Close(ctx)
	}
}

func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}
