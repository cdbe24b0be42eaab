package actors

import (
	"context"
	"errors"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/badgerstore"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

const (
	hourMs  = int64(time.Hour / time.Millisecond)
	leaseMs = int64(5 * time.Minute / time.Millisecond)
)

func TestNextRules(t *testing.T) {
	const now = int64(1_000_000_000_000)
	r := func(limit int, window time.Duration, until int64) persistence.Rule {
		return persistence.Rule{Limit: limit, Window: window.Milliseconds(), Until: until}
	}
	rules := func(cur persistence.Rule, lease int64, earlier ...persistence.Rule) persistence.Rules {
		return persistence.Rules{Current: cur, Lease: lease, Earlier: earlier}
	}
	day12 := 12 * time.Hour
	tests := []struct {
		name    string
		stored  persistence.Rules
		cur     persistence.Rule
		want    persistence.Rules
		changed bool
	}{
		{"nothing stored", persistence.Rules{}, r(100, day12, 0),
			rules(r(100, day12, 0), leaseMs), false},
		{"same rule, other lease", rules(r(100, day12, 0), 60_000), r(100, day12, 0),
			rules(r(100, day12, 0), leaseMs), false},
		{"window shrinks: the last rule stays for its lease and window", rules(r(100, day12, 0), 60_000), r(100, time.Hour, 0),
			rules(r(100, time.Hour, 0), leaseMs, r(100, day12, now+60_000+12*hourMs)), true},
		{"limit raised", rules(r(50, day12, 0), leaseMs), r(100, day12, 0),
			rules(r(100, day12, 0), leaseMs, r(50, day12, now+leaseMs+12*hourMs)), true},
		{"limit lowered: the new rule implies the last", rules(r(100, day12, 0), leaseMs), r(50, day12, 0),
			rules(r(50, day12, 0), leaseMs), true},
		{"window grows: the new rule implies the last", rules(r(100, day12, 0), leaseMs), r(100, 24*time.Hour, 0),
			rules(r(100, 24*time.Hour, 0), leaseMs), true},
		{"second change during a transition", rules(r(50, time.Hour, 0), leaseMs, r(100, day12, now+hourMs)), r(80, 30*time.Minute, 0),
			rules(r(80, 30*time.Minute, 0), leaseMs, r(100, day12, now+hourMs), r(50, time.Hour, now+leaseMs+hourMs)), true},
		{"a change implying an earlier rule drops it", rules(r(50, time.Hour, 0), leaseMs, r(100, day12, now+hourMs)), r(20, day12, 0),
			rules(r(20, day12, 0), leaseMs), true},
		{"back to the earlier rule", rules(r(50, time.Hour, 0), leaseMs, r(100, day12, now+hourMs)), r(100, day12, 0),
			rules(r(100, day12, 0), leaseMs, r(50, time.Hour, now+leaseMs+hourMs)), true},
		{"ended rules go", rules(r(50, time.Hour, 0), leaseMs, r(100, day12, now), r(10, day12, now-1)), r(50, time.Hour, 0),
			rules(r(50, time.Hour, 0), leaseMs), false},
		{"an earlier rule implied by another that lasts as long goes", rules(r(50, time.Hour, 0), leaseMs, r(30, day12, now+hourMs), r(40, day12, now+hourMs), r(30, day12, now+hourMs)), r(50, time.Hour, 0),
			rules(r(50, time.Hour, 0), leaseMs, r(30, day12, now+hourMs)), false},
		{"an earlier rule implied by one ending sooner stays", rules(r(50, time.Hour, 0), leaseMs, r(30, day12, now+hourMs), r(40, day12, now+2*hourMs)), r(50, time.Hour, 0),
			rules(r(50, time.Hour, 0), leaseMs, r(30, day12, now+hourMs), r(40, day12, now+2*hourMs)), false},
	}
	for _, tt := range tests {
		got, changed := nextRules(tt.stored, tt.cur, leaseMs, now)
		if !reflect.DeepEqual(got, tt.want) || changed != tt.changed {
			t.Errorf("%s: nextRules = %+v, %v; want %+v, %v", tt.name, got, changed, tt.want, tt.changed)
		}
	}
}

// ruleRig runs engines one after the other over one store, each under the
// rule it is given, on a manual clock, as restarts of pinbot with other
// --pin-limit and --pin-window settings would.
type ruleRig struct {
	t      *testing.T
	t0     time.Time
	clock  *ManualClock
	reopen func() persistence.Store // the store, opened again after a close
	store  persistence.Store
	eng    *Engine
	ctx    context.Context
	mutate func(*Config)
}

// forEachStore runs test over the memory store and over a durable Badger
// store, which is closed and opened again at each restart.
func forEachStore(t *testing.T, test func(t *testing.T, r *ruleRig)) {
	t.Run("MemStore", func(t *testing.T) {
		r := newRuleRig(t)
		mem := persistencetest.NewMemStore(r.clock.Now)
		r.reopen = func() persistence.Store { return mem }
		r.mutate = func(c *Config) { c.Wall = r.clock.Now } // the store's expiry follows the clock
		test(t, r)
	})
	t.Run("Badger", func(t *testing.T) {
		dir := t.TempDir() // removed after the rig's cleanup closed the store
		r := newRuleRig(t)
		r.reopen = func() persistence.Store {
			s, err := badgerstore.Open(dir, badgerstore.Options{Durable: true, MemTableSize: 1 << 20, BlockCacheSize: 1 << 20}, zerolog.Nop())
			if err != nil {
				t.Fatalf("opening the Badger store: %v", err)
			}
			return s
		}
		// Badger expires keys by the wall clock: the engine's time starts
		// at the wall clock's and runs ahead of it.
		r.mutate = func(c *Config) { c.Wall = nil }
		test(t, r)
	})
}

func newRuleRig(t *testing.T) *ruleRig {
	t0 := time.Now().Truncate(time.Minute)
	r := &ruleRig{t: t, t0: t0, clock: NewManualClock(t0), ctx: context.Background()}
	t.Cleanup(r.stop)
	return r
}

// at moves the clock to t0+d.
func (r *ruleRig) at(d time.Duration) { r.clock.Set(r.t0.Add(d)) }

// stop closes the engine and, unless it is the memory store, the store.
func (r *ruleRig) stop() {
	if r.eng != nil {
		if err := r.eng.Close(r.ctx); err != nil {
			r.t.Errorf("Close: %v", err)
		}
		r.eng = nil
	}
	if _, mem := r.store.(*persistencetest.MemStore); r.store != nil && !mem {
		if err := r.store.Close(); err != nil {
			r.t.Errorf("closing the store: %v", err)
		}
	}
	r.store = nil
}

// start restarts the engine under limit pins per window.
func (r *ruleRig) start(limit int, window time.Duration, mutate ...func(*Config)) {
	r.t.Helper()
	r.stop()
	r.store = r.reopen()
	cfg := testConfig(r.clock)
	r.mutate(&cfg)
	cfg.Limit, cfg.Window = limit, window
	for _, m := range mutate {
		m(&cfg)
	}
	eng, err := New(cfg, r.store, zerolog.Nop())
	if err != nil {
		r.t.Fatalf("New: %v", err)
	}
	r.eng = eng
}

// pin makes up to n pins on account at the clock's time, committed at
// once, and returns how many the engine granted.
func (r *ruleRig) pin(account string, n int) int {
	r.t.Helper()
	made := 0
	for made < n {
		g, err := r.eng.Reserve(r.ctx, account, min(n-made, MaxBatch))
		if err != nil {
			r.t.Fatalf("Reserve: %v", err)
		}
		for _, res := range g.Reservations() {
			if _, err := r.eng.Commit(r.ctx, res, r.eng.Now()); err != nil {
				r.t.Fatalf("Commit: %v", err)
			}
		}
		made += g.Granted
		if g.Granted == 0 {
			break
		}
	}
	return made
}

// batches makes n pins on account, per ten a minute apart from the clock's
// time on, and leaves the clock at the last batch.
func (r *ruleRig) batches(account string, n int) {
	r.t.Helper()
	for i := 0; i < n; i += MaxBatch {
		if i > 0 {
			r.clock.Advance(time.Minute)
		}
		if got := r.pin(account, min(MaxBatch, n-i)); got != min(MaxBatch, n-i) {
			r.t.Fatalf("batch %d: %d pins granted, want %d", i/MaxBatch, got, min(MaxBatch, n-i))
		}
	}
}

// want checks account's status at t0+d: used under the current rule, the
// slots blocked by earlier rules, and when the next slot frees (an offset
// from t0).
func (r *ruleRig) want(step string, account string, d time.Duration, used, limit, blocked int, next time.Duration) {
	r.t.Helper()
	r.at(d)
	st, err := r.eng.Status(r.ctx, account)
	if err != nil {
		r.t.Fatalf("%s: Status: %v", step, err)
	}
	if st.Used != used || st.Limit != limit || st.Blocked != blocked || !st.NextFree.Equal(r.t0.Add(next)) {
		r.t.Fatalf("%s: at +%v: used %d/%d, blocked %d, next free +%v; want %d/%d, blocked %d, next free +%v",
			step, d, st.Used, st.Limit, st.Blocked, st.NextFree.Sub(r.t0), used, limit, blocked, next)
	}
	if free := max(limit-used-blocked, 0); st.Free() != free {
		r.t.Fatalf("%s: Free() = %d, want %d", step, st.Free(), free)
	}
}

// wantPins checks that at t0+d the engine grants exactly n of n+1 pins
// asked for.
func (r *ruleRig) wantPins(step string, account string, d time.Duration, n int) {
	r.t.Helper()
	r.at(d)
	if got := r.pin(account, n+1); got != n {
		r.t.Fatalf("%s: at +%v: %d pins granted, want %d", step, d, got, n)
	}
}

// wantRules checks the rules the store keeps.
func (r *ruleRig) wantRules(step string, cur persistence.Rule, earlier ...persistence.Rule) {
	r.t.Helper()
	got, err := r.store.(persistence.RuleKeeper).Rules(r.t.Context())
	want := persistence.Rules{Current: cur, Lease: leaseMs, Earlier: earlier}
	if err != nil || !reflect.DeepEqual(got, want) {
		r.t.Fatalf("%s: stored rules %+v, %v; want %+v", step, got, err, want)
	}
}

func (r *ruleRig) rule(limit int, window time.Duration, until time.Duration) persistence.Rule {
	u := int64(0)
	if until != 0 {
		u = r.t0.Add(until).UnixMilli()
	}
	return persistence.Rule{Limit: limit, Window: window.Milliseconds(), Until: u}
}

// TestRuleChangeWindowShrink: 100 pins per 12 hours, then per hour. The
// pins made under the 12-hour rule free no slot before it says, however
// old they are under the new one; once they have all left the old window
// (the change's instant plus a lease plus 12 hours), the hourly rule
// alone applies.
func TestRuleChangeWindowShrink(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *ruleRig) {
		r.start(100, 12*time.Hour)
		r.batches("a", 100) // 10 pins a minute, from +0 to +9m
		r.wantRules("first run", r.rule(100, 12*time.Hour, 0))

		r.at(2 * time.Hour)
		r.start(100, time.Hour)
		until := 2*time.Hour + 5*time.Minute + 12*time.Hour
		r.wantRules("after the change", r.rule(100, time.Hour, 0), r.rule(100, 12*time.Hour, until))
		// Under the hourly rule nothing counts; the 12-hour one is full.
		r.want("after the change", "a", 2*time.Hour, 0, 100, 100, 12*time.Hour)
		r.wantPins("after the change", "a", 2*time.Hour, 0)

		// A restart under the same rule keeps the old one in force.
		r.at(3 * time.Hour)
		r.start(100, time.Hour)
		r.wantRules("restarted", r.rule(100, time.Hour, 0), r.rule(100, 12*time.Hour, until))
		r.wantPins("restarted", "a", 12*time.Hour-time.Millisecond, 0)
		r.wantPins("first batch left the old window", "a", 12*time.Hour, 10)
		r.wantPins("second batch left the old window", "a", 12*time.Hour+time.Minute, 10)
		// At +13h: 80 of the old 100 count under the 12-hour rule with the
		// 20 new ones; under the hourly rule only the 10 of +12h01m.
		r.want("both rules", "a", 13*time.Hour, 10, 100, 10, 13*time.Hour)
		r.wantPins("both rules", "a", 13*time.Hour, 80)
		// Just before the end of the old rule, it is full; the hourly rule
		// is empty. The next slot frees when the old rule ends.
		r.want("old rule ends", "a", until-time.Millisecond, 0, 100, 100, until)
		r.wantPins("old rule ends", "a", until-time.Millisecond, 0)
		r.wantPins("hourly rule alone", "a", until, 100)
		r.want("hourly rule alone", "a", until, 100, 100, 0, until+time.Hour)

		r.at(until + time.Minute)
		r.start(100, time.Hour)
		r.wantRules("old rule over", r.rule(100, time.Hour, 0))
		r.want("old rule over", "a", until+time.Minute, 100, 100, 0, until+time.Hour)
	})
}

