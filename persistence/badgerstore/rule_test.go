package badgerstore

import (
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

// TestBadgerRulesReopen: the rules are durable, apart from the clock
// anchor and the accounts, and an unreadable value is reported as corrupt.
func TestBadgerRulesReopen(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	opts.Durable = true
	s := openStore(t, dir, opts)
	rules := persistence.Rules{
		Current: persistence.Rule{Limit: 50, Window: 3_600_000},
		Lease:   300_000,
		Earlier: []persistence.Rule{{Limit: 100, Window: 43_200_000, Until: t3}},
	}
	if err := s.SetRules(t.Context(), rules); err != nil {
		t.Fatal(err)
	}
	anchor := persistence.ClockAnchor{BootID: "boot", Uptime: 1, Engine: t1}
	if err := s.SetAnchor(t.Context(), anchor); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, &persistence.Batch{HighWater: t2, Accounts: []persistence.AccountWrite{{Account: "a", Events: []persistence.Event{reserve(1, 1, t0)}}}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir, opts)
	if got, err := s.Rules(t.Context()); err != nil || !reflect.DeepEqual(got, rules) {
		t.Errorf("Rules after reopen = %+v, %v; want %+v", got, err, rules)
	}
	if a, err := s.Anchor(t.Context()); err != nil || a != anchor {
		t.Errorf("Anchor after reopen = %+v, %v; want %+v", a, err, anchor)
	}

	// A value that is not rules.
	if err := s.putMeta(rulesKey, []byte("garbage"), "rules"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rules(t.Context()); !errors.Is(err, persistence.ErrCorrupt) {
		t.Errorf("Rules of a corrupt value = %v, want ErrCorrupt", err)
	}
	// The key is a meta key: no scan of accounts sees it.
	if got := accounts(t, s); len(got) != 1 || got[0] != "a" {
		t.Errorf("Accounts = %q, want [a]", got)
	}
}

// TestBadgerRulesEarlierFormat: rules stored before a hold knew its start
// (format 0x71) still load, and rules with a hold's start are kept whole
// across a reopen.
func TestBadgerRulesEarlierFormat(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	opts.Durable = true
	s := openStore(t, dir, opts)
	// As a store written before From existed holds them.
	old, _ := hex.DecodeString("716480bab70300c0cf2402c80180b89929c0a7e9a7fa622880f0b252c0c9b2fef9625fc35c4d")
	if err := s.putMeta(rulesKey, old, "rules"); err != nil {
		t.Fatal(err)
	}
	want := persistence.Rules{Current: persistence.Rule{Limit: 50, Window: 3600_000}, Lease: 300_000, Earlier: []persistence.Rule{
		{Limit: 100, Window: 12 * 3600_000, Until: 1_700_000_000_000 + 12*3600_000 + 300_000},
		{Limit: 20, Window: 24 * 3600_000, Until: 1_700_000_060_000},
	}}
	if got, err := s.Rules(t.Context()); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Rules of the earlier format = %+v, %v; want %+v", got, err, want)
	}
	held := want
	held.Earlier = append(held.Earlier, persistence.Rule{Limit: 0, Window: 12 * 3600_000, Until: t3, From: t1})
	if err := s.SetRules(t.Context(), held); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, opts)
	if got, err := s.Rules(t.Context()); err != nil || !reflect.DeepEqual(got, held) {
		t.Errorf("Rules with a hold's start after reopen = %+v, %v; want %+v", got, err, held)
	}
}
