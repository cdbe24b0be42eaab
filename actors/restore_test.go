package actors

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
)

func TestHoldRules(t *testing.T) {
	const now = int64(1_000_000_000_000)
	r := func(limit int, window time.Duration, until int64) persistence.Rule {
		return persistence.Rule{Limit: limit, Window: window.Milliseconds(), Until: until}
	}
	rules := func(cur persistence.Rule, lease int64, earlier ...persistence.Rule) persistence.Rules {
		return persistence.Rules{Current: cur, Lease: lease, Earlier: earlier}
	}
	// hold is a restore's hold, begun at from.
	hold := func(window time.Duration, until, from int64) persistence.Rule {
		return persistence.Rule{Limit: 0, Window: window.Milliseconds(), Until: until, From: from}
	}
	day12, day24 := 12*time.Hour, 24*time.Hour
	tests := []struct {
		name          string
		stored        persistence.Rules
		window, lease int64
		want          persistence.Rules
	}{
		{"the stored rule's window and lease", rules(r(100, day12, 0), leaseMs), day12.Milliseconds(), leaseMs,
			rules(r(100, day12, 0), leaseMs, hold(day12, now+leaseMs+12*hourMs, now))},
		{"the next runs' window is longer", rules(r(100, day12, 0), leaseMs), day24.Milliseconds(), leaseMs,
			rules(r(100, day12, 0), leaseMs, hold(day24, now+leaseMs+24*hourMs, now))},
		{"the stored lease is longer", rules(r(100, time.Hour, 0), 2*leaseMs), hourMs, leaseMs,
			rules(r(100, time.Hour, 0), 2*leaseMs, hold(time.Hour, now+2*leaseMs+hourMs, now))},
		// A rebuild lifts the hold, not the earlier rule: both stay.
		{"an earlier rule in force sets the width, and stays", rules(r(100, time.Hour, 0), leaseMs, r(50, day12, now+hourMs)), hourMs, leaseMs,
			rules(r(100, time.Hour, 0), leaseMs, r(50, day12, now+hourMs), hold(day12, now+leaseMs+12*hourMs, now))},
		{"an earlier rule that ended does not", rules(r(100, time.Hour, 0), leaseMs, r(50, day24, now)), hourMs, leaseMs,
			rules(r(100, time.Hour, 0), leaseMs, hold(time.Hour, now+leaseMs+hourMs, now))},
		{"an earlier rule outlasting the hold stays", rules(r(100, time.Hour, 0), leaseMs, r(50, time.Hour, now+10*hourMs)), hourMs, leaseMs,
			rules(r(100, time.Hour, 0), leaseMs, r(50, time.Hour, now+10*hourMs), hold(time.Hour, now+leaseMs+hourMs, now))},
		{"a second restore during a hold: the later one implies it", rules(r(100, day12, 0), leaseMs, hold(day12, now+hourMs, now-hourMs)), day12.Milliseconds(), leaseMs,
			rules(r(100, day12, 0), leaseMs, hold(day12, now+leaseMs+12*hourMs, now))},
		// Stored without its start, it binds every account to its end.
		{"a second restore during a hold stored without its start", rules(r(100, day12, 0), leaseMs, r(0, day12, now+hourMs)), day12.Milliseconds(), leaseMs,
			rules(r(100, day12, 0), leaseMs, r(0, day12, now+hourMs), hold(day12, now+leaseMs+12*hourMs, now))},
	}
	for _, tt := range tests {
		got, hold := holdRules(tt.stored, tt.window, tt.lease, now)
		if !reflect.DeepEqual(got, tt.want) || hold != tt.want.Earlier[len(tt.want.Earlier)-1] {
			t.Errorf("%s: holdRules = %+v, %+v; want %+v", tt.name, got, hold, tt.want)
		}
	}
}

// TestAfterRestoreHolds: after a restore, no account is granted a slot,
// those the backup holds and those it does not, until the restore's
// instant plus a lease plus the window; from then on the rule alone
// applies. The hold survives restarts, under another rule too.
func TestAfterRestoreHolds(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *ruleRig) {
		r.start(100, 12*time.Hour)
		r.batches("a", 30) // 10 pins a minute, from +0 to +2m
		r.stop()

		r.at(time.Hour)
		r.store = r.reopen()
		cfg := testConfig(r.clock)
		r.mutate(&cfg)
		got, err := AfterRestore(t.Context(), cfg, r.store, zerolog.Nop())
		if err != nil {
			t.Fatalf("AfterRestore: %v", err)
		}
		end := time.Hour + 5*time.Minute + 12*time.Hour
		if !got.At.Equal(r.t0.Add(time.Hour)) || !got.HoldUntil.Equal(r.t0.Add(end)) || got.Unfinished != 0 {
			t.Fatalf("AfterRestore = %+v; want at +1h, hold until +%v, no job", got, end)
		}
		if hw, err := r.store.HighWater(t.Context()); err != nil || hw != r.t0.Add(time.Hour).UnixMilli() {
			t.Errorf("high water after the restore: %d, %v; want the restore's instant", hw, err)
		}
		held := r.rule(0, 12*time.Hour, end)
		held.From = r.t0.Add(time.Hour).UnixMilli()
		r.wantRules("after the restore", r.rule(100, 12*time.Hour, 0), held)

		r.start(100, 12*time.Hour)
		r.want("held, in the backup", "a", time.Hour, 30, 100, 70, end)
		r.want("held, not in the backup", "b", time.Hour, 0, 100, 100, end)
		r.wantPins("held", "a", time.Hour, 0)
		r.wantPins("held", "b", end-time.Millisecond, 0)

		// Another rule at the next start: the hold stays to its end.
		r.at(2 * time.Hour)
		r.start(100, time.Hour)
		r.want("held under another rule", "b", 2*time.Hour, 0, 100, 100, end)
		r.wantPins("held under another rule", "b", end-time.Millisecond, 0)
		r.wantPins("after the hold", "b", end, 100)
		r.wantPins("after the hold", "a", end, 100)
	})
}

