package persistencetest

import (
	"errors"
	"reflect"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

// testRules checks a persistence.RuleKeeper: no rules until some are set,
// the last set are returned whole, apart from account writes, and a
// closed store refuses both calls. Stores that keep no rules skip it.
func testRules(t *testing.T, open storeFactory) {
	s := open(t)
	rk, ok := s.(persistence.RuleKeeper)
	if !ok {
		t.Skip("not a persistence.RuleKeeper")
	}
	check := func(when string, want persistence.Rules) {
		t.Helper()
		if got, err := rk.Rules(t.Context()); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Rules %s = %+v, %v; want %+v", when, got, err, want)
		}
	}
	check("of a new store", persistence.Rules{})

	first := persistence.Rules{Current: persistence.Rule{Limit: 100, Window: 12 * 3600_000}, Lease: 300_000}
	if err := rk.SetRules(t.Context(), first); err != nil {
		t.Fatalf("SetRules: %v", err)
	}
	check("after SetRules", first)

	second := persistence.Rules{
		Current: persistence.Rule{Limit: 50, Window: 3600_000},
		Lease:   60_000,
		Earlier: []persistence.Rule{{Limit: 100, Window: 12 * 3600_000, Until: T3}},
	}
	if err := rk.SetRules(t.Context(), second); err != nil {
		t.Fatalf("SetRules: %v", err)
	}
	// The store keeps a copy: changing the caller's slice changes nothing.
	want := second
	want.Earlier = []persistence.Rule{second.Earlier[0]}
	second.Earlier[0].Limit = 7
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Events: []persistence.Event{Reserve(1, 1, T0)}}}, HighWater: T1})
	check("replaced, after a write", want)

	// A restore's hold keeps its start; rules without one read back
	// without one.
	held := persistence.Rules{
		Current: persistence.Rule{Limit: 50, Window: 3600_000},
		Lease:   60_000,
		Earlier: []persistence.Rule{{Limit: 100, Window: 12 * 3600_000, Until: T3}, {Limit: 0, Window: 12 * 3600_000, Until: T3 + 1, From: T1}},
	}
	if err := rk.SetRules(t.Context(), held); err != nil {
		t.Fatalf("SetRules: %v", err)
	}
	check("with a hold's start", held)
	if err := rk.SetRules(t.Context(), want); err != nil {
		t.Fatalf("SetRules: %v", err)
	}
	check("without a start again", want)

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := rk.Rules(t.Context()); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("Rules after Close = %v, want ErrClosed", err)
	}
	if err := rk.SetRules(t.Context(), first); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("SetRules after Close = %v, want ErrClosed", err)
	}
}
