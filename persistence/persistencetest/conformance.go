package persistencetest

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pinbot/pinbot/persistence"
)

// storeFactory opens an empty store for one test; the store is closed by
// the test's cleanup unless the test closed it.
type storeFactory func(t *testing.T) persistence.Store

// TestStore runs the behavioural suite every persistence.Store must pass,
// as subtests of t: writes and loads round-trip, snapshots supersede
// events, the high-water mark only grows, scans are ordered and may call
// the store, invalid input is refused, expiry follows the wall clock,
// Close waits for the calls in progress, concurrent use is safe, a store
// that is a persistence.RuleKeeper keeps the rules it is given, and a
// store ignores Batch.Fence or refuses stale fences consistently.
//
// open returns an empty store for one subtest and arranges for it to be
// closed when the subtest ends (a subtest may close it first). stored
// returns the journal seqs a store physically keeps for account, those a
// snapshot hides from Load included, so that the suite can check that a
// snapshot frees what it supersedes; nil skips those checks.
func TestStore(t *testing.T, open func(t *testing.T) persistence.Store, stored func(s persistence.Store, account string) []uint64) {
	tests := []struct {
		name string
		run  func(t *testing.T, open storeFactory)
	}{
		{"RoundTrip", testRoundTrip},
		{"MissingAccount", testMissingAccount},
		{"SnapshotDropsJournal", func(t *testing.T, open storeFactory) { testSnapshotDropsJournal(t, open, stored) }},
		{"SnapshotInSameWrite", func(t *testing.T, open storeFactory) { testSnapshotInSameWrite(t, open, stored) }},
		{"SnapshotRebuilt", testSnapshotRebuilt},
		{"WideDropRange", func(t *testing.T, open storeFactory) { testWideDropRange(t, open, stored) }},
		{"HighWaterOnlyGrows", testHighWaterOnlyGrows},
		{"AccountsOrder", testAccountsOrder},
		{"AccountsStops", testAccountsStops},
		{"AccountsCallbackLoads", testAccountsCallbackLoads},
		{"InvalidAccount", testInvalidAccount},
		{"ZeroSeqRejected", testZeroSeqRejected},
		{"Closed", testClosed},
		{"Expiry", testExpiry},
		{"CallerSlicesCopied", testCallerSlicesCopied},
		{"Concurrent", testConcurrent},
		{"CloseWaitsForCalls", testCloseWaitsForCalls},
		{"Rules", testRules},
		{"Fence", testFence},
	}
	tests = append(tests, jobTests...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, open) })
	}
}

// storedFunc is TestStore's stored argument.
type storedFunc func(s persistence.Store, account string) []uint64

// checkStored checks that s keeps exactly the journal seqs want for
// account, when stored can tell.
func checkStored(t *testing.T, stored storedFunc, s persistence.Store, account string, want []uint64, when string) {
	t.Helper()
	if stored == nil {
		return
	}
	if got := stored(s, account); !slices.Equal(got, want) {
		t.Errorf("stored seqs %s = %v, want %v", when, got, want)
	}
}

func testRoundTrip(t *testing.T, open storeFactory) {
	s := open(t)
	events := []persistence.Event{
		{Seq: 1, Kind: persistence.EventReserve, ID: 1, Count: 3, At: T0, Deadline: T0 + 30_000},
		Commit(2, 1, T1),
		Release(3, 2),
	}
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "123456789012345678", Events: events[:1]},
		{Account: "other", Events: []persistence.Event{Reserve(1, 1, T0)}},
	}})
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "123456789012345678", Events: events[1:]},
	}})
	CheckLoaded(t, s, "123456789012345678", persistence.Loaded{Events: events})
	CheckLoaded(t, s, "other", persistence.Loaded{Events: []persistence.Event{Reserve(1, 1, T0)}})
}

func testMissingAccount(t *testing.T, open storeFactory) {
	s := open(t)
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "ab", Events: []persistence.Event{Reserve(1, 1, T0)}}}})
	for _, a := range []string{"a", "abc", "b"} {
		CheckLoaded(t, s, a, persistence.Loaded{})
	}
}

