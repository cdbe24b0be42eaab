package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/internal/app"
	"github.com/pinbot/pinbot/persistence"
)

// TestReconcileStoresTheHold: reconcile, on a data directory whose
// engine store is gone or kept, stores a restore's hold that knows when
// it began (so that the next start rebuilds each account from
// Pinterest's listing), sized by the window given and the stored rules,
// and says so; a store another process holds is refused, untouched.
func TestReconcileStoresTheHold(t *testing.T) {
	t.Parallel()
	rulesOf := func(t *testing.T, dir string) persistence.Rules {
		t.Helper()
		store, err := app.OpenStore(filepath.Join(dir, "engine"), zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		r, err := store.(persistence.RuleKeeper).Rules(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// A data directory lost whole: nothing left of it.
	lost := filepath.Join(t.TempDir(), "data")
	r := pinbot(t, "", map[string]string{"PINBOT_PIN_WINDOW": "2h"}, "reconcile", "--data-dir", lost)
	r.wantCode(t, "reconcile", exitOK)
	for _, w := range []string{"(in 2h 5m) unless its pins are read from Pinterest", "the next start of pinbot lists each linked account's pins on Pinterest"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("reconcile did not say %q:\n%s", w, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "assumes") {
		t.Errorf("reconcile with a window given warned about it:\n%s", r.stdout)
	}
	rules := rulesOf(t, lost)
	if len(rules.Earlier) != 1 || rules.Earlier[0].Limit != 0 || rules.Earlier[0].From == 0 ||
		time.Duration(rules.Earlier[0].Until-rules.Earlier[0].From)*time.Millisecond != 2*time.Hour+5*time.Minute {
		t.Fatalf("stored rules %+v, want a hold of 2h 5m with its start", rules)
	}

	// A data directory kept from an earlier run under a 30-minute window,
	// reconciled with no window given: the default one sizes the hold.
	kept := t.TempDir()
	pinbot(t, "pin alice 2\n", map[string]string{"PINBOT_PIN_LIMIT": "2", "PINBOT_PIN_WINDOW": "30m"},
		"demo", "--data-dir", kept).wantCode(t, "demo", exitOK)
	r = pinbot(t, "", nil, "reconcile", "--data-dir", kept)
	r.wantCode(t, "reconcile", exitOK)
	if !strings.Contains(r.stdout, "(in 12h 5m)") || !strings.Contains(r.stdout, "the hold assumes pinbot runs under a window of 12h at most") {
		t.Errorf("reconcile without a window:\n%s", r.stdout)
	}
	if rules := rulesOf(t, kept); len(rules.Earlier) != 1 || rules.Earlier[0].From == 0 {
		t.Fatalf("stored rules %+v, want the hold", rules)
	}

	// A store in use.
	store, err := app.OpenStore(filepath.Join(kept, "engine"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r = pinbot(t, "", nil, "reconcile", "--data-dir", kept)
	r.wantCode(t, "reconcile of a store in use", exitFailure)
	if !strings.Contains(r.stderr, "then reconcile") {
		t.Errorf("stderr %q, want what to do", r.stderr)
	}
	pinbot(t, "", nil, "reconcile", "--data-dir", kept, "extra").wantCode(t, "reconcile with an argument", exitUsage)
}
