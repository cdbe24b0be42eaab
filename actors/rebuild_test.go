package actors

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
)

// The listing's margins in the rebuild tests: Pinterest acts within a
// minute and lists within another, and its clock lags by up to a minute.
const (
	testSettle = 2 * time.Minute
	testSkew   = time.Minute
)

// restoreAt stores a restore's hold at t0+d, as `pinbot restore` does,
// under limit pins per window.
func (r *ruleRig) restoreAt(d time.Duration, limit int, window time.Duration) Restored {
	r.t.Helper()
	r.stop()
	r.at(d)
	r.store = r.reopen()
	cfg := testConfig(r.clock)
	r.mutate(&cfg)
	cfg.Limit, cfg.Window = limit, window
	got, err := AfterRestore(r.t.Context(), cfg, r.store, zerolog.Nop())
	if err != nil {
		r.t.Fatalf("AfterRestore: %v", err)
	}
	return got
}

// rebuild rebuilds account from a listing begun now (t0+d) of pins
// created at the offsets given from t0.
func (r *ruleRig) rebuild(account string, d time.Duration, created ...time.Duration) (RebuildResult, error) {
	r.t.Helper()
	r.at(d)
	l := Listing{Began: r.eng.Now(), Settle: testSettle, Skew: testSkew}
	for _, c := range created {
		l.Pins = append(l.Pins, r.t0.Add(c))
	}
	return r.eng.Rebuild(r.t.Context(), account, l)
}

// TestRebuildLiftsHold: after a restore, an account whose window is
// rebuilt from a listing begun once every pin of the runs before must be
// listed pins again at once, up to exactly what the listing leaves free,
// each listed pin counting from its creation plus the skew; the pins the
// backup held that the listing also lists count once. The rebuild
// survives a restart; an account not rebuilt stays held; a listing begun
// too soon after the restore lifts nothing.
func TestRebuildLiftsHold(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *ruleRig) {
		r.start(10, time.Hour)
		r.pin("a", 3) // at +0, in the backup
		// The runs after the backup made 4 more at +20m: the restored
		// store does not know them; Pinterest does.
		listed := []time.Duration{-time.Second, -time.Second, -time.Second, 20 * time.Minute, 20 * time.Minute, 20 * time.Minute, 20 * time.Minute}
		res := r.restoreAt(30*time.Minute, 10, time.Hour)
		end := 30*time.Minute + 5*time.Minute + time.Hour
		if !res.HoldUntil.Equal(r.t0.Add(end)) {
			t.Fatalf("held until +%v, want +%v", res.HoldUntil.Sub(r.t0), end)
		}
		r.start(10, time.Hour)
		if got := r.eng.Holds(); len(got) != 1 || !got[0].From.Equal(r.t0.Add(30*time.Minute)) || !got[0].Until.Equal(r.t0.Add(end)) {
			t.Fatalf("Holds = %+v, want one from +30m to +%v", got, end)
		}
		r.want("held", "a", 31*time.Minute, 3, 10, 7, end)
		if awaits, err := r.eng.AwaitsRebuild(t.Context(), "a"); err != nil || !awaits {
			t.Fatalf("AwaitsRebuild before the rebuild = %v, %v; want true", awaits, err)
		}

		// Begun a minute after the restore: pins made up to the restore
		// may still be missing from it.
		if _, err := r.rebuild("a", 31*time.Minute, listed...); !errors.Is(err, ErrRebuildEarly) {
			t.Fatalf("rebuild a minute after the restore: %v, want ErrRebuildEarly", err)
		}
		r.want("after an early listing", "a", 31*time.Minute, 3, 10, 7, end)

		got, err := r.rebuild("a", 32*time.Minute, listed...)
		if err != nil || !got.Rebuilt || got.Listed != 7 || got.Kept != 0 || got.Status.Used != 7 || got.Status.Free() != 3 {
			t.Fatalf("rebuild = %+v, %v; want rebuilt, 7 listed, none kept, 3 free", got, err)
		}
		// The oldest counts from its creation (-1s) plus the skew.
		r.want("rebuilt", "a", 32*time.Minute, 7, 10, 0, 32*time.Minute)
		r.wantPins("rebuilt", "a", 32*time.Minute, 3)
		r.want("full", "a", 32*time.Minute, 10, 10, 0, time.Hour-time.Second+testSkew)
		r.want("not rebuilt", "b", 32*time.Minute, 0, 10, 10, end)

		for _, tt := range []struct {
			account string
			want    bool
		}{{"a", false}, {"b", true}} {
			if awaits, err := r.eng.AwaitsRebuild(t.Context(), tt.account); err != nil || awaits != tt.want {
				t.Fatalf("AwaitsRebuild(%s) after a's rebuild = %v, %v; want %v", tt.account, awaits, err, tt.want)
			}
		}
		// Rebuilt again: nothing left to lift, nothing written.
		if got, err := r.rebuild("a", 33*time.Minute, listed...); err != nil || got.Rebuilt {
			t.Fatalf("second rebuild = %+v, %v; want nothing done", got, err)
		}

		r.start(10, time.Hour)
		r.want("rebuilt, after a restart", "a", 33*time.Minute, 10, 10, 0, time.Hour-time.Second+testSkew)
		r.wantPins("rebuilt, after a restart", "a", time.Hour-time.Second+testSkew-time.Millisecond, 0)
		r.wantPins("rebuilt, after a restart", "a", time.Hour-time.Second+testSkew, 3)
		r.want("not rebuilt, after a restart", "b", time.Hour, 0, 10, 10, end)
		r.wantPins("not rebuilt, after the hold", "b", end, 10)
	})
}

