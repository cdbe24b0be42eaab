package actors

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/pinbot/pinbot/internal/benchlat"
	"github.com/pinbot/pinbot/internal/gctune"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/badgerstore"
	"github.com/rs/zerolog"
)

// Benchmarks of the engine; docs/benchmarks.md has the numbers and the
// commands. The callers' count is benchCallers whatever GOMAXPROCS is.

const (
	benchAccounts = 100_000
	benchCallers  = 256
)

// benchAccount is the ID of account i, made once for the accounts the
// callers pick from, as a bot has its IDs at hand: the callers do not
// format one per op.
func benchAccount(i int) string {
	if i < len(benchAccountIDs) {
		return benchAccountIDs[i]
	}
	return "acct-" + strconv.Itoa(i)
}

var benchAccountIDs = func() []string {
	ids := make([]string, benchAccounts)
	for i := range ids {
		ids[i] = "acct-" + strconv.Itoa(i)
	}
	return ids
}()

// benchTune sets the collector as pinbot does (internal/gctune) before
// the first engine of a benchmark: GOGC=400 unless GOGC is set.
var benchTune sync.Once

func openBenchEngine(b *testing.B, durable bool) (*Engine, *badgerstore.Store) {
	b.Helper()
	return openObservedBenchEngine(b, durable, nil)
}

// openObservedBenchEngine is openBenchEngine with obs as the engine's
// Config.Observer.
func openObservedBenchEngine(b *testing.B, durable bool, obs Observer) (*Engine, *badgerstore.Store) {
	b.Helper()
	return openBenchEngineWith(b, durable, func(cfg *Config) { cfg.Observer = obs })
}

// openBenchEngineWith is openBenchEngine with the configuration changed
// by mutate.
func openBenchEngineWith(b *testing.B, durable bool, mutate func(*Config)) (*Engine, *badgerstore.Store) {
	b.Helper()
	benchTune.Do(func() {
		if _, err := gctune.Apply(gctune.ProcessEnv(), "PINBOT_MEMORY_LIMIT", os.Getenv("PINBOT_MEMORY_LIMIT")); err != nil {
			b.Fatal(err)
		}
	})
	opts := badgerstore.Options{Durable: durable}
	if v := os.Getenv("PINBOT_BENCH_MEMTABLE_MB"); v != "" {
		var mb int64
		if _, err := fmt.Sscan(v, &mb); err != nil || mb < 1 {
			b.Fatalf("PINBOT_BENCH_MEMTABLE_MB=%q: want a positive number", v)
		}
		opts.MemTableSize = mb << 20
	}
	store, err := badgerstore.Open(b.TempDir(), opts, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Recover = false
	mutate(&cfg)
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

// openParkingBenchEngine is openBenchEngine (relaxed) on a manual clock,
// starting at the wall clock's time, without checkpoints nor eviction,
// with a count of the accounts parked.
func openParkingBenchEngine(b *testing.B) (*Engine, *ManualClock, *atomic.Int64) {
	b.Helper()
	clock := NewManualClock(time.Now())
	// No checkpoints: one that wakes an account while it decides to park
	// makes it stop for good instead, which the counts would miss. No
	// eviction either: the clock moves on by ParkAfter at every sweep.
	eng, _ := openBenchEngineWith(b, false, func(cfg *Config) {
		cfg.Clock, cfg.CheckpointEvery, cfg.IdleTimeout = clock, 0, 365*24*time.Hour
	})
	parked := new(atomic.Int64)
	eng.onParked = func(string) { parked.Add(1) }
	return eng, clock, parked
}

// parkAll parks every resident account of eng, as the engine would once
// they are idle: idle sweeps run (the engine's own run too, on their
// ticker), the clock moving on by ParkAfter each time, until no account
// has an actor and at least n have parked (the first sweep after the
// accounts' use asks none, the next snapshots them, the one after parks
// them).
func parkAll(b *testing.B, eng *Engine, clock *ManualClock, parked *atomic.Int64, n int) {
	b.Helper()
	clock.Advance(eng.cfg.ParkAfter)
	// The stops run on goroutines of their own, which a busy machine may
	// leave waiting a while: only half a minute without one is a failure.
	last, since := int64(-1), time.Now()
	for parked.Load() < int64(n) || liveActors(eng) > 0 {
		if p := parked.Load(); p != last {
			last, since = p, time.Now()
		} else if time.Since(since) > 30*time.Second {
			b.Fatalf("%d of %d accounts parked, %d with an actor", p, n, liveActors(eng))
		}
		eng.reg.sweepIdle()
		if err := eng.journal.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
		// Time goes on: an account a checkpoint used meanwhile parks
		// ParkAfter later.
		clock.Advance(eng.cfg.ParkAfter)
	}
	// The next sweep remakes the registry's maps at their new size, and
	// a checkpoint (the engine's runs every minute) the store's index.
	eng.reg.sweepIdle()
	if cp, ok := eng.store.(Checkpointer); ok {
		if _, err := eng.Checkpoint(context.Background(), cp); err != nil {
			b.Fatal(err)
		}
	}
	// What the stopped actors leave in sync.Pool victim caches goes
	// after two collections.
	runtime.GC()
	runtime.GC()
}

// liveActors returns how many accounts of eng have an actor.
func liveActors(eng *Engine) int {
	n := 0
	for i := range eng.reg.shards {
		sh := &eng.reg.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}

// eachAccount calls fn for accounts 0..n-1 from benchCallers goroutines.
func eachAccount(n int, fn func(account string)) { eachAccountIn(0, n, fn) }

// eachAccountIn calls fn for accounts lo..hi-1 from benchCallers
// goroutines.
func eachAccountIn(lo, hi int, fn func(account string)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, benchCallers)
	for a := lo; a < hi; a++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(benchAccount(a))
		}()
	}
	wg.Wait()
}

