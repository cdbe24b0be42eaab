package badgerstore

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
)

// restoreCopy backs s up and restores the backup into a fresh directory,
// which it opens.
func restoreCopy(t *testing.T, s *Store) *Store {
	t.Helper()
	var buf bytes.Buffer
	if _, err := s.Backup(&buf); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "engine")
	if err := Restore(dir, &buf, testOptions(), zerolog.Nop()); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	return openStore(t, dir, testOptions())
}

// TestBadgerBackupRestore: a restored store holds what the original held
// (state, journal events, jobs, rules, clock anchor, high-water mark) and
// takes new writes above the restored versions.
func TestBadgerBackupRestore(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	mustWrite(t, s, &persistence.Batch{HighWater: t3, Accounts: []persistence.AccountWrite{
		{Account: "alice", Events: []persistence.Event{reserve(1, 1, t0), commit(2, 1, t1)}},
		{Account: "bob", Events: []persistence.Event{reserve(1, 1, t0)},
			Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2, Pending: []persistence.Pending{{ID: 1, ReservedAt: t0, Deadline: t2}}}},
		{Account: "carol", Jobs: []persistence.Job{
			{ID: 1, State: persistence.JobWaiting, Enqueued: t0, Payload: []byte("one")},
			{ID: 2, State: persistence.JobRunning, Enqueued: t0, Slot: 7, Deadline: t2, Payload: []byte("two")},
		}},
	}})
	rules := persistence.Rules{Current: persistence.Rule{Limit: 5, Window: 1000}, Lease: 100,
		Earlier: []persistence.Rule{{Limit: 9, Window: 5000, Until: t3}}}
	if err := s.SetRules(t.Context(), rules); err != nil {
		t.Fatal(err)
	}
	anchor := persistence.ClockAnchor{BootID: "boot", Uptime: 42, Engine: t1}
	if err := s.SetAnchor(t.Context(), anchor); err != nil {
		t.Fatal(err)
	}

	r := restoreCopy(t, s)
	for _, acct := range []string{"alice", "bob", "carol"} {
		want, got := mustLoad(t, s, acct), mustLoad(t, r, acct)
		if !equalLoaded(got, want) {
			t.Errorf("%s: restored %+v, want %+v", acct, got, want)
		}
	}
	if got, want := accounts(t, r), accounts(t, s); !slices.Equal(got, want) {
		t.Errorf("restored accounts %v, want %v", got, want)
	}
	if got, want := journaled(t, r), journaled(t, s); !slices.Equal(got, want) {
		t.Errorf("restored journaled accounts %v, want %v", got, want)
	}
	jobs, err := r.Jobs(t.Context(), "carol")
	if err != nil || len(jobs) != 2 || jobs[1].State != persistence.JobRunning || string(jobs[1].Payload) != "two" {
		t.Errorf("restored jobs %+v, %v", jobs, err)
	}
	if got, err := r.Rules(t.Context()); err != nil || !slices.Equal(got.Earlier, rules.Earlier) || got.Current != rules.Current {
		t.Errorf("restored rules %+v, %v; want %+v", got, err, rules)
	}
	if got, err := r.Anchor(t.Context()); err != nil || got != anchor {
		t.Errorf("restored anchor %+v, %v; want %+v", got, err, anchor)
	}
	if hw, err := r.HighWater(t.Context()); err != nil || hw != t3 {
		t.Errorf("restored high water %d, %v; want %d", hw, err, t3)
	}

	// New writes land above the restored versions, and stay.
	mustWrite(t, r, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "alice", Events: []persistence.Event{reserve(3, 2, t2)}},
	}})
	rdir := r.dir
	r = reopen(t, r, rdir)
	if l := mustLoad(t, r, "alice"); len(l.Events) != 3 {
		t.Errorf("alice after a write and a reopen: %+v, want 3 events", l)
	}
}

// TestBadgerRestoreRefusesNonEmptyDir: Restore writes only into a new
// store.
func TestBadgerRestoreRefusesNonEmptyDir(t *testing.T) {
	s := openStore(t, t.TempDir(), testOptions())
	var buf bytes.Buffer
	if _, err := s.Backup(&buf); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Restore(dir, &buf, testOptions(), zerolog.Nop()); err == nil {
		t.Fatal("Restore into a non-empty directory succeeded")
	}
}

// TestBadgerBackupWhileWriting: backups taken while batches are written
// each hold a prefix of the batches, every batch whole: each batch
// journals one event for two accounts (and sometimes snapshots them), and
// every restored copy has both at the same seq, without a gap, no earlier than the last
// batch acknowledged before the backup began.
func TestBadgerBackupWhileWriting(t *testing.T) {
	opts := testOptions()
	opts.Durable = true // an fsync per batch paces the writer
	s := openStore(t, t.TempDir(), opts)
	var acked atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for seq := uint64(1); ; seq++ {
			select {
			case <-stop:
				return
			default:
			}
			b := &persistence.Batch{HighWater: t0 + int64(seq)}
			for _, acct := range []string{"a", "b"} {
				aw := persistence.AccountWrite{Account: acct, Events: []persistence.Event{commit(seq, seq, t0+int64(seq))}}
				if seq%7 == 0 {
					aw.Snapshot = &persistence.Snapshot{Seq: seq, NextID: seq + 1, Committed: []int64{t0 + int64(seq)}}
				}
				b.Accounts = append(b.Accounts, aw)
			}
			if err := s.Write(t.Context(), b); err != nil {
				t.Errorf("Write %d: %v", seq, err)
				return
			}
			acked.Store(seq)
		}
	}()
	defer func() { close(stop); <-done }()
	// seqOf returns the last seq restored for acct, whose events must
	// follow its snapshot without a gap.
	seqOf := func(r *Store, acct string) uint64 {
		l := mustLoad(t, r, acct)
		seq := l.Snapshot.Seq
		for _, ev := range l.Events {
			if ev.Seq != seq+1 {
				t.Fatalf("restored %s: event %d follows seq %d (snapshot at %d)", acct, ev.Seq, seq, l.Snapshot.Seq)
			}
			seq = ev.Seq
		}
		return seq
	}
	var last uint64
	for i := range 8 {
		// Each backup begins after at least one more batch was written.
		for acked.Load() <= last {
			runtime.Gosched()
		}
		before := acked.Load()
		r := restoreCopy(t, s)
		after := acked.Load()
		a, b := seqOf(r, "a"), seqOf(r, "b")
		if a != b || a < before || a > after+1 {
			t.Fatalf("backup %d: a is at seq %d, b at %d; batches acknowledged: %d before it began, %d after it ended", i, a, b, before, after)
		}
		if hw, err := r.HighWater(t.Context()); err != nil || hw != t0+int64(a) {
			t.Fatalf("backup %d: high water %d, %v; want that of batch %d", i, hw, err, a)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		last = after
		t.Logf("backup %d at seq %d", i, a)
	}
}
