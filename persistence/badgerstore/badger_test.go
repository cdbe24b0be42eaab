package badgerstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"weak"

	"github.com/dgraph-io/badger/v4"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

func newTestBadger(t *testing.T) *Store {
	t.Helper()
	opts := testOptions()
	opts.InMemory = true
	return openStore(t, "", opts)
}

// rawSet stores value under key directly in s's database, bypassing the
// codec.
func rawSet(t *testing.T, s *Store, key, value []byte) {
	t.Helper()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	txn := s.db.NewTransactionAt(math.MaxUint64, true)
	defer txn.Discard()
	if err := txn.Set(key, value); err != nil {
		t.Fatalf("raw set %q: %v", key, err)
	}
	ts := s.nextVersion()
	if err := txn.CommitAt(ts, nil); err != nil {
		t.Fatalf("raw set %q: %v", key, err)
	}
	s.committed(ts)
}

func TestBadgerCorruptAccount(t *testing.T) {
	good := &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "123", Events: []persistence.Event{reserve(4, 1, t1), reserve(5, 2, t2)}, Snapshot: &persistence.Snapshot{Seq: 3, NextID: 1}},
		{Account: "456", Events: []persistence.Event{reserve(1, 1, t1)}, Snapshot: &persistence.Snapshot{Seq: 0, NextID: 1}},
	}}
	tests := []struct {
		name    string
		key     []byte
		value   []byte
		message string
	}{
		{"garbage snapshot", appendSnapshotKey(nil, "123"), []byte("garbage!"),
			`persistence: account "123": snapshot: corrupt state`},
		{"event as snapshot", appendSnapshotKey(nil, "123"), codec.AppendEvent(nil, reserve(1, 1, t0)),
			`persistence: account "123": snapshot: corrupt state: unknown format byte`},
		{"empty value", appendSnapshotKey(nil, "123"), nil,
			`persistence: account "123": snapshot: corrupt state: value too short`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t)
			mustWrite(t, s, good)
			rawSet(t, s, tt.key, tt.value)

			_, err := s.Load("123")
			if !errors.Is(err, persistence.ErrCorrupt) || !strings.HasPrefix(err.Error(), tt.message) {
				t.Errorf("Load(123) = %v, want ErrCorrupt starting %q", err, tt.message)
			}
			checkLoaded(t, s, "456", persistence.Loaded{Snapshot: persistence.Snapshot{NextID: 1}, Events: []persistence.Event{reserve(1, 1, t1)}})
			if got := accounts(t, s); !slices.Equal(got, []string{"123", "456"}) {
				t.Errorf("Accounts = %q, want [123 456]", got)
			}
		})
	}
}

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

