package badgerstore

import (
	"errors"
	"fmt"
	"math"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

// Write applies b: for each AccountWrite in order, its events are appended
// to the write-ahead log (see walIndex), then, if it has a Snapshot, the
// snapshot is stored and every journal event of the account with Seq up to
// Snapshot.Seq is superseded (events of the same AccountWrite in that range
// are not stored at all). The snapshot key expires at the AccountWrite's
// ExpiresAt, and so, for Load, do the events it carries. The high-water
// mark is stored only when b.HighWater exceeds the stored one.
//
// A batch is normally one Badger transaction, so it lands whole or not at
// all. A batch too large for one transaction (see DefaultMemTableSize) is
// split in halves, recursively, at AccountWrite boundaries only: each
// AccountWrite stays atomic, the high-water mark lands with the first
// transaction, and if a later transaction fails, the returned error says
// how many AccountWrites were committed. A failed batch is not to be
// written again (the journal never does): its committed part would be
// stored twice. A single AccountWrite too large for one transaction fails
// without storing anything of it.
//
// Write fails without writing anything if an account ID is invalid (the
// error wraps ErrInvalidAccount) or an event has Seq 0.
//
// Write returns as soon as the batch has committed, durable if the store
// is. The update of the write-ahead-log index that the batch makes is left
// pending until Settle, or until the first call that reads the index or
// writes again: the journal answers the batch's writers in the meantime.
func (s *Store) Write(b *persistence.Batch) error {
	if err := b.Validate(); err != nil {
		return err
	}
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	defer s.life.Exit()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	writeHW := b.HighWater > s.highWater.Load()
	if len(b.Accounts) == 0 && !writeHW {
		return nil
	}
	if err := s.checkSpace(); err != nil {
		return err
	}
	n, err := s.write(b.Accounts, writeHW, b.HighWater)
	if err != nil && n > 0 {
		return fmt.Errorf("persistence: write: batch split: %d of %d account writes committed, the rest not: %w",
			n, len(b.Accounts), err)
	}
	return err
}

// write commits accounts, splitting them in halves while they do not fit
// in one transaction, and returns how many of them were committed.
func (s *Store) write(accounts []persistence.AccountWrite, hw bool, highWater int64) (int, error) {
	err := s.commit(accounts, hw, highWater)
	switch {
	case err == nil:
		return len(accounts), nil
	case !errors.Is(err, badger.ErrTxnTooBig):
		return 0, err
	case len(accounts) <= 1:
		var name string
		var events int
		if len(accounts) == 1 {
			name, events = accounts[0].Account, len(accounts[0].Events)
		}
		return 0, fmt.Errorf("persistence: account %q: write of %d events does not fit in one transaction: %w",
			name, events, err)
	}
	half := len(accounts) / 2
	n, err := s.write(accounts[:half], hw, highWater)
	if err != nil {
		return n, err
	}
	m, err := s.write(accounts[half:], false, highWater)
	return n + m, err
}

// commit writes accounts and, if hw is set, the high-water mark in one
// transaction, and leaves the update of the index pending (see Settle).
// Errors of Badger's that say the transaction is too big are returned as
// they are, so that write can recognize them.
func (s *Store) commit(accounts []persistence.AccountWrite, hw bool, highWater int64) error {
	// The previous write's update goes in first: the plan starts from it,
	// and the update is about to be reused.
	s.walMu.Lock()
	s.settleLocked()
	s.walMu.Unlock()
	// Writes are serialized, and with nothing pending only they change the
	// index, so planning may read it without walMu.
	u := &s.upd
	s.wal.plan(accounts, s.walChunk, u)
	// Badger keeps the keys and values until the commit: each is carved
	// from arena without overwriting earlier ones (when arena grows, they
	// keep pointing into the old array).
	arena := s.arena[:0]
	carve := func(grown []byte) []byte {
		start := len(arena)
		arena = grown
		return grown[start:len(grown):len(grown)]
	}
	defer func() { s.arena = arena[:0] }()
	// Writes read nothing, so the read timestamp does not matter.
	txn := s.db.NewTransactionAt(math.MaxUint64, true)
	defer txn.Discard()
	snapshots, snapshotBytes := 0, 0
	if hw {
		if err := txn.SetEntry(badger.NewEntry(highWaterKey, codec.AppendHighWater(nil, highWater))); err != nil {
			return wrapTxn("write high water", err)
		}
	}
	for _, r := range u.recs {
		k := carve(appendWALKey(arena, r.seq))
		v := carve(codec.AppendWALRecord(arena, r.seq, r.entries))
		if err := txn.SetEntry(badger.NewEntry(k, v)); err != nil {
			return wrapTxn(walRecordName(r.seq), err)
		}
	}
	for i := range accounts {
		aw := &accounts[i]
		if aw.Snapshot == nil {
			continue
		}
		k := appendSnapshotKey(make([]byte, 0, 1+len(aw.Account)), aw.Account)
		v := codec.AppendSnapshot(make([]byte, 0, codec.SnapshotLen(aw.Snapshot)), aw.Snapshot)
		exp := aw.ExpirySecond()
		if ce, ok := u.coveredExp[aw.Account]; ok && exp != 0 && (ce == 0 || ce > exp) {
			exp = ce
		}
		if err := txn.SetEntry(newEntry(k, v, exp)); err != nil {
			return wrapTxn(fmt.Sprintf("account %q: snapshot", aw.Account), err)
		}
		snapshots++
		snapshotBytes += len(k) + len(v)
	}
	jobEntries, jobBytes := 0, 0
	for i := range accounts {
		n, size, err := writeJobs(txn, &accounts[i])
		if err != nil {
			return err
		}
		jobEntries += n
		jobBytes += size
	}
	for _, rec := range u.dead {
		if err := txn.Delete(appendWALKey(nil, rec)); err != nil {
			return wrapTxn("delete "+walRecordName(rec), err)
		}
	}
	entries, bytes := len(u.recs)+len(u.dead), len(arena)+len(u.dead)*walKeyLen
	if hw {
		entries++
	}
	// Reads go on at the previous version while the transaction commits:
	// they see it only once settle has put its events in the index too.
	ts := s.nextVersion()
	if err := txn.CommitAt(ts, nil); err != nil {
		return fmt.Errorf("persistence: write: commit: %w", err)
	}
	if hw {
		s.highWater.Store(highWater)
	}
	s.walMu.Lock()
	s.pending, s.pendingTs = u, ts
	s.walMu.Unlock()
	s.wrote(entries+snapshots+jobEntries, bytes+snapshotBytes+jobBytes)
	return nil
}

// wrapTxn adds context to an error of a transaction being built, except
// badger.ErrTxnTooBig, which Write handles by splitting the batch.
func wrapTxn(what string, err error) error {
	if errors.Is(err, badger.ErrTxnTooBig) {
		return err
	}
	return fmt.Errorf("persistence: write: %s: %w", what, err)
}

func newEntry(k, v []byte, expiresAt uint64) *badger.Entry {
	e := badger.NewEntry(k, v)
	e.ExpiresAt = expiresAt
	return e
}