func testSnapshotDropsJournal(t *testing.T, open storeFactory, stored storedFunc) {
	s := open(t)
	const acct = "acct"
	evs := []persistence.Event{Reserve(1, 1, T0), Commit(2, 1, T1), Reserve(3, 2, T1), Commit(4, 2, T2), Reserve(5, 3, T2)}
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: acct, Events: evs}}})

	snap := &persistence.Snapshot{Seq: 3, NextID: 3, Committed: []int64{T1}, Pending: []persistence.Pending{{ID: 2, ReservedAt: T1, Deadline: T1 + 30_000}}}
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{
		Account: acct, Events: []persistence.Event{Commit(6, 3, T3)}, Snapshot: snap,
	}}})
	want := persistence.Loaded{Snapshot: *snap, Events: []persistence.Event{evs[3], evs[4], Commit(6, 3, T3)}}
	CheckLoaded(t, s, acct, want)
	checkStored(t, stored, s, acct, []uint64{4, 5, 6}, "after snapshot")

	// A later snapshot supersedes every older event.
	snap2 := &persistence.Snapshot{Seq: 6, NextID: 4, Committed: []int64{T1, T2, T3}}
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: acct, Snapshot: snap2}}})
	CheckLoaded(t, s, acct, persistence.Loaded{Snapshot: *snap2})
	checkStored(t, stored, s, acct, nil, "after second snapshot")
}

func testSnapshotInSameWrite(t *testing.T, open storeFactory, stored storedFunc) {
	s := open(t)
	const acct = "same"
	snap := &persistence.Snapshot{Seq: 2, NextID: 2, Committed: []int64{T1}}
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{
		Account:  acct,
		Events:   []persistence.Event{Reserve(1, 1, T0), Commit(2, 1, T1), Reserve(3, 2, T2)},
		Snapshot: snap,
	}}})
	CheckLoaded(t, s, acct, persistence.Loaded{Snapshot: *snap, Events: []persistence.Event{Reserve(3, 2, T2)}})
	checkStored(t, stored, s, acct, []uint64{3}, "after the write")
}

// testSnapshotRebuilt: a snapshot keeps the instant its window was
// rebuilt from Pinterest's listing, with its other fields, and a later
// snapshot without one replaces it.
func testSnapshotRebuilt(t *testing.T, open storeFactory) {
	s := open(t)
	const acct = "rebuilt"
	snap := &persistence.Snapshot{Seq: 1, NextID: 3, Committed: []int64{T0, T1}, HoldUntil: T3,
		Lapsed: []persistence.Lapsed{{ID: 2, Deadline: T1}}, Rebuilt: T2}
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{
		Account: acct, Events: []persistence.Event{Reserve(1, 1, T0)}, Snapshot: snap,
	}}})
	CheckLoaded(t, s, acct, persistence.Loaded{Snapshot: *snap})
	plain := &persistence.Snapshot{Seq: 1, NextID: 3, Committed: []int64{T1}, Rebuilt: T3}
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: acct, Snapshot: plain}}})
	CheckLoaded(t, s, acct, persistence.Loaded{Snapshot: *plain})
	none := &persistence.Snapshot{Seq: 1, NextID: 3, Committed: []int64{T1}}
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: acct, Snapshot: none}}})
	CheckLoaded(t, s, acct, persistence.Loaded{Snapshot: *none})
}