func TestBadgerExpiresAt(t *testing.T) {
	s := newTestStore(t)
	now := time.Now().UnixMilli()
	tests := []struct {
		account   string
		expiresAt int64
		want      uint64 // item.ExpiresAt(), Unix seconds
	}{
		{"rounded", now + time.Hour.Milliseconds() + 1, uint64((now+time.Hour.Milliseconds())/1000) + 1},
		{"whole-second", (now/1000 + 7200) * 1000, uint64(now/1000 + 7200)},
		{"never", 0, 0},
	}
	var b persistence.Batch
	b.HighWater = now
	for _, tt := range tests {
		b.Accounts = append(b.Accounts, persistence.AccountWrite{
			Account: tt.account, Events: []persistence.Event{reserve(1, 1, t0), reserve(2, 2, t0)},
			Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2}, ExpiresAt: tt.expiresAt,
		})
	}
	mustWrite(t, s, &b)

	err := s.db.View(func(txn *badger.Txn) error {
		for _, tt := range tests {
			key := appendSnapshotKey(nil, tt.account)
			item, err := txn.Get(key)
			if err != nil {
				return fmt.Errorf("get %q: %w", key, err)
			}
			if got := item.ExpiresAt(); got != tt.want {
				t.Errorf("%q: ExpiresAt = %d, want %d", key, got, tt.want)
			}
		}
		// WAL records are deleted when spent, never by TTL: a record holds
		// events of many accounts.
		item, err := txn.Get(appendWALKey(nil, 1))
		if err != nil {
			return fmt.Errorf("get WAL record: %w", err)
		}
		if item.ExpiresAt() != 0 {
			t.Errorf("WAL record expires at %d, want never", item.ExpiresAt())
		}
		item, err = txn.Get(highWaterKey)
		if err != nil {
			return err
		}
		if item.ExpiresAt() != 0 {
			t.Errorf("high-water key expires at %d, want never", item.ExpiresAt())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// grepDir reports whether any file under dir contains s.
func grepDir(t *testing.T, dir, s string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || found {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		found, err = readerContains(f, []byte(s))
		return err
	})
	if err != nil {
		t.Fatalf("grep %s: %v", dir, err)
	}
	return found
}

// readerContains reports whether r contains pattern, reading in chunks.
func readerContains(r io.Reader, pattern []byte) (bool, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	buf := make([]byte, 0, 2<<20)
	chunk := make([]byte, 1<<20)
	for {
		n, err := br.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if bytes.Contains(buf, pattern) {
			return true, nil
		}
		if keep := len(pattern) - 1; len(buf) > keep {
			buf = append(buf[:0], buf[len(buf)-keep:]...)
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

func TestBadgerEncryptionAtRest(t *testing.T) {
	const secret = "SECRETACCOUNT1234"
	key := bytes.Repeat([]byte{0x5a}, 32)
	tests := []struct {
		name    string
		key     []byte
		visible bool
	}{
		{"plain", nil, true}, // shows that the check can fail
		{"AES-128", key[:16], false},
		{"AES-256", key, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := testOptions()
			opts.Durable, opts.EncryptionKey = true, tt.key
			s, err := Open(dir, opts, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			want := persistence.Loaded{Snapshot: persistence.Snapshot{Seq: 1, NextID: 2, Committed: []int64{t0}}, Events: []persistence.Event{reserve(2, 2, t1)}}
			mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{
				Account: secret, Snapshot: &want.Snapshot, Events: want.Events,
			}}})
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if got := grepDir(t, dir, secret); got != tt.visible {
				t.Errorf("account ID visible on disk = %v, want %v", got, tt.visible)
			}

			// Another key, or none where one was used, is refused clearly.
			wrong := bytes.Repeat([]byte{0xa5}, 16)
			if tt.key == nil {
				wrong = key
			}
			for _, k := range [][]byte{wrong, nil} {
				if bytes.Equal(k, tt.key) {
					continue
				}
				opts.EncryptionKey = k
				if s, err := Open(dir, opts, zerolog.Nop()); !errors.Is(err, ErrEncryptionKey) {
					if err == nil {
						s.Close()
					}
					t.Errorf("open with key %x = %v, want ErrEncryptionKey", k, err)
				}
			}

			// The right key still opens it: the failed opens released it.
			opts.EncryptionKey = tt.key
			s = openStore(t, dir, opts)
			checkLoaded(t, s, secret, want)
		})
	}
}

func TestBadgerDurableReopen(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	opts.Durable = true
	s, err := Open(dir, opts, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	snap := &persistence.Snapshot{Seq: 2, NextID: 3, Committed: []int64{t0, t1}, Pending: []persistence.Pending{{ID: 2, ReservedAt: t1, Deadline: t2}},
		Lapsed: []persistence.Lapsed{{ID: 1, Deadline: t1}}}
	anchor := persistence.ClockAnchor{BootID: "boot-1", Uptime: 5_000, Engine: t2}
	if a, err := s.Anchor(); err != nil || a != (persistence.ClockAnchor{}) {
		t.Fatalf("Anchor of a new store = %+v, %v; want none", a, err)
	}
	if err := s.SetAnchor(anchor); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, &persistence.Batch{HighWater: t2, Accounts: []persistence.AccountWrite{
		{Account: "a", Events: []persistence.Event{reserve(1, 1, t0), commit(2, 1, t0), reserve(3, 3, t2)}, Snapshot: snap,
			ExpiresAt: time.Now().Add(time.Hour).UnixMilli()},
		{Account: "b", Events: []persistence.Event{reserve(1, 1, t1)}},
	}})
	mustWrite(t, s, &persistence.Batch{HighWater: t1})
	want := map[string]persistence.Loaded{
		"a": mustLoad(t, s, "a"),
		"b": mustLoad(t, s, "b"),
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir, opts)
	for a, w := range want {
		checkLoaded(t, s, a, w)
	}
	if hw, err := s.HighWater(); hw != t2 || err != nil {
		t.Errorf("HighWater after reopen = %d, %v want %d", hw, err, t2)
	}
	if a, err := s.Anchor(); a != anchor || err != nil {
		t.Errorf("Anchor after reopen = %+v, %v want %+v", a, err, anchor)
	}
	if got := accounts(t, s); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Accounts after reopen = %q", got)
	}
}

func TestBadgerCorruptHighWater(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, testOptions(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	bad := codec.AppendHighWater(nil, t0)
	bad[len(bad)-1] ^= 1 // the checksum no longer matches
	rawSet(t, s, highWaterKey, bad)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the failed open releases the directory
		if _, err := Open(dir, testOptions(), zerolog.Nop()); !errors.Is(err, persistence.ErrCorrupt) {
			t.Fatalf("open with corrupt high water = %v, want ErrCorrupt", err)
		}
	}
}

// TestBadgerTxnSplit checks that a batch too large for one Badger
// transaction is committed in several, at account boundaries, and that an
// account write too large for any transaction fails whole.
func TestBadgerTxnSplit(t *testing.T) {
	s := newTestStore(t)
	const n = 3000 // entries; testBadgerOptions allow about 1,600 per transaction
	var b persistence.Batch
	b.HighWater = t3
	for i := range n {
		aw := persistence.AccountWrite{Account: fmt.Sprintf("acct%05d", i), Events: []persistence.Event{reserve(1, 1, t0)}}
		if i%5 != 0 {
			aw.Events = append(aw.Events, commit(2, 1, t1), reserve(3, 2, t2))
			aw.Snapshot = &persistence.Snapshot{Seq: 2, NextID: 2, Committed: []int64{t1}}
		}
		b.Accounts = append(b.Accounts, aw)
	}
	durable := 0
	b.Durable = func() { durable++ }
	before := s.db.MaxVersion()
	mustWrite(t, s, &b)
	if commits := s.db.MaxVersion() - before; commits < 2 {
		t.Errorf("batch of %d entries committed in %d transaction(s), want a split", n, commits)
	}
	if durable != 0 {
		// Called after the first part, it would have told the writers of
		// the later parts that their writes were durable.
		t.Errorf("Durable called %d times for a split batch, want 0", durable)
	}
	for i := range n {
		a := fmt.Sprintf("acct%05d", i)
		want := persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t0)}}
		if i%5 != 0 {
			want = persistence.Loaded{Snapshot: persistence.Snapshot{Seq: 2, NextID: 2, Committed: []int64{t1}}, Events: []persistence.Event{reserve(3, 2, t2)}}
		}
		checkLoaded(t, s, a, want)
	}
	if hw, _ := s.HighWater(); hw != t3 {
		t.Errorf("HighWater = %d, want %d", hw, t3)
	}

	huge := persistence.AccountWrite{Account: "huge"}
	for seq := range uint64(20000) {
		huge.Events = append(huge.Events, reserve(seq+1, seq+1, t0))
	}
	tests := []struct {
		name      string
		batch     persistence.Batch
		message   string
		committed []string
	}{
		{"alone", persistence.Batch{Accounts: []persistence.AccountWrite{huge}},
			`persistence: account "huge": write of 20000 events does not fit in one transaction`, nil},
		{"after another", persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "small", Events: []persistence.Event{reserve(1, 1, t0)}}, huge}},
			"persistence: write: batch split: 1 of 2 account writes committed, the rest not", []string{"small"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t)
			err := s.Write(&tt.batch)
			if err == nil || !strings.HasPrefix(err.Error(), tt.message) || !errors.Is(err, badger.ErrTxnTooBig) {
				t.Errorf("Write = %v, want error starting %q", err, tt.message)
			}
			if got := accounts(t, s); !slices.Equal(got, tt.committed) {
				t.Errorf("stored accounts = %q, want %q", got, tt.committed)
			}
		})
	}
}