// TestRebuildKeepsUnexplainedPins: a pin the restored state counts that
// no listed pin matches (deleted since, but Pinterest counted it) stays
// where it was; a listed pin it matches counts once, from the later of
// the two instants.
func TestRebuildKeepsUnexplainedPins(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *ruleRig) {
		r.start(10, time.Hour)
		r.pin("c", 2)          // at +0
		r.at(10 * time.Minute) // and one at +10m, listed as created at +9m30s
		r.pin("c", 1)
		r.restoreAt(30*time.Minute, 10, time.Hour)
		r.start(10, time.Hour)
		got, err := r.rebuild("c", 32*time.Minute, 9*time.Minute+30*time.Second, 25*time.Minute)
		if err != nil || !got.Rebuilt || got.Listed != 2 || got.Kept != 2 || got.Status.Used != 4 {
			t.Fatalf("rebuild = %+v, %v; want 2 listed, 2 kept, 4 used", got, err)
		}
		// The two at +0 free at +1h, the matched one at +1h10m30s (the
		// later of +10m and +9m30s plus the skew), the last at +1h26m.
		r.want("rebuilt", "c", 32*time.Minute, 4, 10, 0, 32*time.Minute)
		r.wantPins("rebuilt", "c", 32*time.Minute, 6)
		r.want("full", "c", 32*time.Minute, 10, 10, 0, time.Hour)
		r.want("two free", "c", time.Hour, 8, 10, 0, time.Hour)
		r.wantPins("two free", "c", time.Hour, 2)
		matched := time.Hour + 10*time.Minute + 30*time.Second
		r.want("the matched pin", "c", matched-time.Millisecond, 10, 10, 0, matched)
		r.wantPins("the matched pin", "c", matched, 1)
	})
}

// TestRebuildHoldWithoutStart: a hold stored by a pinbot that did not
// record its start binds every account to its end; no rebuild lifts it.
func TestRebuildHoldWithoutStart(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *ruleRig) {
		r.start(10, time.Hour)
		r.stop()
		r.store = r.reopen()
		rk := r.store.(persistence.RuleKeeper)
		stored, err := rk.Rules(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		end := r.t0.Add(2 * time.Hour).UnixMilli()
		stored.Earlier = []persistence.Rule{{Limit: 0, Window: hourMs, Until: end}}
		if err := rk.SetRules(t.Context(), stored); err != nil {
			t.Fatal(err)
		}
		r.start(10, time.Hour)
		if h := r.eng.Holds(); len(h) != 0 {
			t.Fatalf("Holds = %+v, want none a rebuild lifts", h)
		}
		got, err := r.rebuild("a", 10*time.Minute)
		if err != nil || got.Rebuilt {
			t.Fatalf("rebuild = %+v, %v; want nothing done", got, err)
		}
		r.want("still held", "a", 10*time.Minute, 0, 10, 10, 2*time.Hour)
	})
}