func testWideDropRange(t *testing.T, open storeFactory, stored storedFunc) {
	s := open(t)
	const acct = "wide"
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: acct, Events: []persistence.Event{Reserve(1, 1, T0), Reserve(500_000, 2, T1), Reserve(2_000_000, 3, T2)}},
		{Account: acct + "x", Events: []persistence.Event{Reserve(7, 1, T0)}},
	}})
	snap := &persistence.Snapshot{Seq: 1_999_999, NextID: 3}
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: acct, Snapshot: snap}}})
	CheckLoaded(t, s, acct, persistence.Loaded{Snapshot: *snap, Events: []persistence.Event{Reserve(2_000_000, 3, T2)}})
	checkStored(t, stored, s, acct, []uint64{2_000_000}, "after the snapshot")
	CheckLoaded(t, s, acct+"x", persistence.Loaded{Events: []persistence.Event{Reserve(7, 1, T0)}})
}

func testHighWaterOnlyGrows(t *testing.T, open storeFactory) {
	s := open(t)
	steps := []struct {
		write, want int64
	}{
		{0, 0},
		{T1, T1},
		{T0, T1},
		{T2, T2},
		{0, T2},
		{-5, T2},
	}
	for i, st := range steps {
		MustWrite(t, s, &persistence.Batch{HighWater: st.write})
		got, err := s.HighWater(t.Context())
		if err != nil || got != st.want {
			t.Errorf("step %d: write %d: HighWater() = %d, %v want %d", i, st.write, got, err, st.want)
		}
	}
}

func testAccountsOrder(t *testing.T, open storeFactory) {
	s := open(t)
	snap := &persistence.Snapshot{Seq: 1, NextID: 2}
	// Journal-only, snapshot-only and both; IDs that are prefixes of each
	// other, so that seeking past one account's journal must not skip the
	// next account.
	writes := []persistence.AccountWrite{
		{Account: "b", Snapshot: snap},
		{Account: "a", Events: []persistence.Event{Reserve(1, 1, T0), Reserve(2, 2, T0), Reserve(3, 3, T0)}},
		{Account: "a\x01", Events: []persistence.Event{Reserve(1, 1, T0)}},
		{Account: "ab", Events: []persistence.Event{Reserve(2, 2, T0)}, Snapshot: snap},
		{Account: "abc", Snapshot: snap},
		{Account: "c", Events: []persistence.Event{Reserve(1, 1, T0), Reserve(2, 2, T0)}},
		{Account: "\xff", Events: []persistence.Event{Reserve(1, 1, T0)}},
	}
	MustWrite(t, s, &persistence.Batch{Accounts: writes})
	want := []string{"a", "a\x01", "ab", "abc", "b", "c", "\xff"}
	if got := Accounts(t, s); !slices.Equal(got, want) {
		t.Errorf("Accounts = %q, want %q", got, want)
	}
}

func testAccountsStops(t *testing.T, open storeFactory) {
	s := open(t)
	for _, a := range []string{"a", "b", "c"} {
		MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: a, Events: []persistence.Event{Reserve(1, 1, T0)}}}})
	}
	stop := errors.New("stop")
	var seen []string
	err := s.Accounts(t.Context(), func(a string) error {
		seen = append(seen, a)
		if a == "b" {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || !slices.Equal(seen, []string{"a", "b"}) {
		t.Errorf("Accounts = %v after %q, want %v after [a b]", err, seen, stop)
	}
}

func testAccountsCallbackLoads(t *testing.T, open storeFactory) {
	s := open(t)
	for i := range 20 {
		MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{
			Account: fmt.Sprintf("acct%02d", i), Events: []persistence.Event{Reserve(1, uint64(i), T0)},
		}}})
	}
	n := 0
	err := s.Accounts(t.Context(), func(a string) error {
		l, err := s.Load(t.Context(), a)
		if err != nil {
			return err
		}
		if len(l.Events) != 1 {
			return fmt.Errorf("%s: %d events", a, len(l.Events))
		}
		n++
		// Writing during a scan is allowed too.
		return s.Write(t.Context(), &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: a, Events: []persistence.Event{Commit(2, 0, T1)}}}})
	})
	if err != nil || n != 20 {
		t.Errorf("Accounts with Load in callback: %v after %d accounts, want nil after 20", err, n)
	}
}

