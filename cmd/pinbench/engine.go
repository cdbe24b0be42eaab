package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/cmd/pinbench/internal/workload"
	"github.com/pinbot/pinbot/internal/app/enginestore"
	"github.com/pinbot/pinbot/persistence"
	"github.com/rs/zerolog"
)

// benchEngine is a pinbot engine over a Badger store, opened for a
// benchmark.
type benchEngine struct {
	eng     *actors.Engine
	store   enginestore.Store
	dir     string
	cleanup bool // remove dir on close
}

// openEngine opens the store in dir (durable: fsync before each grant is
// acknowledged) and starts an engine over it.
func openEngine(dir string, durable bool, cfg actors.Config, log zerolog.Logger) (*benchEngine, error) {
	store, err := enginestore.Open(dir, enginestore.Options{Relaxed: !durable}, log)
	if err != nil {
		return nil, err
	}
	eng, err := actors.New(cfg, store, log)
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	return &benchEngine{eng: eng, store: store, dir: dir}, nil
}

// openFreshEngine opens an engine on a new directory under parent ("" for
// the temporary directory), removed on close.
func openFreshEngine(parent string, durable bool, cfg actors.Config, log zerolog.Logger) (*benchEngine, error) {
	dir, err := os.MkdirTemp(parent, "pinbench-store-")
	if err != nil {
		return nil, fmt.Errorf("store directory: %w", err)
	}
	b, err := openEngine(dir, durable, cfg, log)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	b.cleanup = true
	return b, nil
}

// close stops the engine and the store, and removes a fresh directory.
func (b *benchEngine) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := errors.Join(b.eng.Close(ctx), b.store.Close())
	if b.cleanup {
		err = errors.Join(err, os.RemoveAll(b.dir))
	}
	return err
}

// engineTarget makes one pinbot decision: Reserve(1), and, unless
// reserveOnly, the granted slot's Commit sent as the bot sends it
// (CommitAsync: the engine's answer is not waited for).
type engineTarget struct {
	eng         *actors.Engine
	reserveOnly bool
}

// Decide implements workload.Target.
func (t engineTarget) Decide(ctx context.Context, i int) (bool, error) {
	acc := workload.Account(i)
	g, err := t.eng.Reserve(ctx, acc, 1)
	if err != nil || g.Granted == 0 {
		return false, err
	}
	if !t.reserveOnly {
		if err := t.eng.CommitAsync(ctx, actors.Reservation{Account: acc, ID: g.First}, t.eng.Now()); err != nil {
			return true, err
		}
	}
	return true, nil
}

// warm makes accounts 0..n-1 resident, asking their status from callers
// goroutines, so that timing measures the steady state rather than each
// account's first load.
func warm(ctx context.Context, eng *actors.Engine, n, callers int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if _, err := eng.Status(ctx, workload.Account(i)); err != nil {
					once.Do(func() { firstErr = fmt.Errorf("warming account %d: %w", i, err) })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// heapInUse returns the heap in use after two collections.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// restartPins is how many pins each account of a populated store holds.
const restartPins = 3

// populate fills an empty store in dir with n accounts holding
// restartPins pins each, spread over the last hour of window. It does
// nothing when dir already holds a store with accounts; it reports how
// many accounts it wrote.
func populate(dir string, n int, window time.Duration, log zerolog.Logger) (int, error) {
	store, err := enginestore.Open(dir, enginestore.Options{Relaxed: true}, log)
	if err != nil {
		return 0, err
	}
	stored := false
	errStop := errors.New("stop")
	ctx := context.Background()
	if err := store.Accounts(ctx, func(string) error { stored = true; return errStop }); err != nil && !errors.Is(err, errStop) {
		return 0, errors.Join(err, store.Close())
	}
	if stored {
		return 0, store.Close()
	}
	now := time.Now().UnixMilli()
	span := min(window.Milliseconds(), time.Hour.Milliseconds())
	pins := make([]int64, restartPins)
	for i := range pins {
		pins[i] = now - span*int64(restartPins-i)/int64(restartPins+1)
	}
	const chunk = 5000
	for start := 0; start < n; start += chunk {
		batch := &persistence.Batch{HighWater: now}
		for i := start; i < min(start+chunk, n); i++ {
			batch.Accounts = append(batch.Accounts, persistence.AccountWrite{
				Account:   workload.Account(i),
				Snapshot:  &persistence.Snapshot{Seq: restartPins, NextID: restartPins + 1, Committed: pins},
				ExpiresAt: now + window.Milliseconds() + 24*time.Hour.Milliseconds(),
			})
		}
		if err := store.Write(ctx, batch); err != nil {
			return 0, errors.Join(fmt.Errorf("populating %s: %w", dir, err), store.Close())
		}
	}
	return n, store.Close()
}

// restartResult is what a measured restart found.
type restartResult struct {
	Populated    int           `json:"populated_accounts"` // accounts written first, 0 when the store was there
	FirstRequest time.Duration `json:"first_request_ns"`   // from opening the store to the first answer
	UsedSeen     int           `json:"first_request_used"` // the slots the first answer reported
}

// restartEngine opens the existing store in dir and measures the time
// from opening it to the first answered request (Status of an account in
// the middle of the range), with the background recovery pass running as
// in production.
func restartEngine(ctx context.Context, dir string, durable bool, cfg actors.Config, n int, log zerolog.Logger) (*benchEngine, restartResult, error) {
	cfg.Recover = true
	t0 := time.Now()
	b, err := openEngine(dir, durable, cfg, log)
	if err != nil {
		return nil, restartResult{}, err
	}
	st, err := b.eng.Status(ctx, workload.Account(n/2))
	first := time.Since(t0)
	if err != nil {
		return nil, restartResult{}, errors.Join(fmt.Errorf("first request after restart: %w", err), b.close())
	}
	return b, restartResult{FirstRequest: first, UsedSeen: st.Used}, nil
}