// TestRebuildStartsWaitingJobs: queued pins waiting for the hold start
// as soon as the rebuild frees their slots.
func TestRebuildStartsWaitingJobs(t *testing.T) {
	jf := newJobFixture(t, func(c *Config) { c.Limit, c.Window = 3, time.Hour })
	if err := jf.eng.Close(jf.ctx); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(jf.clock)
	cfg.Limit, cfg.Window = 3, time.Hour
	if _, err := AfterRestore(t.Context(), cfg, jf.mem, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	jf.restart(func(c *Config) { c.Limit, c.Window = 3, time.Hour })
	q := jf.enqueue("a", 2)
	if len(q.Jobs) != 2 {
		t.Fatalf("queued %d jobs, want 2", len(q.Jobs))
	}
	jf.none()
	jf.clock.Advance(testSettle)
	l := Listing{Pins: []time.Time{jf.eng.Now().Add(-time.Hour / 2)}, Began: jf.eng.Now(), Settle: testSettle, Skew: testSkew}
	if got, err := jf.eng.Rebuild(jf.ctx, "a", l); err != nil || !got.Rebuilt {
		t.Fatalf("Rebuild = %+v, %v", got, err)
	}
	jf.next()
	jf.next()
}

// TestLedgerRebuildMatches: how the listing's pins and the stored ones
// are merged.
func TestLedgerRebuildMatches(t *testing.T) {
	const now = int64(10 * hourMs)
	const skew = int64(60_000)
	m := func(x int64) int64 { return now - 30*60_000 + x*60_000 } // minutes from now-30m
	for _, tt := range []struct {
		name         string
		stored       []int64
		created      []int64
		want         []int64
		listed, kept int
	}{
		{"nothing stored", nil, []int64{m(1), m(2)}, []int64{m(2), m(3)}, 2, 0},
		{"all matched", []int64{m(1), m(2)}, []int64{m(0), m(2)}, []int64{m(1), m(3)}, 2, 0},
		{"a lapsed pin, a lease after its creation", []int64{m(6)}, []int64{m(0)}, []int64{m(6)}, 1, 0},
		{"created too long before", []int64{m(10)}, []int64{m(3)}, []int64{m(4), m(10)}, 1, 1},
		{"created too long after", []int64{m(10)}, []int64{m(12)}, []int64{m(10), m(13)}, 1, 1},
		{"each listed pin matches one", []int64{m(10), m(10)}, []int64{m(10)}, []int64{m(10), m(11)}, 1, 1},
		{"too old to count", []int64{m(10)}, []int64{-hourMs, m(10)}, []int64{m(11)}, 1, 0},
	} {
		l := newLedger(10, time.Hour, 5*time.Minute)
		for _, t := range tt.stored {
			l.record(t)
		}
		listed, kept := l.rebuild(now, tt.created, skew, now)
		if got := l.win.Times(nil, now); !slices.Equal(got, tt.want) || listed != tt.listed || kept != tt.kept || l.rebuilt != now {
			t.Errorf("%s: window %v, %d listed, %d kept, rebuilt %d; want %v, %d, %d, %d", tt.name, got, listed, kept, l.rebuilt, tt.want, tt.listed, tt.kept, now)
		}
	}
}

// TestRuleImpliesWithStart: a hold a rebuild lifts implies only rules
// the same rebuilds lift.
func TestRuleImpliesWithStart(t *testing.T) {
	for _, tt := range []struct {
		name string
		r, o rule
		want bool
	}{
		{"a rule without start", rule{limit: 0, width: 10, until: 100}, rule{limit: 5, width: 10, until: 100}, true},
		{"a hold does not imply a rule without start", rule{limit: 0, width: 10, until: 100, from: 1}, rule{limit: 5, width: 10, until: 100}, false},
		{"a later hold implies an earlier one", rule{limit: 0, width: 10, until: 100, from: 2}, rule{limit: 0, width: 10, until: 90, from: 1}, true},
		{"an earlier hold does not imply a later one", rule{limit: 0, width: 10, until: 100, from: 1}, rule{limit: 0, width: 10, until: 90, from: 2}, false},
		{"a rule without start implies a hold", rule{limit: 0, width: 10, until: 100}, rule{limit: 0, width: 10, until: 90, from: 2}, true},
	} {
		if got := tt.r.implies(tt.o); got != tt.want {
			t.Errorf("%s: implies = %v, want %v", tt.name, got, tt.want)
		}
	}
}
