package badgerstore

import (
	"errors"
	"math"
	"syscall"
	"testing"
	"time"

	"github.com/pinbot/pinbot/persistence"
)

// TestBadgerKeepsSpaceInReserve: with less free space than the reserve,
// Write fails with ErrNoSpace before Badger writes anything (Badger itself
// would die of SIGBUS on a full disk); reads go on, and writes resume once
// space is back.
func TestBadgerKeepsSpaceInReserve(t *testing.T) {
	opts := testOptions()
	opts.MinFreeBytes = math.MaxInt64
	s := openStore(t, t.TempDir(), opts)
	err := s.Write(t.Context(), &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Events: []persistence.Event{reserve(1, 1, t0)}}}})
	if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
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

// TestOpenKeepsTheSpaceReserve: below the free-space reserve nothing is
// written through Badger (its memtable log is a memory-mapped file: SIGBUS
// on a full disk), not even the deletion of the spent records the store
// finds when it opens: they are left for a later open.
func TestOpenKeepsTheSpaceReserve(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, testOptions())
	past := time.Now().Add(-time.Hour).UnixMilli()
	mustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "old", Events: []persistence.Event{reserve(1, 1, t0)}, ExpiresAt: past}}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	opts := testOptions()
	opts.MinFreeBytes = math.MaxInt64 // the disk is below the reserve
	s = openStore(t, dir, opts)
	if err := s.Write(t.Context(), &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "x", Events: []persistence.Event{reserve(1, 1, t0)}}}}); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Write below reserve = %v, want ErrNoSpace", err)
	}
}