// warm makes every benchmark account resident, so that the timed part
// measures the steady state and not the first load of each account.
func warm(b *testing.B, eng *Engine) {
	b.Helper()
	eachAccount(benchAccounts, func(acc string) {
		if _, err := eng.Status(context.Background(), acc); err != nil {
			b.Error(err)
		}
	})
	// The loading's garbage goes now, as it would have long before in a
	// running bot: left, it sets when the timed part's first collection
	// comes, and one lands in a short run that the steady state would
	// not have.
	runtime.GC()
}

// runCallers runs fn b.N times spread over benchCallers goroutines and
// returns the latency of every call: from the instant fn returns as its
// start (its scheduled start, for paced calls) to its end.
func runCallers(b *testing.B, fn func(r *rand.Rand) (time.Time, error)) []time.Duration {
	b.Helper()
	var next atomic.Int64
	lat := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	stopProfile := startBenchProfile(b)
	gc0 := readGC()
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
				start, err := fn(r)
				if err != nil {
					failed.Store(&err)
					return
				}
				lat[i] = time.Since(start)
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	gc := readGC().minus(gc0)
	b.ReportMetric(gc.cycles, "gc-cycles")
	b.ReportMetric(gc.cpu*1000, "gc-cpu-ms")
	stopProfile()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	return lat
}

// gcStats are the collector's counters: cycles, and the CPU seconds its
// work took (marking, assists included, and pauses).
type gcStats struct{ cycles, cpu float64 }

func readGC() gcStats {
	ms := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(ms)
	return gcStats{cycles: float64(ms[0].Value.Uint64()), cpu: ms[1].Value.Float64()}
}

func (g gcStats) minus(o gcStats) gcStats { return gcStats{g.cycles - o.cycles, g.cpu - o.cpu} }