// TestAfterRestoreJobs: the jobs waiting or running in a backup come back
// as recovered, never as waiting, and are never run; done jobs stay done.
func TestAfterRestoreJobs(t *testing.T) {
	jf := newJobFixture(t, func(c *Config) { c.Limit = 2 })
	q := jf.enqueue("a", 5)
	if len(q.Jobs) != 5 {
		t.Fatalf("queued %d jobs, want 5", len(q.Jobs))
	}
	first, second := jf.next(), jf.next()
	if _, err := jf.eng.Finish(jf.ctx, first, Outcome{Done: true, At: jf.eng.Now(), Result: []byte("pinned")}); err != nil {
		t.Fatal(err)
	}
	jf.none() // the second runs on, the other three wait for slots
	if err := jf.eng.Close(jf.ctx); err != nil {
		t.Fatal(err)
	}

	cfg := testConfig(jf.clock)
	cfg.Limit = 2
	got, err := AfterRestore(t.Context(), cfg, jf.mem, zerolog.Nop())
	if err != nil || got.Unfinished != 4 {
		t.Fatalf("AfterRestore = %+v, %v; want 4 unfinished jobs", got, err)
	}
	jf.restart(func(c *Config) { c.Limit = 2 })
	recovered := map[uint64]bool{}
	for range 4 {
		j := jf.next()
		if !j.Recovered || recovered[j.ID] || j.ID == first.ID {
			t.Fatalf("job %d handed out (recovered %v), want each unfinished job once, recovered", j.ID, j.Recovered)
		}
		recovered[j.ID] = true
		if _, err := jf.eng.Finish(jf.ctx, j, Outcome{Unknown: true}); err != nil {
			t.Fatalf("Finish(%d): %v", j.ID, err)
		}
	}
	if !recovered[second.ID] {
		t.Errorf("the running job %d was not recovered", second.ID)
	}
	jf.clock.Advance(24 * time.Hour)
	if _, err := jf.eng.Status(jf.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	jf.none()
	jobs, _ := jf.jobs("a")
	for _, j := range jobs {
		if j.State != JobDone {
			t.Errorf("job %d is %v, want done", j.ID, j.State)
		}
		if j.ID == first.ID && string(j.Result) != "pinned" {
			t.Errorf("the done job's result is %q, want kept", j.Result)
		}
	}
}

// TestAfterRestoreClock: the restore's instant, from which the hold
// runs, is engine time as a start would take it: on the boot of the
// stored clock anchor, the anchor plus the boot-time clock, whatever the
// wall clock says; after a reboot, the wall clock, never behind the
// stored high-water mark. The anchor it stores carries that time to the
// next start.
func TestAfterRestoreClock(t *testing.T) {
	w := newRestartWorld(t)
	w.start()
	w.pin("a", 10)
	w.stop()
	restore := func() Restored {
		t.Helper()
		cfg := DefaultConfig()
		cfg.Uptime = w.up
		cfg.Wall = func() int64 { return w.wall.UnixMilli() }
		r, err := AfterRestore(t.Context(), cfg, w.store, zerolog.Nop())
		if err != nil {
			t.Fatalf("AfterRestore: %v", err)
		}
		return r
	}
	hold := 5*time.Minute + 12*time.Hour

	// Same boot, the wall clock set back 3 hours meanwhile.
	w.pass(time.Hour)
	w.wall = w.wall.Add(-3 * time.Hour)
	first := restore()
	if !first.At.Equal(w.real) || !first.HoldUntil.Equal(w.real.Add(hold)) {
		t.Fatalf("same boot: restored at %v, held until %v; want %v and %v", first.At, first.HoldUntil, w.real, w.real.Add(hold))
	}
	w.pass(time.Minute)
	w.start()
	if st, err := w.eng.Status(context.Background(), "b"); err != nil || !st.NextFree.Equal(w.real.Add(hold-time.Minute)) {
		t.Fatalf("next start on the same boot: %+v, %v; want the hold's end %v", st, err, w.real.Add(hold-time.Minute))
	}
	w.stop()

	// A reboot with the wall clock behind the first restore: the
	// instant it stored is the floor.
	w.up.reboot("boot-2", time.Minute)
	if r := restore(); !r.At.Equal(first.At) {
		t.Fatalf("after a reboot: restored at %v, want the stored instant %v", r.At, first.At)
	}
}
