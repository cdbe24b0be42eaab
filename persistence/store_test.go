package persistence

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// storeFactory opens an empty store for one test; the store is closed by
// the test's cleanup unless the test closed it.
type storeFactory func(t *testing.T) Store

func newMem(t *testing.T) Store {
	t.Helper()
	s := NewMemStore(nil)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// testBadgerOptions are small enough that many stores can be open in one
// test binary, and make a transaction overflow after about 1,600 entries.
func testBadgerOptions() BadgerOptions {
	return BadgerOptions{MemTableSize: 1 << 20, BlockCacheSize: 1 << 20}
}

func openBadger(t *testing.T, dir string, opts BadgerOptions) *BadgerStore {
	t.Helper()
	s, err := OpenBadger(dir, opts, zerolog.Nop())
	if err != nil {
		t.Fatalf("OpenBadger(%q): %v", dir, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newBadgerInMemory(t *testing.T) Store {
	t.Helper()
	opts := testBadgerOptions()
	opts.InMemory = true
	return openBadger(t, "", opts)
}

func newBadgerOnDisk(t *testing.T) Store {
	t.Helper()
	opts := testBadgerOptions()
	opts.Durable = true
	return openBadger(t, t.TempDir(), opts)
}

var factories = []struct {
	name string
	open storeFactory
}{
	{"MemStore", newMem},
	{"BadgerInMemory", newBadgerInMemory},
	{"BadgerOnDisk", newBadgerOnDisk},
}

// TestStoreConformance runs the same behavioural suite against every Store
// implementation.
func TestStoreConformance(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, open storeFactory)
	}{
		{"RoundTrip", testRoundTrip},
		{"MissingAccount", testMissingAccount},
		{"SnapshotDropsJournal", testSnapshotDropsJournal},
		{"SnapshotInSameWrite", testSnapshotInSameWrite},
		{"WideDropRange", testWideDropRange},
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
	}
	for _, f := range factories {
		t.Run(f.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) { tt.run(t, f.open) })
			}
		})
	}
}

// Fixed engine instants (Unix ms) used as event times.
const (
	t0 = int64(1_700_000_000_000)
	t1 = t0 + 60_000
	t2 = t0 + 120_000
	t3 = t0 + 180_000
)

func reserve(seq, id uint64, at int64) Event {
	return Event{Seq: seq, Kind: EventReserve, ID: id, Count: 1, At: at, Deadline: at + 30_000}
}

func commit(seq, id uint64, at int64) Event {
	return Event{Seq: seq, Kind: EventCommit, ID: id, At: at}
}

func release(seq, id uint64) Event {
	return Event{Seq: seq, Kind: EventRelease, ID: id}
}

