package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/internal/app/enginestore"
)

// soakChildCommand is the hidden command the soak re-executes pinbench
// with: an engine process under load that reports every acknowledged grant.
const soakChildCommand = "soak-child"

// The soak child's stdout protocol, one line per event, each written with
// a single write after the event it reports:
//
//	READY <now>                 the engine is open at engine time now; times are engine Unix ms
//	G <account> <first> <n> <t> Reserve returned n slots, IDs first..first+n-1, granted at t
//	C <account> <id> <t>        Commit(id, t) is about to be called
//	R <account> <id> <t>        Release(id) is about to be called, at t
//
// A G line is printed only after Reserve returned, so every G line the
// parent reads is an acknowledged grant. C and R lines come before the
// call, so the parent knows of every resolution that may have landed.

// soakChildOptions are the flags of the soak child.
type soakChildOptions struct {
	dataDir       string
	accounts      int
	callers       int
	limit         int
	window        time.Duration
	lease         time.Duration
	idle          time.Duration
	seed          uint64
	snapshotEvery int
	logLevel      string
	// wallStep is how far the child's wall clock is off the true time;
	// the soak steps it between restarts, which must not move engine time.
	wallStep time.Duration
}

// args returns the command line that gives o to a child.
func (o soakChildOptions) args() []string {
	return []string{soakChildCommand,
		"--data-dir", o.dataDir,
		"--accounts", fmt.Sprint(o.accounts),
		"--callers", fmt.Sprint(o.callers),
		"--limit", fmt.Sprint(o.limit),
		"--window", o.window.String(),
		"--lease", o.lease.String(),
		"--idle", o.idle.String(),
		"--seed", fmt.Sprint(o.seed),
		"--snapshot-every", fmt.Sprint(o.snapshotEvery),
		"--log-level", o.logLevel,
		"--wall-step", o.wallStep.String(),
	}
}

// soakAccount names account i of the soak.
func soakAccount(i int) string { return fmt.Sprintf("soak-%04d", i) }

// soakStoreOptions opens the soak's store: durable, with small memtables
// so that the files Badger maps stay small.
var soakStoreOptions = enginestore.Options{MemTableSize: 8 << 20}

// soakEngineConfig is the engine configuration of the soak, in the child
// and in the checks.
func soakEngineConfig(limit int, window, lease, idle time.Duration, snapshotEvery int) actors.Config {
	cfg := actors.DefaultConfig()
	cfg.Limit, cfg.Window, cfg.Lease, cfg.IdleTimeout = limit, window, lease, idle
	cfg.SnapshotEvery = snapshotEvery
	return cfg
}

// soakChild runs an engine under load until it is killed.
func soakChild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o soakChildOptions
	fs := newFlagSet(soakChildCommand)
	fs.StringVar(&o.dataDir, "data-dir", "", "")
	fs.IntVar(&o.accounts, "accounts", 200, "")
	fs.IntVar(&o.callers, "callers", 16, "")
	fs.IntVar(&o.limit, "limit", 100, "")
	fs.DurationVar(&o.window, "window", 3*time.Second, "")
	fs.DurationVar(&o.lease, "lease", time.Second, "")
	fs.DurationVar(&o.idle, "idle", time.Second, "")
	fs.Uint64Var(&o.seed, "seed", 1, "")
	fs.IntVar(&o.snapshotEvery, "snapshot-every", 16, "")
	fs.StringVar(&o.logLevel, "log-level", "warn", "")
	fs.DurationVar(&o.wallStep, "wall-step", 0, "")
	if err := parseFlags(fs, soakChildCommand, args, stdout); err != nil {
		return err
	}
	if o.dataDir == "" {
		return usagef(soakChildCommand, "--data-dir is required")
	}
	log := newLogger(stderr, o.logLevel).With().Str("process", "soak-child").Logger()
	store, err := enginestore.Open(o.dataDir, soakStoreOptions, log)
	if err != nil {
		return err
	}
	cfg := soakEngineConfig(o.limit, o.window, o.lease, o.idle, o.snapshotEvery)
	cfg.Recover = true
	step := o.wallStep.Milliseconds()
	cfg.Wall = func() int64 { return time.Now().UnixMilli() + step }
	eng, err := actors.New(cfg, store, log)
	if err != nil {
		return errors.Join(err, store.Close())
	}
	out := &lineWriter{w: stdout}
	out.printf("READY %d\n", eng.Now().UnixMilli())
	errc := make(chan error, o.callers)
	for w := range o.callers {
		go func() { errc <- soakWorker(ctx, eng, o, uint64(w), out) }()
	}
	// The workers run until the parent kills the process; an error of
	// one of them ends it early, which the parent reports.
	err = <-errc
	return errors.Join(err, eng.Close(context.Background()), store.Close())
}

// lineWriter writes whole lines, one write each, from many goroutines.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) printf(format string, args ...any) {
	l.mu.Lock()
	fmt.Fprintf(l.w, format, args...)
	l.mu.Unlock()
}

// soakWorker reserves, then commits, releases or abandons each slot, like
// a bot whose Pinterest calls succeed, fail, or are cut short by a crash.
func soakWorker(ctx context.Context, eng *actors.Engine, o soakChildOptions, w uint64, out *lineWriter) error {
	r := rand.New(rand.NewPCG(o.seed, w))
	hot := rand.NewZipf(r, 1.1, 1, uint64(o.accounts-1))
	for ctx.Err() == nil {
		acc := soakAccount(int(hot.Uint64()))
		g, err := eng.Reserve(ctx, acc, 1+r.IntN(3))
		if err != nil {
			return fmt.Errorf("reserve: %w", err)
		}
		if g.Granted == 0 {
			// At the limit: come back when a slot frees, or soon.
			pause(ctx, min(g.NextFree.Sub(g.At), 20*time.Millisecond))
			continue
		}
		out.printf("G %s %d %d %d\n", acc, g.First, g.Granted, g.At.UnixMilli())
		if r.IntN(4) == 0 {
			pause(ctx, time.Duration(r.IntN(30))*time.Millisecond) // a Pinterest call
		}
		for _, res := range g.Reservations() {
			switch k := r.IntN(10); {
			case k < 6:
				at := eng.Now()
				out.printf("C %s %d %d\n", acc, res.ID, at.UnixMilli())
				if _, err := eng.Commit(ctx, res, at); err != nil && !errors.Is(err, actors.ErrUnknownReservation) {
					return fmt.Errorf("commit: %w", err)
				}
			case k < 8:
				out.printf("R %s %d %d\n", acc, res.ID, eng.Now().UnixMilli())
				if _, err := eng.Release(ctx, res); err != nil && !errors.Is(err, actors.ErrUnknownReservation) {
					return fmt.Errorf("release: %w", err)
				}
			default:
				// Left to its lease: it becomes a pin at its deadline.
			}
		}
	}
	return ctx.Err()
}

// pause waits d or until ctx ends. It paces the load generator; it does
// not wait for an event.
func pause(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