func testInvalidAccount(t *testing.T, open storeFactory) {
	s := open(t)
	longest := strings.Repeat("x", persistence.MaxAccountLen)
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: longest, Events: []persistence.Event{Reserve(1, 1, T0)}}}})
	CheckLoaded(t, s, longest, persistence.Loaded{Events: []persistence.Event{Reserve(1, 1, T0)}})

	for _, bad := range []string{"", longest + "x", "a\x00b", "\x00"} {
		if _, err := s.Load(t.Context(), bad); !errors.Is(err, persistence.ErrInvalidAccount) {
			t.Errorf("Load(%q) = %v, want ErrInvalidAccount", bad, err)
		}
		b := &persistence.Batch{HighWater: T3, Accounts: []persistence.AccountWrite{
			{Account: "good", Events: []persistence.Event{Reserve(1, 1, T0)}},
			{Account: bad, Events: []persistence.Event{Reserve(1, 1, T0)}},
		}}
		if err := s.Write(t.Context(), b); !errors.Is(err, persistence.ErrInvalidAccount) {
			t.Errorf("Write(%q) = %v, want ErrInvalidAccount", bad, err)
		}
	}
	// The failed batches wrote nothing, not even their valid parts.
	CheckLoaded(t, s, "good", persistence.Loaded{})
	if hw, _ := s.HighWater(t.Context()); hw != 0 {
		t.Errorf("HighWater after rejected batches = %d, want 0", hw)
	}
	if got := Accounts(t, s); !slices.Equal(got, []string{longest}) {
		t.Errorf("Accounts = %q, want only the longest valid ID", got)
	}
}

func testZeroSeqRejected(t *testing.T, open storeFactory) {
	s := open(t)
	err := s.Write(t.Context(), &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Events: []persistence.Event{Reserve(0, 1, T0)}}}})
	if err == nil || !strings.HasPrefix(err.Error(), "persistence: ") {
		t.Errorf("Write with seq 0 = %v, want a persistence error", err)
	}
	if err := s.Write(t.Context(), nil); err == nil {
		t.Error("Write(nil) = nil, want error")
	}
	CheckLoaded(t, s, "a", persistence.Loaded{})
}

func testClosed(t *testing.T, open storeFactory) {
	s := open(t)
	MustWrite(t, s, &persistence.Batch{HighWater: T0, Accounts: []persistence.AccountWrite{{Account: "a", Events: []persistence.Event{Reserve(1, 1, T0)}}}})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Write", func() error { return s.Write(t.Context(), &persistence.Batch{HighWater: T1}) }},
		{"Load", func() error { _, err := s.Load(t.Context(), "a"); return err }},
		{"Accounts", func() error { return s.Accounts(t.Context(), func(string) error { return nil }) }},
		{"HighWater", func() error { _, err := s.HighWater(t.Context()); return err }},
		{"Close", s.Close},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, persistence.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", c.name, err)
		}
	}
}

// testExpiry uses the wall clock, which Badger's TTLs follow: state
// that expired an hour ago is gone, state expiring in an hour is there.
func testExpiry(t *testing.T, open storeFactory) {
	s := open(t)
	now := time.Now().UnixMilli()
	snap := &persistence.Snapshot{Seq: 1, NextID: 2, Committed: []int64{T0}}
	tests := []struct {
		account   string
		expiresAt int64
		present   bool
	}{
		{"expired", now - time.Hour.Milliseconds(), false},
		{"expired-journal-only", now - time.Hour.Milliseconds(), false},
		{"live", now + time.Hour.Milliseconds(), true},
		{"forever", 0, true},
		{"negative", -1, true},
	}
	var b persistence.Batch
	for _, tt := range tests {
		aw := persistence.AccountWrite{Account: tt.account, Events: []persistence.Event{Reserve(2, 2, T1)}, ExpiresAt: tt.expiresAt}
		if !strings.HasSuffix(tt.account, "journal-only") {
			aw.Snapshot = snap
		}
		b.Accounts = append(b.Accounts, aw)
	}
	MustWrite(t, s, &b)

	var want []string
	for _, tt := range tests {
		var w persistence.Loaded
		if tt.present {
			w = persistence.Loaded{Snapshot: *snap, Events: []persistence.Event{Reserve(2, 2, T1)}}
			want = append(want, tt.account)
		}
		CheckLoaded(t, s, tt.account, w)
	}
	slices.Sort(want)
	if got := Accounts(t, s); !slices.Equal(got, want) {
		t.Errorf("Accounts = %q, want %q", got, want)
	}
}

