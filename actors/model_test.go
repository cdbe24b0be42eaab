package actors

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/badgerstore"
	"github.com/pinbot/pinbot/persistence/persistencetest"
	"github.com/rs/zerolog"
)

// crashView is one engine's view of a shared store; once dead, its writes
// are dropped (as a crash of that process would lose them).
type crashView struct {
	persistence.Store
	mu   sync.Mutex
	dead bool
}

func (v *crashView) Write(ctx context.Context, b *persistence.Batch) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.dead {
		return errors.New("crashed")
	}
	return v.Store.Write(ctx, b)
}

func (v *crashView) kill() {
	v.mu.Lock()
	v.dead = true
	v.mu.Unlock()
}

// runEngineModel drives one account with random operations and checks that
// the real pins (acknowledged grants that were committed or left
// unresolved) never exceed the limit in any window.
func runEngineModel(t *testing.T, seed uint64, snapEvery int, badgerDir string) {
	r := rand.New(rand.NewPCG(seed, 7))
	clock := NewManualClock(monday)
	var inner persistence.Store = persistencetest.NewMemStore(clock.Now)
	var bs *badgerstore.Store
	reopen := func() {}
	if badgerDir != "" {
		clock = NewManualClock(time.Now())
		open := func() {
			var err error
			bs, err = badgerstore.Open(badgerDir, badgerstore.Options{MemTableSize: 8 << 20}, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
		}
		open()
		inner = bs
		reopen = func() {
			if err := bs.Close(); err != nil {
				t.Fatal(err)
			}
			open()
		}
		defer func() { bs.Close() }()
	}
	fault := persistencetest.NewFaultStore(inner)
	ctx := context.Background()
	var view *crashView
	var eng *Engine
	var engines []*Engine
	cfgOf := func() Config {
		cfg := testConfig(clock)
		cfg.SnapshotEvery = snapEvery
		cfg.Limit = 20
		return cfg
	}
	start := func() {
		if bs != nil {
			fault = persistencetest.NewFaultStore(bs)
		}
		view = &crashView{Store: fault}
		e, err := New(cfgOf(), view, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		eng = e
		engines = append(engines, e)
	}
	start()
	defer func() {
		for _, e := range engines {
			_ = e.Close(ctx)
		}
	}()
	const acct = "a"
	limit := cfgOf().Limit
	width := cfgOf().Window.Milliseconds()
	var pins []int64 // real pin times
	// late are unresolved reservations whose Commit comes after their
	// lease, if their pin still counts then; their pin is made at that
	// Commit, or within the lease if the Commit is not acknowledged.
	var late []Reservation
	var log []string
	for step := 0; step < 400; step++ {
		now := clock.Now()
		switch op := r.IntN(20); {
		case op < 8:
			n := 1 + r.IntN(MaxBatch)
			g, err := eng.Reserve(ctx, acct, n)
			log = append(log, fmt.Sprintf("%d reserve %d -> %d err=%v", now, n, g.Granted, err))
			if err != nil {
				continue
			}
			for _, rv := range g.Reservations() {
				switch k := r.IntN(10); {
				case k < 6:
					pins = append(pins, now)
					_, _ = eng.Commit(ctx, rv, time.UnixMilli(now))
				case k < 8:
					_, _ = eng.Release(ctx, rv)
				case k < 9 && rv.Deadline.UnixMilli() == now+cfgOf().Lease.Milliseconds():
					late = append(late, rv)
				default:
					// unresolved: the pin happens at some point of the lease
					if r.IntN(2) == 0 {
						pins = append(pins, now)
					} else {
						pins = append(pins, now+cfgOf().Lease.Milliseconds()-1)
					}
				}
			}
			// Commit the late ones whose lease is over.
			keep := late[:0]
			for _, rv := range late {
				if rv.Deadline.UnixMilli() > now {
					keep = append(keep, rv)
					continue
				}
				_, err := eng.Commit(ctx, rv, time.UnixMilli(now))
				log = append(log, fmt.Sprintf("%d late commit %d (deadline %d) err=%v", now, rv.ID, rv.Deadline.UnixMilli(), err))
				if err == nil {
					pins = append(pins, now)
				} else {
					pins = append(pins, rv.Deadline.UnixMilli()-1)
				}
			}
			late = keep
		case op < 11:
			d := time.Duration(1+r.IntN(600)) * time.Second
			if r.IntN(4) == 0 {
				d = time.Duration(1+r.IntN(13*60)) * time.Minute
			}
			clock.Advance(d)
			log = append(log, fmt.Sprintf("advance %v", d))
		case op == 11:
			_, _ = eng.call(ctx, acct, request{op: opStop})
			log = append(log, "stop")
		case op == 12:
			_, _ = eng.call(ctx, acct, request{op: opCompact})
			log = append(log, "compact")
		case op == 13:
			_, _ = eng.call(ctx, acct, request{op: opPanic})
			log = append(log, "panic")
		case op == 14:
			if err := eng.Close(ctx); err != nil {
				t.Fatal(err)
			}
			view.kill()
			reopen()
			start()
			log = append(log, "restart")
		case op == 15:
			// crash: everything the old engine writes from now on is lost
			view.kill()
			reopen()
			start()
			log = append(log, "crash")
		case op == 16:
			fault.FailWrites(errors.New("disk"))
			log = append(log, "fail writes")
		case op == 17:
			fault.FailWritesAfterApply(errors.New("lost ack"))
			log = append(log, "fail after apply")
		default:
			fault.ClearFaults()
			log = append(log, "clear faults")
		}
		// Check the invariant over the real pins.
		slices.Sort(pins)
		for i := range pins {
			j, _ := slices.BinarySearch(pins, pins[i]+width)
			if j-i > limit {
				for _, l := range log {
					t.Log(l)
				}
				t.Fatalf("seed %d step %d: %d real pins in the window from %d, limit %d", seed, step, j-i, pins[i], limit)
			}
		}
	}
}

// TestEngineModel drives one account through random reserves, commits,
// releases, unresolved reservations, clock jumps of up to 13 hours,
// passivation, compaction, actor panics, restarts, crashes (the old
// engine's later writes are lost) and store faults, with snapshots every
// 1, 2, 3 and 16 events, and checks after every step that the pins that
// really happened never exceed the limit in any window.
func TestEngineModel(t *testing.T) {
	for _, every := range []int{1, 2, 3, 16} {
		for seed := uint64(0); seed < 6; seed++ {
			runEngineModel(t, seed, every, "")
			if t.Failed() {
				return
			}
		}
	}
}

// TestEngineModelBadger: the same over a Badger store, reopened at every
// restart and crash.
func TestEngineModelBadger(t *testing.T) {
	for seed := uint64(0); seed < 3; seed++ {
		runEngineModel(t, seed, 16, t.TempDir())
		if t.Failed() {
			return
		}
	}
}

// TestEngineModelConcurrent: many callers on two accounts while a chaos
// goroutine passivates, compacts, crashes actors, advances the clock and
// fails writes. Every request must be answered and the real pins must
// never exceed the limit in any window. It found a rollback sent to a
// stopped actor's PID while an actor of the same name was being spawned,
// which protoactor resolves to a mailbox without a dispatcher: a nil
// dereference in about one run in four before registry.sendResident.
func TestEngineModelConcurrent(t *testing.T) {
	for seed := uint64(0); seed < 60; seed++ {
		runEngineModelConcurrent(t, seed)
		if t.Failed() {
			return
		}
	}
}

func runEngineModelConcurrent(t *testing.T, seed uint64) {
	clock := NewManualClock(monday)
	mem := persistencetest.NewMemStore(clock.Now)
	fault := persistencetest.NewFaultStore(mem)
	cfg := testConfig(clock)
	cfg.Limit = 15
	cfg.IdleTimeout = time.Millisecond
	eng, err := New(cfg, fault, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	accts := []string{"x", "y"}
	var mu sync.Mutex
	pins := map[string][]int64{}
	var wg sync.WaitGroup
	for w := 0; w < 12; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := 0; i < 150; i++ {
				acc := accts[r.IntN(len(accts))]
				g, err := eng.Reserve(ctx, acc, 1+r.IntN(4))
				if ctx.Err() != nil {
					t.Errorf("request unanswered: %v", err)
					return
				}
				if err != nil {
					continue
				}
				for _, rv := range g.Reservations() {
					if r.IntN(4) == 0 {
						_, _ = eng.Release(ctx, rv)
						continue
					}
					// A committed pin was made at the grant; an
					// unresolved one may be made until its deadline.
					at := g.At.UnixMilli()
					commit := r.IntN(5) != 0
					if !commit {
						at = rv.Deadline.UnixMilli() - 1
					}
					mu.Lock()
					pins[acc] = append(pins[acc], at)
					mu.Unlock()
					if commit {
						_, _ = eng.Commit(ctx, rv, g.At)
					}
				}
			}
		}()
	}
	stop := make(chan struct{})
	chaosDone := make(chan struct{})
	go func() {
		defer close(chaosDone)
		r := rand.New(rand.NewPCG(seed, 99))
		for {
			select {
			case <-stop:
				return
			default:
			}
			acc := accts[r.IntN(len(accts))]
			switch r.IntN(9) {
			case 0, 1:
				clock.Advance(time.Duration(1+r.IntN(120)) * time.Minute)
			case 2:
				_, _ = eng.call(ctx, acc, request{op: opStop})
			case 3:
				_, _ = eng.call(ctx, acc, request{op: opCompact})
			case 4:
				_, _ = eng.call(ctx, acc, request{op: opPanic})
			case 5:
				fault.FailWrites(errors.New("disk"))
			case 6:
				fault.FailWritesAfterApply(errors.New("lost ack"))
			case 7:
				fault.ClearFaults()
			case 8:
				eng.reg.sweepIdle()
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-chaosDone
	if ctx.Err() != nil {
		t.Fatalf("seed %d: requests left unanswered", seed)
	}
	if seed == 0 {
		t.Logf("pins: x %d y %d", len(pins["x"]), len(pins["y"]))
	}
	width := cfg.Window.Milliseconds()
	for acc, ps := range pins {
		slices.Sort(ps)
		for i := range ps {
			j, _ := slices.BinarySearch(ps, ps[i]+width)
			if j-i > cfg.Limit {
				t.Fatalf("seed %d account %s: %d real pins in the window from %d, limit %d", seed, acc, j-i, ps[i], cfg.Limit)
			}
		}
	}
}