// TestBadgerCallsDurable checks that a batch committed in one transaction
// calls Batch.Durable once, with the batch already durable, and that a
// failed one does not call it.
func TestBadgerCallsDurable(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, testOptions(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	durable := 0
	snap := persistence.Snapshot{Seq: 1, NextID: 2}
	b := persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Events: []persistence.Event{reserve(2, 2, t0)}, Snapshot: &snap}}, HighWater: t0}
	b.Durable = func() {
		durable++
		// The transaction has committed: its snapshot reads back (a read
		// takes none of the locks Write holds here).
		err := s.view(func(txn *badger.Txn) error {
			got, found, err := s.readSnapshot(txn, "a")
			if err == nil && (!found || got.Seq != snap.Seq) {
				err = fmt.Errorf("snapshot found %v, seq %d", found, got.Seq)
			}
			return err
		})
		if err != nil {
			t.Errorf("Durable called before the batch committed: %v", err)
		}
	}
	mustWrite(t, s, &b)
	if durable != 1 {
		t.Errorf("Durable called %d times, want 1", durable)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(&b); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	if durable != 1 {
		t.Errorf("Durable called by a failed Write")
	}
	s, err = Open(dir, testOptions(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkLoaded(t, s, "a", persistence.Loaded{Snapshot: snap, Events: []persistence.Event{reserve(2, 2, t0)}})
}

func TestOpenBadgerRejectsOptions(t *testing.T) {
	tests := []struct {
		name    string
		dir     string
		opts    Options
		message string
	}{
		{"key length", "x", Options{InMemory: true, EncryptionKey: make([]byte, 20)}, "Options.EncryptionKey is 20 bytes"},
		{"negative memtable", "", Options{InMemory: true, MemTableSize: -1}, "Options.MemTableSize -1 is negative"},
		{"tiny memtable", "", Options{InMemory: true, MemTableSize: 4096}, "Options.MemTableSize 4096 is below 1 MiB"},
		{"negative block cache", "", Options{InMemory: true, BlockCacheSize: -1}, "Options.BlockCacheSize"},
		{"negative index cache", "", Options{InMemory: true, IndexCacheSize: -1}, "Options.IndexCacheSize"},
		{"no dir", "", Options{}, "persistence: open badger: empty directory"},
	}
	for _, tt := range tests {
		s, err := Open(tt.dir, tt.opts, zerolog.Nop())
		if err == nil {
			s.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tt.message) || !strings.HasPrefix(err.Error(), "persistence: ") {
			t.Errorf("%s: Open = %v, want error containing %q", tt.name, err, tt.message)
		}
	}
}

// BenchmarkBadgerWrite: durable Writes of batches of one-event account
// writes, as the journal makes them: the store's cost per group commit
// (docs/benchmarks.md has the numbers).
func BenchmarkBadgerWrite(b *testing.B) {
	for _, perBatch := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", perBatch), func(b *testing.B) { benchBadgerWrite(b, perBatch) })
	}
}

func benchBadgerWrite(b *testing.B, perBatch int) {
	s, err := Open(b.TempDir(), Options{Durable: true}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	batch := persistence.Batch{Accounts: make([]persistence.AccountWrite, perBatch)}
	events := make([]persistence.Event, perBatch)
	for i := range batch.Accounts {
		batch.Accounts[i] = persistence.AccountWrite{
			Account:   fmt.Sprintf("%018d", 100_000_000_000_000_000+i),
			Events:    events[i : i+1 : i+1],
			ExpiresAt: time.Now().Add(13 * time.Hour).UnixMilli(),
		}
	}
	b.ReportAllocs()
	seq := uint64(0)
	for b.Loop() {
		seq++
		for i := range events {
			events[i] = reserve(seq, seq, t0+int64(seq))
		}
		batch.HighWater = t0 + int64(seq)
		if err := s.Write(&batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(seq*uint64(perBatch))/b.Elapsed().Seconds(), "events/s")
}

// TestBadgerKeepsSpaceInReserve: with less free space than the reserve,
// Write fails with ErrNoSpace before Badger writes anything (Badger itself
// would die of SIGBUS on a full disk); reads go on, and writes resume once
// space is back.
func TestBadgerKeepsSpaceInReserve(t *testing.T) {
	opts := testOptions()
	opts.MinFreeBytes = math.MaxInt64
	s := openStore(t, t.TempDir(), opts)
	err := s.Write(&persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Events: []persistence.Event{reserve(1, 1, t0)}}}})
	if !errors.Is(err, persistence.ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Write on a full disk = %v, want ErrNoSpace", err)
	}
	checkLoaded(t, s, "a", persistence.Loaded{})
	s.minFree = 1 // space is back
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Events: []persistence.Event{reserve(1, 1, t0)}}}})
	checkLoaded(t, s, "a", persistence.Loaded{Events: []persistence.Event{reserve(1, 1, t0)}})

	// The default reserve is two memtables and a value-log file.
	def := openStore(t, t.TempDir(), testOptions())
	if want := int64(2<<20 + valueLogFileSize); def.minFree != want {
		t.Errorf("default reserve = %d bytes, want %d", def.minFree, want)
	}
}