func testCallerSlicesCopied(t *testing.T, open storeFactory) {
	s := open(t)
	snap := &persistence.Snapshot{Seq: 1, NextID: 5, Committed: []int64{T0, T1}, Pending: []persistence.Pending{{ID: 4, ReservedAt: T2, Deadline: T3}}}
	events := []persistence.Event{Reserve(2, 5, T2)}
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Events: events, Snapshot: snap}}})
	want := persistence.Loaded{
		Snapshot: persistence.Snapshot{Seq: 1, NextID: 5, Committed: []int64{T0, T1}, Pending: []persistence.Pending{{ID: 4, ReservedAt: T2, Deadline: T3}}},
		Events:   []persistence.Event{Reserve(2, 5, T2)},
	}
	snap.Committed[0], snap.Pending[0].ID, events[0].At = 0, 0, 0
	CheckLoaded(t, s, "a", want)

	// Nor does changing what Load returned.
	l := MustLoad(t, s, "a")
	l.Snapshot.Committed[1], l.Events[0].ID = 0, 0
	CheckLoaded(t, s, "a", want)
}

func testConcurrent(t *testing.T, open storeFactory) {
	s := open(t)
	const writers, perWriter = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*2)
	for w := range writers {
		wg.Go(func() {
			acct := fmt.Sprintf("w%d", w)
			for i := range perWriter {
				seq := uint64(i + 1)
				b := &persistence.Batch{HighWater: T0 + int64(i), Accounts: []persistence.AccountWrite{{Account: acct, Events: []persistence.Event{Reserve(seq, seq, T0)}}}}
				if err := s.Write(t.Context(), b); err != nil {
					errs <- err
					return
				}
				if _, err := s.Load(t.Context(), acct); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			for range perWriter {
				if err := s.Accounts(t.Context(), func(a string) error { _, err := s.Load(t.Context(), a); return err }); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w := range writers {
		if l := MustLoad(t, s, fmt.Sprintf("w%d", w)); len(l.Events) != perWriter {
			t.Errorf("w%d: %d events, want %d", w, len(l.Events), perWriter)
		}
	}
	if hw, _ := s.HighWater(t.Context()); hw != T0+perWriter-1 {
		t.Errorf("HighWater = %d, want %d", hw, T0+perWriter-1)
	}
}

// testCloseWaitsForCalls checks that Close lets a running scan finish
// and that calls made while Close waits fail with ErrClosed instead of
// blocking.
func testCloseWaitsForCalls(t *testing.T, open storeFactory) {
	s := open(t)
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "a", Events: []persistence.Event{Reserve(1, 1, T0)}},
		{Account: "b", Events: []persistence.Event{Reserve(1, 1, T0)}},
	}})
	closed := make(chan error, 1)
	var seen []string
	err := s.Accounts(t.Context(), func(a string) error {
		seen = append(seen, a)
		if a == "a" {
			go func() { closed <- s.Close() }()
			// Wait until Close has marked the store closed.
			for {
				if _, err := s.HighWater(t.Context()); errors.Is(err, persistence.ErrClosed) {
					break
				}
				runtime.Gosched()
			}
		}
		_, err := s.Load(t.Context(), a)
		if a == "a" && !errors.Is(err, persistence.ErrClosed) {
			return fmt.Errorf("Load during Close = %v, want ErrClosed", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []string{"a", "b"}) {
		t.Errorf("scan saw %q, want [a b]", seen)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close = %v", err)
	}
}
