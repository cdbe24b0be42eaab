package badgerstore

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
)

func TestBadgerAccountsSkipsMalformedKeys(t *testing.T) {
	var logs bytes.Buffer
	opts := testOptions()
	opts.InMemory = true
	s, err := Open("", opts, zerolog.New(&logs).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "a", Events: []persistence.Event{reserve(1, 1, t0)}},
		{Account: "c", Snapshot: &persistence.Snapshot{Seq: 1}},
	}})
	for _, k := range []string{"s", "s\x00x"} {
		rawSet(t, s, []byte(k), []byte("x"))
	}
	if got, want := accounts(t, s), []string{"a", "c"}; !slices.Equal(got, want) {
		t.Errorf("Accounts = %q, want %q", got, want)
	}
	if n := strings.Count(logs.String(), "skipping malformed"); n != 2 {
		t.Errorf("logged %d malformed keys, want 2:\n%s", n, logs.String())
	}
}

// TestBadgerManyAccounts scans many accounts and journal events, from the
// memtable and, after a reopen, from tables on disk.
func TestBadgerManyAccounts(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	const n, eventsEach = 3000, 4
	var want []string
	for start := 0; start < n; start += 300 {
		var b persistence.Batch
		for i := start; i < start+300; i++ {
			a := fmt.Sprintf("%07d", i*7919%n)
			want = append(want, a)
			aw := persistence.AccountWrite{Account: a}
			for seq := range uint64(eventsEach) {
				aw.Events = append(aw.Events, reserve(seq+1, seq+1, t0))
			}
			if i%3 == 0 {
				aw.Snapshot = &persistence.Snapshot{Seq: 2, NextID: 3}
			}
			b.Accounts = append(b.Accounts, aw)
		}
		mustWrite(t, s, &b)
	}
	slices.Sort(want)
	if got := accounts(t, s); !slices.Equal(got, want) {
		t.Errorf("Accounts returned %d accounts, want %d", len(got), len(want))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, testOptions())
	if len(s.db.Tables()) == 0 {
		t.Error("no tables on disk after reopen")
	}
	if got := accounts(t, s); !slices.Equal(got, want) {
		t.Errorf("after reopen, Accounts returned %d accounts, want %d", len(got), len(want))
	}
}

// TestBadgerAccountsDoesNotSeeLaterWrites: Accounts does not see writes
// made after it started (here, one written by the callback itself), as
// its documentation says: reads run at the version of the last committed
// write, not at the newest version there is.
func TestBadgerAccountsDoesNotSeeLaterWrites(t *testing.T) {
	s := newTestStore(t)
	stored := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for _, a := range stored {
		mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: a, Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2}}}})
	}
	var got []string
	err := s.Accounts(t.Context(), func(a string) error {
		got = append(got, a)
		if a == "a" {
			// Written after the scan started.
			mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "z", Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2}}}})
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Accounts: %v", err)
	}
	if want := stored; !slices.Equal(got, want) {
		t.Fatalf("Accounts yielded %v, want %v: it saw a snapshot written after it started", got, want)
	}
}