// TestRuleChangeLimitLowered: 100 pins per 12 hours, then 50. The new
// rule implies the old one, which needs no transition: the account shows
// its 100 pins against the limit of 50 and frees slots once fewer than 50
// count.
func TestRuleChangeLimitLowered(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *ruleRig) {
		r.start(100, 12*time.Hour)
		r.batches("a", 100) // +0 to +9m

		r.at(time.Hour)
		r.start(50, 12*time.Hour)
		r.wantRules("after the change", r.rule(50, 12*time.Hour, 0))
		// The 51st oldest pin is the first of +5m.
		r.want("after the change", "a", time.Hour, 100, 50, 0, 12*time.Hour+5*time.Minute)
		r.wantPins("half the old pins left", "a", 12*time.Hour+5*time.Minute-time.Millisecond, 0)
		r.wantPins("half the old pins left", "a", 12*time.Hour+5*time.Minute, 10)
		r.want("full again", "a", 12*time.Hour+5*time.Minute, 50, 50, 0, 12*time.Hour+6*time.Minute)
	})
}

// TestRuleChangeLimitRaised: 50 pins per 12 hours, then 100. The 50 pins
// made under the old rule keep it full until they leave its window; the
// higher limit applies alone a lease and a window after the change.
func TestRuleChangeLimitRaised(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *ruleRig) {
		r.start(50, 12*time.Hour)
		r.batches("a", 50) // +0 to +4m

		r.at(time.Hour)
		r.start(100, 12*time.Hour)
		until := time.Hour + 5*time.Minute + 12*time.Hour
		r.wantRules("after the change", r.rule(100, 12*time.Hour, 0), r.rule(50, 12*time.Hour, until))
		r.want("after the change", "a", time.Hour, 50, 100, 50, 12*time.Hour)
		r.wantPins("after the change", "a", 12*time.Hour-time.Millisecond, 0)
		r.wantPins("first batch left", "a", 12*time.Hour, 10)
		r.want("first batch left", "a", 12*time.Hour, 50, 100, 50, 12*time.Hour+time.Minute)
		// Once every old pin has left, the old rule has 40 slots for the
		// new one's 90.
		r.wantPins("old pins gone", "a", 12*time.Hour+4*time.Minute, 40)
		r.wantPins("old rule ends", "a", until-time.Millisecond, 0)
		// Then the 100-pin rule alone: the 50 pins of +12h count.
		r.wantPins("new rule alone", "a", until, 50)
	})
}