// startBenchProfile starts a CPU profile of the timed part alone (not the
// warm-up or the shutdown) when PINBOT_BENCH_CPUPROFILE names a file, or
// an execution trace of it when PINBOT_BENCH_TRACE does, or when
// PINBOT_BENCH_MEMPROFILE names one, writes allocation profiles before
// (to the name with ".before" added) and after it; it returns the
// function that stops it.
func startBenchProfile(b *testing.B) func() {
	if mp := os.Getenv("PINBOT_BENCH_MEMPROFILE"); mp != "" {
		// Allocations of the timed part: the difference between the
		// profiles written before and after it (go tool pprof -base).
		write := func(name string) {
			f, err := os.Create(name)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		write(mp + ".before")
		return func() {
			runtime.GC()
			write(mp)
		}
	}
	if path := os.Getenv("PINBOT_BENCH_TRACE"); path != "" {
		return recordTo(b, path, trace.Start, trace.Stop)
	}
	if path := os.Getenv("PINBOT_BENCH_CPUPROFILE"); path != "" {
		return recordTo(b, path, pprof.StartCPUProfile, pprof.StopCPUProfile)
	}
	return func() {}
}

// recordTo starts a recording (a CPU profile, an execution trace) into
// the file at path and returns the function that stops it and closes the
// file.
func recordTo(b *testing.B, path string, start func(io.Writer) error, stop func()) func() {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := start(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		stop()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}
}

// BenchmarkEngineReserveCommit: one op is a durable Reserve of one slot
// and its Commit, on a random account out of 100k, from 256 callers. The
// Commit is sent as the bot sends it, without waiting for its answer
// (CommitAsync); BenchmarkEngineReserveCommitWait waits.
func BenchmarkEngineReserveCommit(b *testing.B) {
	for _, durable := range []bool{true, false} {
		b.Run(fmt.Sprintf("durable=%v", durable), func(b *testing.B) { benchReserveCommit(b, durable, false) })
	}
}

// BenchmarkEngineReserveCommitWait is BenchmarkEngineReserveCommit with a
// Commit that waits for the actor's answer.
func BenchmarkEngineReserveCommitWait(b *testing.B) {
	for _, durable := range []bool{true, false} {
		b.Run(fmt.Sprintf("durable=%v", durable), func(b *testing.B) { benchReserveCommit(b, durable, true) })
	}
}

func benchReserveCommit(b *testing.B, durable, wait bool) {
	eng, _ := openBenchEngine(b, durable)
	warm(b, eng)
	ctx := context.Background()
	lat := runCallers(b, func(r *rand.Rand) (time.Time, error) {
		start := time.Now()
		acc := benchAccount(r.IntN(benchAccounts))
		g, err := eng.Reserve(ctx, acc, 1)
		if err == nil && g.Granted == 1 {
			err = commit(ctx, eng, Reservation{Account: acc, ID: g.First}, wait)
		}
		return start, err
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grants/s")
	benchlat.Report(b, lat)
}

// commit commits r now, waiting for the actor's answer when wait is set.
func commit(ctx context.Context, eng *Engine, r Reservation, wait bool) error {
	if wait {
		_, err := eng.Commit(ctx, r, eng.Now())
		return err
	}
	return eng.CommitAsync(ctx, r, eng.Now())
}

// BenchmarkEngineReserveCommitObserved is BenchmarkEngineReserveCommit
// with an Observer that counts every report with an atomic add, as the
// metrics' does: the cost of the hooks on the hot path.
func BenchmarkEngineReserveCommitObserved(b *testing.B) {
	for _, durable := range []bool{true, false} {
		b.Run(fmt.Sprintf("durable=%v", durable), func(b *testing.B) {
			obs := &countObserver{}
			eng, _ := openObservedBenchEngine(b, durable, obs)
			warm(b, eng)
			ctx := context.Background()
			lat := runCallers(b, func(r *rand.Rand) (time.Time, error) {
				start := time.Now()
				acc := benchAccount(r.IntN(benchAccounts))
				g, err := eng.Reserve(ctx, acc, 1)
				if err != nil {
					return start, err
				}
				if g.Granted == 1 {
					err = eng.CommitAsync(ctx, Reservation{Account: acc, ID: g.First}, eng.Now())
				}
				return start, err
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grants/s")
			benchlat.Report(b, lat)
			if g := obs.granted.Load(); g < int64(b.N) {
				b.Fatalf("observer saw %d grants of %d", g, b.N)
			}
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
	lat := runCallers(b, func(r *rand.Rand) (time.Time, error) {
		start := time.Now()
		_, err := system.Root.RequestFuture(pids[r.IntN(len(pids))], 1, 10*time.Second).Result()
		return start, err
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "roundtrips/s")
	benchlat.Report(b, lat)
}

// BenchmarkEngineReserveCommitPaced offers Reserve+Commit at a fixed rate
// (PINBOT_BENCH_RATE per second, default 100000) instead of as fast as
// possible, to read the latency at a given load; durable unless
// PINBOT_BENCH_RELAXED is set. The Commit is sent as the bot sends it
// (CommitAsync), or waits for its answer when PINBOT_BENCH_COMMIT_WAIT is
// set.
//
// Each op has a start slot on a fixed schedule, and a caller that is free
// waits for its slot. Two latencies are reported:
//
//   - p50/p99/p99.9-ms, the grant's latency: from the moment its caller
//     issues it, or from its slot when no caller was free at the slot (the
//     op then waited for the engine to give a caller back, and that wait
//     counts: no coordinated omission);
//   - sched-p99-ms, from the slot always: it adds how late a free caller's
//     sleep ends, the Go runtime's timer precision (up to a millisecond
//     when the process has nothing else to do: the poller sleeps whole
//     milliseconds) and scheduling, which a harness with no engine at all
//     shows too (BenchmarkPacingFloor).
//
// late-claims is the fraction of ops whose caller was free only after the
// slot; while it stays near 0 the callers are not what limits the load.
func BenchmarkEngineReserveCommitPaced(b *testing.B) {
	rate := benchRate(b)
	durable := os.Getenv("PINBOT_BENCH_RELAXED") == ""
	wait := os.Getenv("PINBOT_BENCH_COMMIT_WAIT") != ""
	eng, _ := openBenchEngine(b, durable)
	warm(b, eng)
	ctx := context.Background()
	runPaced(b, rate, func(r *rand.Rand) error {
		acc := benchAccount(r.IntN(benchAccounts))
		g, err := eng.Reserve(ctx, acc, 1)
		if err == nil && g.Granted == 1 {
			err = commit(ctx, eng, Reservation{Account: acc, ID: g.First}, wait)
		}
		return err
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grants/s")
}

// BenchmarkPacingFloor runs the paced harness of
// BenchmarkEngineReserveCommitPaced with nothing to call: what its
// latencies show is the harness's own.
func BenchmarkPacingFloor(b *testing.B) {
	runPaced(b, benchRate(b), func(*rand.Rand) error { return nil })
}

func benchRate(b *testing.B) float64 {
	rate := 100_000.0
	if s := os.Getenv("PINBOT_BENCH_RATE"); s != "" {
		if _, err := fmt.Sscan(s, &rate); err != nil || rate <= 0 {
			b.Fatalf("PINBOT_BENCH_RATE=%q: want a positive number", s)
		}
	}
	return rate
}

// runPaced runs op b.N times at rate per second from benchCallers
// callers and reports the latencies described at
// BenchmarkEngineReserveCommitPaced.
func runPaced(b *testing.B, rate float64, op func(r *rand.Rand) error) {
	start := time.Now()
	var issued, lateClaims atomic.Int64
	sched := make([]time.Duration, b.N)
	lat := runCallers(b, func(r *rand.Rand) (time.Time, error) {
		i := issued.Add(1) - 1
		slot := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		from := slot
		if d := time.Until(slot); d > 0 {
			time.Sleep(d) // pacing the offered load, not waiting for a result
			from = time.Now()
		} else if d < 0 {
			lateClaims.Add(1)
		}
		err := op(r)
		sched[i] = time.Since(slot)
		return from, err
	})
	if os.Getenv("PINBOT_BENCH_STALLS") != "" {
		printStalls(start, sched, rate)
	}
	b.ReportMetric(rate, "offered/s")
	benchlat.Report(b, lat)
	slices.Sort(sched)
	b.ReportMetric(benchlat.Quantile(sched, 0.99), "sched-p99-ms")
	b.ReportMetric(float64(lateClaims.Load())/float64(b.N), "late-claims")
}

// printStalls lists on stderr each run of ops whose lateness from their
// slot went over 5 ms, until it fell under 2 ms again, by the offset of
// its slots from start: the times to look at in a trace or a log of the
// same run.
func printStalls(start time.Time, sched []time.Duration, rate float64) {
	fmt.Fprintf(os.Stderr, "stalls: slots from %s\n", start.Format(time.RFC3339Nano))
	at := func(i int) float64 { return float64(i) / rate * 1000 }
	in, first, worst := false, 0, time.Duration(0)
	for i, d := range sched {
		switch {
		case d > 5*time.Millisecond && !in:
			in, first, worst = true, i, d
		case d > 5*time.Millisecond:
			worst = max(worst, d)
		case in && d < 2*time.Millisecond:
			in = false
			fmt.Fprintf(os.Stderr, "stall: slots %.1f-%.1f ms (%d ops), worst %v\n", at(first), at(i), i-first, worst)
		}
	}
}

// BenchmarkResidentMemory measures the heap held per resident account
// with a few pins each (PINBOT_BENCH_PINS, default 3) over
// PINBOT_BENCH_ACCOUNTS accounts (default 100,000), once they are idle
// and parked (parkAll), as the accounts of a running bot are between
// their uses. The heap growth it
// reports also holds Badger's memtables and table-building buffers, which
// grow with the volume written. For the engine's own share, set
// PINBOT_BENCH_HEAPPROFILE to a file and run with -test.memprofilerate=1:
// the heap profile written right after the fill, with Badger and the
// process-wide parts left out (see docs/benchmarks.md), sums it exactly.
func BenchmarkResidentMemory(b *testing.B) {
	n := 100_000
	if v := os.Getenv("PINBOT_BENCH_ACCOUNTS"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil || n < 1 {
			b.Fatalf("PINBOT_BENCH_ACCOUNTS=%q: want a positive number", v)
		}
	}
	pins := 3
	if v := os.Getenv("PINBOT_BENCH_PINS"); v != "" {
		if _, err := fmt.Sscan(v, &pins); err != nil || pins < 1 || pins > 100 {
			b.Fatalf("PINBOT_BENCH_PINS=%q: want 1 to 100", v)
		}
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		eng, clock, parked := openParkingBenchEngine(b)
		ctx := context.Background()
		before := heapInUse()
		b.StartTimer()
		eachAccount(n, func(acc string) {
			for left := pins; left > 0; left -= MaxBatch {
				g, err := eng.Reserve(ctx, acc, min(left, MaxBatch))
				if err != nil {
					b.Error(err)
					return
				}
				for _, r := range g.Reservations() {
					if _, err := eng.Commit(ctx, r, eng.Now()); err != nil {
						b.Error(err)
						return
					}
				}
			}
		})
		b.StopTimer()
		parkAll(b, eng, clock, parked, n)
		if got := eng.Resident(); got != n {
			b.Fatalf("resident %d want %d", got, n)
		}
		b.ReportMetric(float64(heapInUse()-before)/float64(n), "B/account")
		writeHeapProfile(b)
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

// BenchmarkRestart measures, over a data directory holding
// PINBOT_BENCH_RESTART_ACCOUNTS accounts (default 1,000,000) with pins in
// their window, the time from opening the store to the first request
// served, the heap in use right then, and the bytes on disk per stored
// (passivated) account.
func BenchmarkRestart(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("PINBOT_BENCH_RESTART_ACCOUNTS"); s != "" {
		if _, err := fmt.Sscan(s, &n); err != nil || n < 1 {
			b.Fatalf("PINBOT_BENCH_RESTART_ACCOUNTS=%q: want a positive number", s)
		}
	}
	dir := b.TempDir()
	now := time.Now().UnixMilli()
	store, err := badgerstore.Open(dir, badgerstore.Options{}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	const chunk = 5000
	for start := 0; start < n; start += chunk {
		batch := &persistence.Batch{HighWater: now}
		for i := start; i < min(start+chunk, n); i++ {
			batch.Accounts = append(batch.Accounts, persistence.AccountWrite{
				Account:   benchAccount(i),
				Snapshot:  &persistence.Snapshot{Seq: 3, NextID: 4, Committed: []int64{now - 3_600_000, now - 1_800_000, now - 60_000}},
				ExpiresAt: now + 12*3_600_000,
			})
		}
		if err := store.Write(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := store.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(dirSize(b, dir))/float64(n), "disk-B/account")
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		base := heapInUse()
		t0 := time.Now()
		store, err := badgerstore.Open(dir, badgerstore.Options{}, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.Recover = true // the background replay runs while the first request is served
		eng, err := New(cfg, store, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		st, err := eng.Status(ctx, benchAccount(n/2))
		first := time.Since(t0)
		if err != nil || st.Used != 3 {
			b.Fatalf("first request: %+v, %v", st, err)
		}
		b.ReportMetric(float64(first)/float64(time.Millisecond), "first-request-ms")
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		b.ReportMetric(float64(int64(m.HeapInuse)-base)/(1<<20), "heap-MiB-at-first")
		b.StopTimer()
		_ = eng.Close(ctx)
		_ = store.Close()
		b.StartTimer()
	}
}

func dirSize(b *testing.B, dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for _, e := range entries {
		info, err := e.Info()
		if err == nil && !info.IsDir() {
			total += info.Size()
		}
	}
	return total
}

// BenchmarkCollectorMark measures what one collection costs with
// PINBOT_BENCH_ACCOUNTS accounts resident (default 10,000), each with one
// pin: it fills them (relaxed store), PINBOT_BENCH_WAVE accounts at a
// time (default all: the most actors alive at once, whose room
// protoactor's process registry keeps), each wave let park (parkAll)
// before the next, then forces collections and reports,
// per cycle, the wall time of runtime.GC, the collector's mark CPU, the
// heap objects and the scannable heap it walks, and the heap objects per
// account (the growth over the empty engine's). Compare runs at 10,000,
// 100,000 and 1,000,000 accounts. PINBOT_BENCH_HEAPPROFILE names a file
// for the heap profile as collections begin.
func BenchmarkCollectorMark(b *testing.B) {
	n := 10_000
	if v := os.Getenv("PINBOT_BENCH_ACCOUNTS"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil || n < 1 {
			b.Fatalf("PINBOT_BENCH_ACCOUNTS=%q: want a positive number", v)
		}
	}
	b.StopTimer()
	wave := n
	if v := os.Getenv("PINBOT_BENCH_WAVE"); v != "" {
		if _, err := fmt.Sscan(v, &wave); err != nil || wave < 1 {
			b.Fatalf("PINBOT_BENCH_WAVE=%q: want a positive number", v)
		}
	}
	eng, clock, parked := openParkingBenchEngine(b)
	ctx := context.Background()
	runtime.GC()
	base := readMark()
	for lo := 0; lo < n; lo += wave {
		hi := min(lo+wave, n)
		eachAccountIn(lo, hi, func(acc string) {
			g, err := eng.Reserve(ctx, acc, 1)
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := eng.Commit(ctx, g.Reservations()[0], eng.Now()); err != nil {
				b.Error(err)
			}
		})
		parkAll(b, eng, clock, parked, hi)
	}
	if got := eng.Resident(); got != n {
		b.Fatalf("resident %d want %d", got, n)
	}
	runtime.GC() // the fill's garbage
	writeHeapProfile(b)
	m0 := readMark()
	t0 := time.Now()
	b.StartTimer()
	for i := 0; i < b.N; i++ {
		runtime.GC()
	}
	b.StopTimer()
	wall := time.Since(t0)
	m := readMark()
	cycles := m.cycles - m0.cycles
	b.ReportMetric(float64(wall.Nanoseconds())/cycles, "ns/GC")
	b.ReportMetric((m.markCPU-m0.markCPU)*1000/cycles, "mark-cpu-ms/GC")
	b.ReportMetric(float64(m.objects), "heap-objects")
	b.ReportMetric(float64(int64(m.objects)-int64(base.objects))/float64(n), "objects/account")
	b.ReportMetric(float64(m.scanHeap)/(1<<20), "scan-heap-MiB")
	b.ReportMetric(float64(b.N), "gcs") // b.N reads as ns/op otherwise
	b.ReportMetric(0, "ns/op")
}

// writeHeapProfile writes the heap profile to the file that
// PINBOT_BENCH_HEAPPROFILE names, if it does.
func writeHeapProfile(b *testing.B) {
	path := os.Getenv("PINBOT_BENCH_HEAPPROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// markStats are the collector's counters that BenchmarkCollectorMark
// reports: cycles, mark CPU seconds (assists, dedicated and idle
// workers), live heap objects and scannable heap bytes as of the last
// cycle.
type markStats struct {
	cycles            float64
	markCPU           float64
	objects, scanHeap uint64
}

func readMark() markStats {
	ms := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/cpu/classes/gc/mark/assist:cpu-seconds"},
		{Name: "/cpu/classes/gc/mark/dedicated:cpu-seconds"},
		{Name: "/cpu/classes/gc/mark/idle:cpu-seconds"},
		{Name: "/gc/heap/objects:objects"},
		{Name: "/gc/scan/heap:bytes"},
	}
	metrics.Read(ms)
	return markStats{
		cycles:   float64(ms[0].Value.Uint64()),
		markCPU:  ms[1].Value.Float64() + ms[2].Value.Float64() + ms[3].Value.Float64(),
		objects:  ms[4].Value.Uint64(),
		scanHeap: ms[5].Value.Uint64(),
	}
}