// snapshotVersions counts the versions of account's snapshot key that
// Badger still holds, deleted and overwritten ones included.
func snapshotVersions(t *testing.T, s *Store, account string) int {
	t.Helper()
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		key := appendSnapshotKey(nil, account)
		it := txn.NewIterator(badger.IteratorOptions{AllVersions: true, Prefix: key})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if bytes.Equal(it.Item().Key(), key) {
				n++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("count versions: %v", err)
	}
	return n
}

// TestBadgerOpensUnmanagedStore: a store last written by Badger's own
// timestamps (as before the store chose them itself) is opened and
// written on; the new writes are newer than every stored version.
func TestBadgerOpensUnmanagedStore(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	db, err := badger.Open(opts.badger(dir, zerolog.Nop()))
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 20; seq++ {
		v := codec.AppendSnapshot(nil, &persistence.Snapshot{Seq: seq, NextID: seq + 1})
		if err := db.Update(func(txn *badger.Txn) error { return txn.Set(appendSnapshotKey(nil, "x"), v) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, testOptions())
	if l := mustLoad(t, s, "x"); l.Snapshot.Seq != 20 {
		t.Fatalf("Load = snapshot %d, want the last one written, 20", l.Snapshot.Seq)
	}
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "x", Snapshot: &persistence.Snapshot{Seq: 21, NextID: 22}}}})
	if l := mustLoad(t, s, "x"); l.Snapshot.Seq != 21 {
		t.Fatalf("after a write, Load = snapshot %d, want 21", l.Snapshot.Seq)
	}
	s = reopen(t, s, dir)
	if l := mustLoad(t, s, "x"); l.Snapshot.Seq != 21 {
		t.Fatalf("after reopening, Load = snapshot %d, want 21", l.Snapshot.Seq)
	}
}