// TestRuleChangeWindowGrows: 100 pins per 12 hours, then per 24 hours. The
// new rule implies the old; the pins made before count for the whole new
// window: their state is stored with a TTL of a 12-hour window plus the
// 24-hour margin.
func TestRuleChangeWindowGrows(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *ruleRig) {
		r.start(100, 12*time.Hour)
		r.batches("a", 100) // +0 to +9m

		r.at(time.Hour)
		r.start(100, 24*time.Hour)
		r.wantRules("after the change", r.rule(100, 24*time.Hour, 0))
		r.want("after the change", "a", time.Hour, 100, 100, 0, 24*time.Hour)

		r.at(23 * time.Hour)
		r.start(100, 24*time.Hour) // loads the account again from the store
		r.wantPins("old window over", "a", 23*time.Hour, 0)
		r.wantPins("new window over", "a", 24*time.Hour, 10)
	})
}

// TestRuleChangeTwice: 100 pins per 12 hours, then 50 per hour, then 80
// per half hour while the first change is in transition: each rule holds
// until the pins made under it have left its window.
func TestRuleChangeTwice(t *testing.T) {
	forEachStore(t, func(t *testing.T, r *ruleRig) {
		r.start(100, 12*time.Hour)
		r.batches("a", 20) // +0, +1m

		r.at(2 * time.Hour)
		r.start(50, time.Hour)
		r.wantPins("second rule", "a", 2*time.Hour, 50) // 70 of 100 per 12 hours, 50 of 50 per hour

		r.at(150 * time.Minute)
		r.start(80, 30*time.Minute)
		untilFirst := 2*time.Hour + 5*time.Minute + 12*time.Hour
		untilSecond := 150*time.Minute + 5*time.Minute + time.Hour
		r.wantRules("third rule", r.rule(80, 30*time.Minute, 0),
			r.rule(100, 12*time.Hour, untilFirst), r.rule(50, time.Hour, untilSecond))
		// The half-hour rule sees nothing; the hourly one is full until
		// its 50 pins of +2h leave it.
		r.want("third rule", "a", 150*time.Minute, 0, 80, 80, 3*time.Hour)

		// The rules survive another restart.
		r.at(160 * time.Minute)
		r.start(80, 30*time.Minute)
		r.wantRules("restarted", r.rule(80, 30*time.Minute, 0),
			r.rule(100, 12*time.Hour, untilFirst), r.rule(50, time.Hour, untilSecond))
		r.wantPins("hourly rule full", "a", 3*time.Hour-time.Millisecond, 0)
		// At +3h the hourly rule frees its 50; the 12-hour rule has 30.
		r.wantPins("12-hour rule", "a", 3*time.Hour, 30)
		r.want("12-hour rule", "a", 3*time.Hour, 30, 80, 50, 12*time.Hour)
		// The first 10 pins leave the 12-hour window; the hourly rule has
		// ended.
		r.wantPins("first batch left", "a", 12*time.Hour, 10)
		// Just before its end the 12-hour rule counts the 40 pins of +3h
		// and +12h: it allows 60 of the half-hour rule's 80.
		r.wantPins("first rule ends", "a", untilFirst-time.Millisecond, 60)
		r.wantPins("half-hour rule alone", "a", untilFirst, 20)

		r.at(untilFirst)
		r.start(80, 30*time.Minute)
		r.wantRules("transitions over", r.rule(80, 30*time.Minute, 0))
	})
}

