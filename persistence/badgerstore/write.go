package badgerstore

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

// Write applies b: for each AccountWrite in order, its events are appended
// to the journal (see walIndex), then, if it has a Snapshot, the snapshot
// is stored and every journal event of the account with Seq up to
// Snapshot.Seq is superseded (events of the same AccountWrite in that range
// are not stored at all). The snapshot key expires at the AccountWrite's
// ExpiresAt, and so, for Load, do the events it carries. The high-water
// mark is stored only when b.HighWater exceeds the stored one.
//
// The whole batch is one record of the journal's log (see log.go),
// so it lands whole or not at all, and is durable when the store is once
// Write returns nil. Badger then gets its keys; if that fails, the batch
// is in the log but not in Badger, and every later Write fails (the error
// wraps errBroken) until the store is opened again, which applies it.
// A failed batch is not to be written again (the journal never does).
//
// Write fails without writing anything if an account ID is invalid (the
// error wraps ErrInvalidAccount) or an event has Seq 0, and with an error
// wrapping ErrNoSpace when the disk is (nearly) full.
//
// Write returns as soon as the batch is applied, durable if the store
// is. The update of the write-ahead-log index that the batch makes is left
// pending until Settle, or until the first call that reads the index or
// writes again: the journal answers the batch's writers in the meantime.
func (s *Store) Write(_ context.Context, b *persistence.Batch) error {
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
	if s.broken != nil {
		return s.broken
	}
	if err := s.checkSpace(); err != nil {
		return err
	}
	return s.commit(b.Accounts, writeHW, b.HighWater)
}

// commit logs accounts and, if hw is set, the high-water mark as one
// journal record, applies their keys to Badger, and leaves the update of
// the index pending (see Settle).
func (s *Store) commit(accounts []persistence.AccountWrite, hw bool, highWater int64) error {
	// The previous write's update goes in first: the plan starts from it,
	// and the update is about to be reused.
	s.walMu.Lock()
	s.settleLocked()
	s.wal.next = s.logNext()
	s.walMu.Unlock()
	// Writes are serialized, and with nothing pending only they change the
	// index, so planning may read it without walMu. One record holds all
	// the batch's events.
	u := &s.upd
	s.wal.plan(accounts, math.MaxInt, u)
	// The ops keep their keys and values until Badger has applied them:
	// each is carved from arena without overwriting earlier ones (when
	// arena grows, they keep pointing into the old array).
	arena := s.arena[:0]
	carve := func(grown []byte) []byte {
		start := len(arena)
		arena = grown
		return grown[start:len(grown):len(grown)]
	}
	defer func() { s.arena = arena[:0] }()
	ops := s.ops[:0]
	defer func() { clear(ops); s.ops = ops[:0] }()
	set := func(k, v []byte, exp uint64) { ops = append(ops, logOp{k: k, v: v, exp: exp}) }
	seq := s.logNext()
	rec := codec.AppendLogHeader(s.rec[:0])
	for _, r := range u.recs {
		s.walBuf = codec.AppendWALRecord(s.walBuf[:0], r.seq, r.entries)
		rec = codec.AppendLogOp(rec, codec.LogEvents, nil, s.walBuf, 0)
	}
	if hw {
		set(highWaterKey, carve(codec.AppendHighWater(arena, highWater)), 0)
	}
	for i := range accounts {
		aw := &accounts[i]
		if aw.Snapshot == nil {
			continue
		}
		k := carve(appendSnapshotKey(arena, aw.Account))
		v := carve(codec.AppendSnapshot(arena, aw.Snapshot))
		exp := aw.ExpirySecond()
		if ce, ok := u.coveredExp[aw.Account]; ok && exp != 0 && (ce == 0 || ce > exp) {
			exp = ce
		}
		set(k, v, exp)
	}
	for i := range accounts {
		aw := &accounts[i]
		for _, id := range aw.DropJobs {
			ops = append(ops, logOp{del: true, k: carve(appendJobKey(arena, aw.Account, id))})
		}
		for j := range aw.Jobs {
			job := &aw.Jobs[j]
			set(carve(appendJobKey(arena, aw.Account, job.ID)), carve(codec.AppendJob(arena, job)), persistence.JobExpirySecond(job))
		}
	}
	for i := range ops {
		op := &ops[i]
		kind := codec.LogSet
		if op.del {
			kind = codec.LogDelete
		}
		rec = codec.AppendLogOp(rec, kind, op.k, op.v, op.exp)
	}
	s.rec = rec
	if err := s.appendLog(seq, rec); err != nil {
		return err
	}
	// Reads go on at the previous version while Badger applies the keys:
	// they see them only once settle has put the events in the index too.
	ts := s.nextVersion()
	if err := s.applyOps(ts, ops); err != nil {
		if s.journal == nil {
			return fmt.Errorf("badgerstore: write: %w", err)
		}
		s.broken = fmt.Errorf("%w: journal record %d: %w", errBroken, seq, err)
		return s.broken
	}
	s.applied = seq
	if hw {
		s.highWater.Store(highWater)
	}
	s.walMu.Lock()
	s.pending, s.pendingTs = u, ts
	s.walMu.Unlock()
	s.wrote(len(ops), len(arena))
	return nil
}

// wrapTxn adds context to an error of a transaction being built, except
// badger.ErrTxnTooBig, which Write handles by splitting the batch.
func wrapTxn(what string, err error) error {
	if errors.Is(err, badger.ErrTxnTooBig) {
		return err
	}
	return fmt.Errorf("badgerstore: write: %s: %w", what, err)
}

func newEntry(k, v []byte, expiresAt uint64) *badger.Entry {
	e := badger.NewEntry(k, v)
	e.ExpiresAt = expiresAt
	return e
}