func mustWrite(t *testing.T, s Store, b *Batch) {
	t.Helper()
	if err := s.Write(b); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func mustLoad(t *testing.T, s Store, account string) Loaded {
	t.Helper()
	l, err := s.Load(account)
	if err != nil {
		t.Fatalf("Load(%q): %v", account, err)
	}
	return l
}

func checkLoaded(t *testing.T, s Store, account string, want Loaded) {
	t.Helper()
	got := mustLoad(t, s, account)
	if !equalLoaded(got, want) {
		t.Errorf("Load(%q) =\n  %+v\nwant\n  %+v", account, got, want)
	}
}

func equalSnapshot(a, b Snapshot) bool {
	return a.Seq == b.Seq && a.NextID == b.NextID && a.HoldUntil == b.HoldUntil &&
		slices.Equal(a.Committed, b.Committed) && slices.Equal(a.Pending, b.Pending) && slices.Equal(a.Lapsed, b.Lapsed)
}

func equalLoaded(a, b Loaded) bool {
	return equalSnapshot(a.Snapshot, b.Snapshot) && slices.Equal(a.Events, b.Events)
}

func accounts(t *testing.T, s Store) []string {
	t.Helper()
	var got []string
	if err := s.Accounts(func(a string) error {
		got = append(got, a)
		return nil
	}); err != nil {
		t.Fatalf("Accounts: %v", err)
	}
	return got
}

// storedSeqs returns the journal seqs physically stored for account,
// including those a snapshot hides from Load.
func storedSeqs(t *testing.T, s Store, account string) []uint64 {
	t.Helper()
	var seqs []uint64
	switch s := s.(type) {
	case *MemStore:
		s.mu.Lock()
		if a := s.accounts[account]; a != nil {
			for seq := range a.journal {
				seqs = append(seqs, seq)
			}
		}
		s.mu.Unlock()
		slices.Sort(seqs)
	case *BadgerStore:
		s.walMu.RLock()
		for _, te := range s.wal.get(account) {
			seqs = append(seqs, te.Seq)
		}
		s.walMu.RUnlock()
	default:
		t.Fatalf("storedSeqs: unknown store %T", s)
	}
	return seqs
}

func testRoundTrip(t *testing.T, open storeFactory) {
	s := open(t)
	events := []Event{
		{Seq: 1, Kind: EventReserve, ID: 1, Count: 3, At: t0, Deadline: t0 + 30_000},
		commit(2, 1, t1),
		release(3, 2),
	}
	mustWrite(t, s, &Batch{Accounts: []AccountWrite{
		{Account: "123456789012345678", Events: events[:1]},
		{Account: "other", Events: []Event{reserve(1, 1, t0)}},
	}})
	mustWrite(t, s, &Batch{Accounts: []AccountWrite{
		{Account: "123456789012345678", Events: events[1:]},
	}})
	checkLoaded(t, s, "123456789012345678", Loaded{Events: events})
	checkLoaded(t, s, "other", Loaded{Events: []Event{reserve(1, 1, t0)}})
}

func testMissingAccount(t *testing.T, open storeFactory) {
	s := open(t)
	mustWrite(t, s, &Batch{Accounts: []AccountWrite{{Account: "ab", Events: []Event{reserve(1, 1, t0)}}}})
	for _, a := range []string{"a", "abc", "b"} {
		checkLoaded(t, s, a, Loaded{})
	}
}

func testSnapshotDropsJournal(t *testing.T, open storeFactory) {
	s := open(t)
	const acct = "acct"
	evs := []Event{reserve(1, 1, t0), commit(2, 1, t1), reserve(3, 2, t1), commit(4, 2, t2), reserve(5, 3, t2)}
	mustWrite(t, s, &Batch{Accounts: []AccountWrite{{Account: acct, Events: evs}}})

	snap := &Snapshot{Seq: 3, NextID: 3, Committed: []int64{t1}, Pending: []Pending{{ID: 2, ReservedAt: t1, Deadline: t1 + 30_000}}}
	mustWrite(t, s, &Batch{Accounts: []AccountWrite{{
		Account: acct, Events: []Event{commit(6, 3, t3)}, Snapshot: snap,
	}}})
	want := Loaded{Snapshot: *snap, Events: []Event{evs[3], evs[4], commit(6, 3, t3)}}
	checkLoaded(t, s, acct, want)
	if got, want := storedSeqs(t, s, acct), []uint64{4, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("stored seqs after snapshot = %v, want %v", got, want)
	}

	// A later snapshot supersedes every older event.
	snap2 := &Snapshot{Seq: 6, NextID: 4, Committed: []int64{t1, t2, t3}}
	mustWrite(t, s, &Batch{Accounts: []AccountWrite{{Account: acct, Snapshot: snap2}}})
	checkLoaded(t, s, acct, Loaded{Snapshot: *snap2})
	if got := storedSeqs(t, s, acct); len(got) != 0 {
		t.Errorf("stored seqs after second snapshot = %v, want none", got)
	}
}

func testSnapshotInSameWrite(t *testing.T, open storeFactory) {
	s := open(t)
	const acct = "same"
	snap := &Snapshot{Seq: 2, NextID: 2, Committed: []int64{t1}}
	mustWrite(t, s, &Batch{Accounts: []AccountWrite{{
		Account:  acct,
		Events:   []Event{reserve(1, 1, t0), commit(2, 1, t1), reserve(3, 2, t2)},
		Snapshot: snap,
	}}})
	checkLoaded(t, s, acct, Loaded{Snapshot: *snap, Events: []Event{reserve(3, 2, t2)}})
	if got, want := storedSeqs(t, s, acct), []uint64{3}; !slices.Equal(got, want) {
		t.Errorf("stored seqs = %v, want %v", got, want)
	}
}

func testWideDropRange(t *testing.T, open storeFactory) {
	s := open(t)
	const acct = "wide"
	mustWrite(t, s, &Batch{Accounts: []AccountWrite{
		{Account: acct, Events: []Event{reserve(1, 1, t0), reserve(500_000, 2, t1), reserve(2_000_000, 3, t2)}},
		{Account: acct + "x", Events: []Event{reserve(7, 1, t0)}},
	}})
	snap := &Snapshot{Seq: 1_999_999, NextID: 3}
	mustWrite(t, s, &Batch{Accounts: []AccountWrite{{Account: acct, Snapshot: snap}}})
	checkLoaded(t, s, acct, Loaded{Snapshot: *snap, Events: []Event{reserve(2_000_000, 3, t2)}})
	if got, want := storedSeqs(t, s, acct), []uint64{2_000_000}; !slices.Equal(got, want) {
		t.Errorf("stored seqs = %v, want %v", got, want)
	}
	checkLoaded(t, s, acct+"x", Loaded{Events: []Event{reserve(7, 1, t0)}})
}

func testHighWaterOnlyGrows(t *testing.T, open storeFactory) {
	s := open(t)
	steps := []struct {
		write, want int64
	}{
		{0, 0},
		{t1, t1},
		{t0, t1},
		{t2, t2},
		{0, t2},
		{-5, t2},
	}
	for i, st := range steps {
		mustWrite(t, s, &Batch{HighWater: st.write})
		got, err := s.HighWater()
		if err != nil || got != st.want {
			t.Errorf("step %d: write %d: HighWater() = %d, %v want %d", i, st.write, got, err, st.want)
		}
	}
}

func testAccountsOrder(t *testing.T, open storeFactory) {
	s := open(t)
	snap := &Snapshot{Seq: 1, NextID: 2}
	// Journal-only, snapshot-only and both; IDs that are prefixes of each
	// other, so that seeking past one account's journal must not skip the
	// next account.
	writes := []AccountWrite{
		{Account: "b", Snapshot: snap},
		{Account: "a", Events: []Event{reserve(1, 1, t0), reserve(2, 2, t0), reserve(3, 3, t0)}},
		{Account: "a\x01", Events: []Event{reserve(1, 1, t0)}},
		{Account: "ab", Events: []Event{reserve(2, 2, t0)}, Snapshot: snap},
		{Account: "abc", Snapshot: snap},
		{Account: "c", Events: []Event{reserve(1, 1, t0), reserve(2, 2, t0)}},
		{Account: "\xff", Events: []Event{reserve(1, 1, t0)}},
	}
	mustWrite(t, s, &Batch{Accounts: writes})
	want := []string{"a", "a\x01", "ab", "abc", "b", "c", "\xff"}
	if got := accounts(t, s); !slices.Equal(got, want) {
		t.Errorf("Accounts = %q, want %q", got, want)
	}
}

func testAccountsStops(t *testing.T, open storeFactory) {
	s := open(t)
	for _, a := range []string{"a", "b", "c"} {
		mustWrite(t, s, &Batch{Accounts: []AccountWrite{{Account: a, Events: []Event{reserve(1, 1, t0)}}}})
	}
	stop := errors.New("stop")
	var seen []string
	err := s.Accounts(func(a string) error {
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
		mustWrite(t, s, &Batch{Accounts: []AccountWrite{{
			Account: fmt.Sprintf("acct%02d", i), Events: []Event{reserve(1, uint64(i), t0)},
		}}})
	}
	n := 0
	err := s.Accounts(func(a string) error {
		l, err := s.Load(a)
		if err != nil {
			return err
		}
		if len(l.Events) != 1 {
			return fmt.Errorf("%s: %d events", a, len(l.Events))
		}
		n++
		// Writing during a scan is allowed too.
		return s.Write(&Batch{Accounts: []AccountWrite{{Account: a, Events: []Event{commit(2, 0, t1)}}}})
	})
	if err != nil || n != 20 {
		t.Errorf("Accounts with Load in callback: %v after %d accounts, want nil after 20", err, n)
	}
}

func testInvalidAccount(t *testing.T, open storeFactory) {
	s := open(t)
	longest := strings.Repeat("x", MaxAccountLen)
	mustWrite(t, s, &Batch{Accounts: []AccountWrite{{Account: longest, Events: []Event{reserve(1, 1, t0)}}}})
	checkLoaded(t, s, longest, Loaded{Events: []Event{reserve(1, 1, t0)}})

	for _, bad := range []string{"", longest + "x", "a\x00b", "\x00"} {
		if _, err := s.Load(bad); !errors.Is(err, ErrInvalidAccount) {
			t.Errorf("Load(%q) = %v, want ErrInvalidAccount", bad, err)
		}
		b := &Batch{HighWater: t3, Accounts: []AccountWrite{
			{Account: "good", Events: []Event{reserve(1, 1, t0)}},
			{Account: bad, Events: []Event{reserve(1, 1, t0)}},
		}}
		if err := s.Write(b); !errors.Is(err, ErrInvalidAccount) {
			t.Errorf("Write(%q) = %v, want ErrInvalidAccount", bad, err)
		}
	}
	// The failed batches wrote nothing, not even their valid parts.
	checkLoaded(t, s, "good", Loaded{})
	if hw, _ := s.HighWater(); hw != 0 {
		t.Errorf("HighWater after rejected batches = %d, want 0", hw)
	}
	if got := accounts(t, s); !slices.Equal(got, []string{longest}) {
		t.Errorf("Accounts = %q, want only the longest valid ID", got)
	}
}

func testZeroSeqRejected(t *testing.T, open storeFactory) {
	s := open(t)
	err := s.Write(&Batch{Accounts: []AccountWrite{{Account: "a", Events: []Event{reserve(0, 1, t0)}}}})
	if err == nil || !strings.HasPrefix(err.Error(), "persistence: ") {
		t.Errorf("Write with seq 0 = %v, want a persistence error", err)
	}
	if err := s.Write(nil); err == nil {
		t.Error("Write(nil) = nil, want error")
	}
	checkLoaded(t, s, "a", Loaded{})
}

func testClosed(t *testing.T, open storeFactory) {
	s := open(t)
	mustWrite(t, s, &Batch{HighWater: t0, Accounts: []AccountWrite{{Account: "a", Events: []Event{reserve(1, 1, t0)}}}})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Write", func() error { return s.Write(&Batch{HighWater: t1}) }},
		{"Load", func() error { _, err := s.Load("a"); return err }},
		{"Accounts", func() error { return s.Accounts(func(string) error { return nil }) }},
		{"HighWater", func() error { _, err := s.HighWater(); return err }},
		{"Close", s.Close},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", c.name, err)
		}
	}
}

