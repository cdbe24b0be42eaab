package actors

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pinbot/pinbot/internal/logtest"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
	"github.com/rs/zerolog"
)

// fakeUptime is an Uptime the test moves: a boot ID and the time since
// boot.
type fakeUptime struct {
	mu sync.Mutex
	id string
	ms int64
}

func (u *fakeUptime) BootID() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.id
}

func (u *fakeUptime) Now() int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.ms
}

func (u *fakeUptime) advance(d time.Duration) {
	u.mu.Lock()
	u.ms += d.Milliseconds()
	u.mu.Unlock()
}

// reboot starts a new boot with id, d after it began.
func (u *fakeUptime) reboot(id string, d time.Duration) {
	u.mu.Lock()
	u.id, u.ms = id, d.Milliseconds()
	u.mu.Unlock()
}

// restartWorld is a machine: real time, a wall clock that may be wrong, a
// boot-time clock, and a store that outlives engines.
type restartWorld struct {
	t     *testing.T
	real  time.Time // the true time, which nothing in the engine reads
	wall  time.Time // what the wall clock says
	up    *fakeUptime
	store *persistencetest.MemStore
	eng   *Engine
	logs  logtest.Buffer
}

func newRestartWorld(t *testing.T) *restartWorld {
	w := &restartWorld{t: t, real: monday, wall: monday, up: &fakeUptime{id: "boot-1", ms: time.Hour.Milliseconds()}}
	w.store = persistencetest.NewMemStore(func() int64 { return w.wall.UnixMilli() })
	t.Cleanup(func() { w.stop() })
	return w
}

// pass lets d of real time go by; the wall clock keeps its error.
func (w *restartWorld) pass(d time.Duration) {
	w.real, w.wall = w.real.Add(d), w.wall.Add(d)
	w.up.advance(d)
}

func (w *restartWorld) start() {
	w.t.Helper()
	cfg := DefaultConfig()
	cfg.Recover = false
	cfg.CheckpointEvery = 0
	cfg.Uptime = w.up
	cfg.Wall = func() int64 { return w.wall.UnixMilli() }
	eng, err := New(cfg, w.store, zerolog.New(&w.logs))
	if err != nil {
		w.t.Fatal(err)
	}
	w.eng = eng
}

func (w *restartWorld) stop() {
	if w.eng != nil {
		if err := w.eng.Close(context.Background()); err != nil {
			w.t.Errorf("Close: %v", err)
		}
		w.eng = nil
	}
}

// pin makes n pins on account, committed at once.
func (w *restartWorld) pin(account string, n int) {
	w.t.Helper()
	for n > 0 {
		g, err := w.eng.Reserve(context.Background(), account, min(n, MaxBatch))
		if err != nil || g.Granted == 0 {
			w.t.Fatalf("Reserve: %+v, %v", g, err)
		}
		for _, r := range g.Reservations() {
			if _, err := w.eng.Commit(context.Background(), r, w.eng.Now()); err != nil {
				w.t.Fatal(err)
			}
		}
		n -= g.Granted
	}
}

func (w *restartWorld) granted(account string, n int) int {
	w.t.Helper()
	g, err := w.eng.Reserve(context.Background(), account, n)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, r := range g.Reservations() {
		if _, err := w.eng.Release(context.Background(), r); err != nil {
			w.t.Fatal(err)
		}
	}
	return g.Granted
}

// TestEngineClockForwardStepAcrossRestart is the reproduction of a forward
// wall-clock step adopted at a restart: 100 pins made while the wall clock
// was 3 hours behind, the clock corrected, a restart a minute later. On
// the same boot the engine resumes its own time, so 9 real hours after the
// pins (less than 12) the account is still full.
func TestEngineClockForwardStepAcrossRestart(t *testing.T) {
	w := newRestartWorld(t)
	w.wall = w.real.Add(-3 * time.Hour)
	w.start()
	w.pin("acct", 100)
	w.stop()

	w.pass(time.Minute)
	w.wall = w.real // NTP corrects the clock
	w.start()
	if got, want := w.eng.Now(), monday.Add(-3*time.Hour+time.Minute); !got.Equal(want) {
		t.Errorf("engine time after the restart %v, want the last run's time carried on: %v", got, want)
	}
	if !strings.Contains(w.logs.String(), "the wall clock disagrees with the engine time") {
		t.Errorf("no warning about the wall clock; logs:\n%s", w.logs.String())
	}
	w.pass(9*time.Hour - time.Minute)
	if n := w.granted("acct", 10); n != 0 {
		t.Fatalf("9 real hours after 100 pins the engine granted %d more", n)
	}
	// 12 real hours after the pins, the slots free.
	w.pass(3 * time.Hour)
	if n := w.granted("acct", 10); n != 10 {
		t.Fatalf("12 real hours after the pins the engine granted %d of 10", n)
	}
}