// fillAndFlatten writes 40,000 snapshots of other accounts (named after
// round), enough to fill several 1 MiB memtables, and compacts the tree.
func fillAndFlatten(t *testing.T, s *Store, round int) {
	t.Helper()
	committed := make([]int64, 100)
	for i := range committed {
		committed[i] = t0 + int64(i)
	}
	for batch := range 400 {
		var b persistence.Batch
		for i := range 100 {
			b.Accounts = append(b.Accounts, persistence.AccountWrite{Account: fmt.Sprintf("fill-%d-%d-%d", round, batch, i),
				Snapshot: &persistence.Snapshot{Seq: 100, NextID: 101, Committed: committed}})
		}
		mustWrite(t, s, &b)
	}
	if err := s.db.Flatten(1); err != nil {
		t.Fatal(err)
	}
}

// TestBadgerDropsOldVersions: the store reads only the newest version of
// a key, and tells Badger so: compaction drops the overwritten versions
// instead of keeping them on disk for ever.
func TestBadgerDropsOldVersions(t *testing.T) {
	s := openStore(t, t.TempDir(), testOptions())
	for seq := uint64(1); seq <= 30; seq++ {
		mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "x", Snapshot: &persistence.Snapshot{Seq: seq, NextID: seq + 1}}}})
	}
	if n := snapshotVersions(t, s, "x"); n != 30 {
		t.Fatalf("%d versions before compaction, want 30 (the count is wrong)", n)
	}
	// Other accounts' snapshots fill several 1 MiB memtables, so that the
	// one holding x's versions is flushed to a table, and compaction has
	// tables to work on. Badger may move a table to another level without
	// rewriting it, so this goes on, a few rounds at most, until a
	// compaction rewrote x's table; without a discard timestamp no
	// compaction drops a version.
	n := 0
	for round := range 5 {
		fillAndFlatten(t, s, round)
		if n = snapshotVersions(t, s, "x"); n == 1 {
			break
		}
	}
	if n != 1 {
		t.Errorf("%d versions after compactions, want 1", n)
	}
	if l := mustLoad(t, s, "x"); l.Snapshot.Seq != 30 {
		t.Errorf("Load = snapshot %d, want 30", l.Snapshot.Seq)
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
	err := s.Accounts(func(a string) error {
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

// TestBadgerSnapshottedTailsAreFreed: once a snapshot covers all of an
// account's events, its tail leaves the index and nothing else keeps it:
// not the plan every Write reuses, whose adds point at tails.
func TestBadgerSnapshottedTailsAreFreed(t *testing.T) {
	s := newTestStore(t)
	const n = 200
	var b persistence.Batch
	for i := range n {
		a := fmt.Sprintf("acct-%03d", i)
		b.Accounts = append(b.Accounts, persistence.AccountWrite{Account: a, Events: []persistence.Event{reserve(1, 1, t0)}})
	}
	mustWrite(t, s, &b) // creates n tails, through apply's t == nil path
	// A second event per account: these adds carry the tail pointer plan found.
	for i := range b.Accounts {
		b.Accounts[i].Events = []persistence.Event{commit(2, 1, t1)}
	}
	mustWrite(t, s, &b)
	weaks := make([]weak.Pointer[tail], 0, n)
	for i := range n {
		weaks = append(weaks, weak.Make(s.wal.tails[fmt.Sprintf("acct-%03d", i)]))
	}
	// Snapshots fold every event: the tails leave the index.
	var snaps persistence.Batch
	for i := range n {
		snaps.Accounts = append(snaps.Accounts, persistence.AccountWrite{Account: fmt.Sprintf("acct-%03d", i),
			Snapshot: &persistence.Snapshot{Seq: 2, NextID: 2, Committed: []int64{t1}}})
	}
	mustWrite(t, s, &snaps)
	if len(s.wal.tails) != 0 {
		t.Fatalf("%d tails left in the index, want 0", len(s.wal.tails))
	}
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "other", Events: []persistence.Event{reserve(1, 1, t2)}}}})
	alive := func() int {
		runtime.GC()
		runtime.GC()
		k := 0
		for _, w := range weaks {
			if w.Value() != nil {
				k++
			}
		}
		return k
	}
	if k := alive(); k != 0 {
		// Diagnose: clearing the spare capacity of s.upd.adds frees them.
		clear(s.upd.adds[:cap(s.upd.adds)])
		t.Errorf("%d of %d tails removed from the index are still reachable; after clearing s.upd.adds, %d", k, n, alive())
	}
}

// TestBadgerLongReadKeepsItsVersions: a read that began before later
// writes and a compaction still sees the versions of its moment. Badger
// may drop a superseded version only below the oldest read in progress.
func TestBadgerLongReadKeepsItsVersions(t *testing.T) {
	s := openStore(t, t.TempDir(), testOptions())
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "x", Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2}}}})
	err := s.view(func(txn *badger.Txn) error {
		// Overwrite x, then write and compact enough that the table
		// holding the first version is rewritten.
		mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "x", Snapshot: &persistence.Snapshot{Seq: 2, NextID: 3}}}})
		for round := range 3 {
			fillAndFlatten(t, s, round)
		}
		snap, found, err := s.readSnapshot(txn, "x")
		if err != nil || !found || snap.Seq != 1 {
			t.Errorf("the read sees snapshot %d (found %v, %v), want the one of its moment, 1", snap.Seq, found, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if l := mustLoad(t, s, "x"); l.Snapshot.Seq != 2 {
		t.Errorf("a new read sees snapshot %d, want 2", l.Snapshot.Seq)
	}
}