// testExpiry uses the wall clock, which BadgerStore's TTLs follow: state
// that expired an hour ago is gone, state expiring in an hour is there.
func testExpiry(t *testing.T, open storeFactory) {
	s := open(t)
	now := time.Now().UnixMilli()
	snap := &Snapshot{Seq: 1, NextID: 2, Committed: []int64{t0}}
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
	var b Batch
	for _, tt := range tests {
		aw := AccountWrite{Account: tt.account, Events: []Event{reserve(2, 2, t1)}, ExpiresAt: tt.expiresAt}
		if !strings.HasSuffix(tt.account, "journal-only") {
			aw.Snapshot = snap
		}
		b.Accounts = append(b.Accounts, aw)
	}
	mustWrite(t, s, &b)

	var want []string
	for _, tt := range tests {
		var w Loaded
		if tt.present {
			w = Loaded{Snapshot: *snap, Events: []Event{reserve(2, 2, t1)}}
			want = append(want, tt.account)
		}
		checkLoaded(t, s, tt.account, w)
	}
	slices.Sort(want)
	if got := accounts(t, s); !slices.Equal(got, want) {
		t.Errorf("Accounts = %q, want %q", got, want)
	}
}

func testCallerSlicesCopied(t *testing.T, open storeFactory) {
	s := open(t)
	snap := &Snapshot{Seq: 1, NextID: 5, Committed: []int64{t0, t1}, Pending: []Pending{{ID: 4, ReservedAt: t2, Deadline: t3}}}
	events := []Event{reserve(2, 5, t2)}
	mustWrite(t, s, &Batch{Accounts: []AccountWrite{{Account: "a", Events: events, Snapshot: snap}}})
	want := Loaded{
		Snapshot: Snapshot{Seq: 1, NextID: 5, Committed: []int64{t0, t1}, Pending: []Pending{{ID: 4, ReservedAt: t2, Deadline: t3}}},
		Events:   []Event{reserve(2, 5, t2)},
	}
	snap.Committed[0], snap.Pending[0].ID, events[0].At = 0, 0, 0
	checkLoaded(t, s, "a", want)

	// Nor does changing what Load returned.
	l := mustLoad(t, s, "a")
	l.Snapshot.Committed[1], l.Events[0].ID = 0, 0
	checkLoaded(t, s, "a", want)
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
				b := &Batch{HighWater: t0 + int64(i), Accounts: []AccountWrite{{Account: acct, Events: []Event{reserve(seq, seq, t0)}}}}
				if err := s.Write(b); err != nil {
					errs <- err
					return
				}
				if _, err := s.Load(acct); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			for range perWriter {
				if err := s.Accounts(func(a string) error { _, err := s.Load(a); return err }); err != nil {
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
		if l := mustLoad(t, s, fmt.Sprintf("w%d", w)); len(l.Events) != perWriter {
			t.Errorf("w%d: %d events, want %d", w, len(l.Events), perWriter)
		}
	}
	if hw, _ := s.HighWater(); hw != t0+perWriter-1 {
		t.Errorf("HighWater = %d, want %d", hw, t0+perWriter-1)
	}
}

// TestCloseWaitsForCalls checks that Close lets a running scan finish and
// that calls made while Close waits fail with ErrClosed instead of
// blocking.
func TestCloseWaitsForCalls(t *testing.T) {
	for _, f := range factories {
		t.Run(f.name, func(t *testing.T) {
			s := f.open(t)
			mustWrite(t, s, &Batch{Accounts: []AccountWrite{
				{Account: "a", Events: []Event{reserve(1, 1, t0)}},
				{Account: "b", Events: []Event{reserve(1, 1, t0)}},
			}})
			closed := make(chan error, 1)
			var seen []string
			err := s.Accounts(func(a string) error {
				seen = append(seen, a)
				if a == "a" {
					go func() { closed <- s.Close() }()
					// Wait until Close has marked the store closed.
					for {
						if _, err := s.HighWater(); errors.Is(err, ErrClosed) {
							break
						}
						runtime.Gosched()
					}
				}
				_, err := s.Load(a)
				if a == "a" && !errors.Is(err, ErrClosed) {
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
		})
	}
}