// TestEngineClockAcrossRestarts: the same boot carries engine time through
// several restarts, whatever the wall clock does meanwhile; a new boot
// starts from the wall clock, never behind the stored high-water mark.
func TestEngineClockAcrossRestarts(t *testing.T) {
	w := newRestartWorld(t)
	w.start()
	w.pin("acct", 3)
	w.stop()

	// Same boot, the wall clock set back an hour: the engine keeps time.
	w.pass(10 * time.Minute)
	w.wall = w.real.Add(-time.Hour)
	w.start()
	if got := w.eng.Now(); !got.Equal(w.real) {
		t.Fatalf("same boot, wall set back: engine time %v, want %v", got, w.real)
	}
	w.pass(5 * time.Minute)
	w.stop()

	// Same boot again, the wall clock now right: still the engine's time.
	w.wall = w.real
	w.start()
	if got := w.eng.Now(); !got.Equal(w.real) {
		t.Fatalf("second restart: engine time %v, want %v", got, w.real)
	}
	w.stop()

	// A reboot with the wall clock set back: the wall clock is all there
	// is, but never behind the stored high-water mark.
	w.up.reboot("boot-2", time.Minute)
	w.wall = w.real.Add(-2 * time.Hour)
	w.logs.Reset()
	w.start()
	hw, err := w.store.HighWater(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := w.eng.Now().UnixMilli(); got != hw {
		t.Fatalf("new boot, wall behind: engine time %d, want the high-water mark %d", got, hw)
	}
	if !strings.Contains(w.logs.String(), "clock is behind the newest stored instant") {
		t.Errorf("no warning about the clock behind; logs:\n%s", w.logs.String())
	}
	w.stop()

	// A reboot with the wall clock far ahead: taken, with a warning.
	w.up.reboot("boot-3", time.Minute)
	w.wall = w.real.Add(48 * time.Hour)
	w.logs.Reset()
	w.start()
	if got := w.eng.Now(); !got.Equal(w.wall) {
		t.Fatalf("new boot, wall ahead: engine time %v, want the wall clock %v", got, w.wall)
	}
	if !strings.Contains(w.logs.String(), "new boot: the wall clock is far past the newest stored instant") {
		t.Errorf("no warning about the wall clock far ahead; logs:\n%s", w.logs.String())
	}
	w.stop()

	// Without a boot ID nothing is carried over.
	w.up.reboot("", time.Minute)
	w.wall = w.real.Add(72 * time.Hour)
	w.start()
	if got := w.eng.Now(); !got.Equal(w.wall) {
		t.Fatalf("no boot ID: engine time %v, want the wall clock %v", got, w.wall)
	}
}

// TestEngineClockAnchorWriteFails: a store that cannot write the anchor
// does not stop the engine; the earlier anchor of the same boot still
// gives the right time at the next start.
func TestEngineClockAnchorWriteFails(t *testing.T) {
	w := newRestartWorld(t)
	w.start()
	w.stop()
	fault := persistencetest.NewFaultStore(w.store)
	fault.FailWrites(persistencetest.ErrDiskFull)
	w.pass(time.Hour)
	w.wall = w.real.Add(5 * time.Hour)
	cfg := DefaultConfig()
	cfg.Recover, cfg.CheckpointEvery = false, 0
	cfg.Uptime, cfg.Wall = w.up, func() int64 { return w.wall.UnixMilli() }
	eng, err := New(cfg, fault, zerolog.New(&w.logs))
	if err != nil {
		t.Fatalf("New over a store that cannot write: %v", err)
	}
	if got := eng.Now(); !got.Equal(w.real) {
		t.Errorf("engine time %v, want %v", got, w.real)
	}
	if !strings.Contains(w.logs.String(), "storing the clock anchor failed") {
		t.Errorf("the failed anchor write was not logged:\n%s", w.logs.String())
	}
	_ = eng.Close(context.Background())
	w.pass(time.Hour)
	w.start()
	if got := w.eng.Now(); !got.Equal(w.real) {
		t.Errorf("after a failed anchor write, engine time %v, want %v", got, w.real)
	}
}

// unreadableAnchor is a store whose clock anchor cannot be read.
type unreadableAnchor struct{ *persistencetest.MemStore }

func (unreadableAnchor) Anchor(context.Context) (persistence.ClockAnchor, error) {
	return persistence.ClockAnchor{}, persistence.ErrCorrupt
}

// TestEngineClockAnchorUnreadable: an anchor that cannot be read does not
// stop the engine; it starts from the wall clock, as after a reboot, and
// says so.
func TestEngineClockAnchorUnreadable(t *testing.T) {
	w := newRestartWorld(t)
	w.wall = w.real.Add(time.Hour)
	cfg := DefaultConfig()
	cfg.Recover, cfg.CheckpointEvery = false, 0
	cfg.Uptime, cfg.Wall = w.up, func() int64 { return w.wall.UnixMilli() }
	eng, err := New(cfg, unreadableAnchor{w.store}, zerolog.New(&w.logs))
	if err != nil {
		t.Fatalf("New over an unreadable anchor: %v", err)
	}
	defer eng.Close(context.Background())
	if got := eng.Now(); !got.Equal(w.wall) {
		t.Errorf("engine time %v, want the wall clock %v", got, w.wall)
	}
	if !strings.Contains(w.logs.String(), "the stored clock anchor cannot be read") {
		t.Errorf("the unreadable anchor was not logged:\n%s", w.logs.String())
	}
}