// TestRuleChangeTTL: while an earlier, longer window is in force, the
// account's state is written with a TTL that covers it. With no TTL
// margin, a TTL taken from the new hourly window alone would let the
// store drop the pins the 12-hour rule still counts.
func TestRuleChangeTTL(t *testing.T) {
	r := newRuleRig(t)
	mem := persistencetest.NewMemStore(r.clock.Now)
	r.reopen = func() persistence.Store { return mem }
	r.mutate = func(c *Config) { c.Wall = r.clock.Now; c.TTLMargin = 0 }
	r.start(100, 12*time.Hour)
	r.batches("a", 100)

	r.at(10 * time.Minute)
	r.start(100, time.Hour)
	// A write under the new rule: the hold's event, then the snapshot at
	// passivation, replace what the first run stored.
	if _, err := r.eng.Hold(r.ctx, "a", r.eng.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	r.at(2 * time.Hour)
	r.start(100, time.Hour)
	r.want("state kept", "a", 2*time.Hour, 0, 100, 100, 12*time.Hour)
	r.wantPins("state kept", "a", 11*time.Hour, 0)
}

// TestRuleChangeStoredBeforeRules: a store written before rules were kept
// was written under the defaults, 100 pins per 12 hours.
func TestRuleChangeStoredBeforeRules(t *testing.T) {
	clock := NewManualClock(monday)
	mem := persistencetest.NewMemStore(clock.Now)
	acct := persistence.AccountWrite{Account: "a", ExpiresAt: ms(monday) + 48*hourMs,
		Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2, Committed: []int64{ms(monday)}}}
	if err := mem.Write(t.Context(), &persistence.Batch{Accounts: []persistence.AccountWrite{acct}, HighWater: ms(monday)}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	cfg := testConfig(clock)
	cfg.Limit, cfg.Window = 1, time.Hour
	eng, err := New(cfg, mem, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	got, _ := mem.Rules(t.Context())
	want := persistence.Rules{Current: persistence.Rule{Limit: 1, Window: hourMs}, Lease: leaseMs,
		Earlier: []persistence.Rule{{Limit: DefaultLimit, Window: 12 * hourMs, Until: ms(monday) + hourMs + leaseMs + 12*hourMs}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stored rules %+v, want %+v", got, want)
	}
	// An empty store has no past: its first run's rule applies alone.
	empty := persistencetest.NewMemStore(clock.Now)
	eng2, err := New(cfg, empty, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng2.Close(context.Background())
	if got, _ := empty.Rules(t.Context()); !reflect.DeepEqual(got, persistence.Rules{Current: want.Current, Lease: leaseMs}) {
		t.Fatalf("stored rules of a new store %+v", got)
	}
}

// TestRuleChangeStoreFailures: the engine does not start when it cannot
// read the stored rules, or store changed ones; a start that changes
// nothing writes nothing. A store that keeps no rules applies the
// configuration alone.
func TestRuleChangeStoreFailures(t *testing.T) {
	clock := NewManualClock(monday)
	fs := persistencetest.NewFaultStore(persistencetest.NewMemStore(clock.Now))
	cfg := testConfig(clock)
	start := func(limit int) error {
		cfg.Limit = limit
		eng, err := New(cfg, fs, zerolog.Nop())
		if err == nil {
			err = eng.Close(context.Background())
		}
		return err
	}
	if err := start(100); err != nil {
		t.Fatal(err)
	}
	fs.FailWrites(persistencetest.ErrDiskFull)
	if err := start(50); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("New with a changed limit and a full disk: %v, want ENOSPC", err)
	}
	if err := start(100); err != nil {
		t.Fatalf("New with the stored limit and a full disk: %v", err)
	}

	broken := errors.New("unreadable")
	if _, err := New(cfg, rulesErrStore{fs, broken}, zerolog.Nop()); !errors.Is(err, broken) {
		t.Fatalf("New over unreadable rules: %v", err)
	}

	fs.ClearFaults()
	cfg.Limit = 1
	eng, err := New(cfg, noRules{fs}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	if got, _ := fs.Rules(t.Context()); got.Current.Limit != 100 {
		t.Errorf("a store without rules was given some through its wrapper: %+v", got)
	}
	if g, err := eng.Reserve(context.Background(), "a", 2); err != nil || g.Granted != 1 {
		t.Errorf("Reserve under a limit of 1 = %+v, %v", g, err)
	}
}

// noRules hides the RuleKeeper of the store it wraps.
type noRules struct{ persistence.Store }

// rulesErrStore is a RuleKeeper that cannot read its rules.
type rulesErrStore struct {
	persistence.Store
	err error
}

func (s rulesErrStore) Rules(context.Context) (persistence.Rules, error) {
	return persistence.Rules{}, s.err
}
func (s rulesErrStore) SetRules(context.Context, persistence.Rules) error { return nil }
