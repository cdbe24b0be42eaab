package badgerstore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"syscall"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
	"github.com/pinbot/pinbot/persistence/seglog"
)

// The journal of a Store on disk.
//
// Each Write is one record of an append-only log (package seglog, in the
// store's "journal" subdirectory), fdatasync'd once when the store is
// durable: the record holds everything the batch changes, its events (as
// one WAL record, codec.AppendWALRecord) and the keys it sets or deletes
// in Badger (snapshots, jobs, the high-water mark), so the batch is
// atomic and durable on its own. Badger, opened without SyncWrites, then
// gets the keys, unsynced; the events stay in the log and in the index
// (walIndex), whose record numbers are the log's.
//
// A checkpoint syncs Badger, then stores in it the last record applied
// (the "applied" mark) and syncs again. Opening the store applies to
// Badger again, in order, the keys of the records after the mark (a key's
// last change wins, so applying twice changes nothing), then indexes the
// live events of every record. A segment of the log is deleted once all
// its records are at or below the mark and none holds a live event.
//
// An in-memory store has no log: its events live in the index only.

// journalDir is the log's directory inside the store's.
const journalDir = "journal"

// appliedKey holds the last log record a checkpoint found applied to
// Badger and synced, encoded as a high-water mark.
var appliedKey = []byte("m/applied")

// logOp is one change a Write makes to Badger, also written to the log.
type logOp struct {
	del bool
	k   []byte
	v   []byte
	exp uint64
}

// errBroken is wrapped by the errors of Writes after Badger failed to
// apply a logged batch: the log holds it, Badger does not, and only
// opening the store again (which applies the log) brings them together.
var errBroken = errors.New("persistence: journal and Badger out of step; reopen the store")

// newAEAD returns the cipher of the log's records for key, nil without a
// key.
func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) == 0 {
		return nil, nil
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("persistence: journal cipher: %w", err)
	}
	return cipher.NewGCM(b)
}

// seal encrypts rec, the payload of log record seq, when the store is
// encrypted: a random nonce, then the sealed record, bound to seq.
func (s *Store) seal(seq uint64, rec []byte) ([]byte, error) {
	if s.aead == nil {
		return rec, nil
	}
	ns := s.aead.NonceSize()
	out := s.sealed[:0]
	out = append(out, make([]byte, ns)...)
	if _, err := rand.Read(out[:ns]); err != nil {
		return nil, fmt.Errorf("persistence: journal nonce: %w", err)
	}
	var ad [8]byte
	binary.LittleEndian.PutUint64(ad[:], seq)
	out = s.aead.Seal(out, out[:ns], rec, ad[:])
	s.sealed = out
	return out, nil
}

// open decrypts the payload of log record seq.
func (s *Store) open(seq uint64, p []byte) ([]byte, error) {
	if s.aead == nil {
		return p, nil
	}
	ns := s.aead.NonceSize()
	if len(p) < ns {
		return nil, codec.Corrupt("sealed record too short")
	}
	var ad [8]byte
	binary.LittleEndian.PutUint64(ad[:], seq)
	out, err := s.aead.Open(nil, p[:ns], p[ns:], ad[:])
	if err != nil {
		return nil, fmt.Errorf("%w (%w)", ErrEncryptionKey, codec.Corrupt("sealed record does not open"))
	}
	return out, nil
}

// logNext is the number of the next log record; without a log, the
// index's own count.
func (s *Store) logNext() uint64 {
	if s.journal == nil {
		return s.wal.next
	}
	return s.journal.Next()
}

// appendLog writes rec, expected to become record want, to the log (a
// store without one skips it). A full disk at segment creation fails with
// an error wrapping ErrNoSpace, and leaves the log usable.
func (s *Store) appendLog(want uint64, rec []byte) error {
	if s.journal == nil {
		return nil
	}
	p, err := s.seal(want, rec)
	if err != nil {
		return err
	}
	seq, err := s.journal.Append(p)
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("persistence: journal: %w: %w", ErrNoSpace, err)
	case err != nil:
		return fmt.Errorf("persistence: journal: %w", err)
	case seq != want:
		s.broken = fmt.Errorf("%w: journal record %d written as %d", errBroken, want, seq)
		return s.broken
	}
	s.sinceCkpt += int64(len(p))
	if s.sinceCkpt >= s.ckptEvery {
		s.sinceCkpt = 0
		select {
		case s.ckptWake <- struct{}{}:
		default:
		}
	}
	return nil
}

// applyOps makes ops one Badger write at version ts, in order. It is
// called under writeMu, after the log holds them. Most batches hold
// events alone, and Badger gets nothing from them: even an empty write
// would cost a hand-off to Badger's goroutines while the batch's writers
// wait for their answer.
func (s *Store) applyOps(ts uint64, ops []logOp) error {
	if s.testApply != nil {
		if err := s.testApply(); err != nil {
			return err
		}
	}
	if len(ops) == 0 {
		return nil
	}
	wb := s.db.NewWriteBatchAt(ts)
	defer wb.Cancel()
	for i := range ops {
		op := &ops[i]
		var err error
		if op.del {
			err = wb.Delete(op.k)
		} else {
			err = wb.SetEntry(newEntry(op.k, op.v, op.exp))
		}
		if err != nil {
			return err
		}
	}
	return wb.Flush()
}

// openJournal opens the log, applies to Badger the changes of the records
// after the applied mark and indexes the events of every record.
func (s *Store) openJournal(dir string, opts Options) error {
	mark, err := s.loadApplied()
	if err != nil {
		return err
	}
	return s.readJournal(dir, opts, mark)
}

// readJournal opens the log and reads it, applying to Badger the records
// after mark.
func (s *Store) readJournal(dir string, opts Options, mark uint64) error {
	type record struct {
		seq uint64
		ops []codec.LogOp
	}
	var recs []record
	var events []walRecordRead
	l, err := seglog.Open(filepath.Join(dir, journalDir), seglog.Options{SegmentSize: opts.JournalSegmentSize, NoSync: !opts.Durable},
		func(seq uint64, p []byte) error {
			p, err := s.open(seq, p)
			if err != nil {
				return fmt.Errorf("persistence: journal record %d: %w", seq, err)
			}
			ops, err := codec.DecodeLogRecord(p)
			if err != nil {
				return fmt.Errorf("persistence: journal record %d: %w", seq, err)
			}
			var keep []codec.LogOp
			for _, op := range ops {
				if op.Kind != codec.LogEvents {
					keep = append(keep, op)
					continue
				}
				got, entries, err := codec.DecodeWALRecord(op.Value)
				if err == nil && got != seq {
					err = codec.Corrupt(fmt.Sprintf("holds events of record %d", got))
				}
				if err != nil {
					return fmt.Errorf("persistence: journal record %d: %w", seq, err)
				}
				events = append(events, walRecordRead{seq: seq, entries: entries})
			}
			if len(keep) > 0 && seq > mark {
				recs = append(recs, record{seq: seq, ops: keep})
			}
			return nil
		})
	if errors.Is(err, seglog.ErrCorrupt) {
		return fmt.Errorf("%w: %w", persistence.ErrCorrupt, err)
	}
	if err != nil {
		return err
	}
	last := l.Next() - 1
	if mark > last {
		// The mark is not this log's (a restored backup carries the
		// source's): apply everything.
		if last > 0 {
			if err := l.Close(); err != nil {
				return fmt.Errorf("persistence: journal: %w", err)
			}
			return s.readJournal(dir, opts, 0)
		}
		mark = 0
	}
	s.journal = l
	s.ckpt = mark
	final := make(map[string]codec.LogOp)
	replayed := 0
	for _, r := range recs {
		if r.seq <= mark {
			continue
		}
		replayed++
		for _, op := range r.ops {
			final[string(op.Key)] = op
		}
	}
	if len(final) > 0 {
		ts := s.nextVersion()
		wb := s.db.NewWriteBatchAt(ts)
		for k, op := range final {
			var err error
			if op.Kind == codec.LogDelete {
				err = wb.Delete([]byte(k))
			} else {
				err = wb.SetEntry(newEntry([]byte(k), op.Value, op.ExpiresAt))
			}
			if err != nil {
				wb.Cancel()
				return fmt.Errorf("persistence: journal: apply: %w", err)
			}
		}
		if err := wb.Flush(); err != nil {
			return fmt.Errorf("persistence: journal: apply: %w", err)
		}
		s.committed(ts)
	}
	s.wal.next = l.Next()
	s.applied = last
	if err := s.indexRecords(events, false); err != nil {
		return err
	}
	if replayed > 0 || len(events) > 0 {
		s.log.Info().Uint64("applied_mark", mark).Int("replayed", replayed).Int("records", len(events)).
			Int("accounts", len(s.wal.tails)).Msg("journal read")
	}
	if mark != last {
		if err := s.checkpoint(); err != nil {
			return err
		}
	}
	return nil
}

// walRecordRead is the events of one record, as read back.
type walRecordRead struct {
	seq     uint64
	entries []codec.WALEntry
}

// coveredSeq returns the Seq up to which account's stored snapshot covers
// its events, read once per account into covered. An unreadable snapshot
// covers nothing, so every event is kept: Load will report the account
// as corrupt, and nothing is dropped meanwhile; doing says what was being
// done, for the log.
func (s *Store) coveredSeq(txn *badger.Txn, covered map[string]uint64, account, doing string) uint64 {
	if upTo, ok := covered[account]; ok {
		return upTo
	}
	snap, _, err := s.readSnapshot(txn, account)
	if err != nil {
		s.log.Error().Err(err).Str("account", account).Msg("snapshot unreadable while " + doing)
	}
	covered[account] = snap.Seq
	return snap.Seq
}

// indexRecords puts the events of recs in the index, leaving out those a
// snapshot covers or that expired; dedup leaves out events whose Seq the
// account's tail has already (a record imported twice). It returns
// nothing but read errors of snapshots, which are logged instead (Load
// reports the account as corrupt).
func (s *Store) indexRecords(recs []walRecordRead, dedup bool) error {
	now := wallSeconds()
	covered := make(map[string]uint64)
	return s.view(func(txn *badger.Txn) error {
		for _, r := range recs {
			live := 0
			for _, e := range r.entries {
				if expiredAt(e.ExpiresAt, now) {
					continue
				}
				upTo := s.coveredSeq(txn, covered, e.Account, "reading the journal")
				for _, ev := range e.Events {
					if ev.Seq <= upTo || dedup && s.wal.has(e.Account, ev.Seq) {
						continue
					}
					s.wal.add(e.Account, tailEvent{Event: ev, rec: r.seq, exp: tailExpiry(e.ExpiresAt)})
					live++
				}
			}
			if live > 0 {
				s.wal.live[r.seq] += live
			}
		}
		return nil
	})
}

// loadApplied reads the applied mark (0 if none).
func (s *Store) loadApplied() (uint64, error) {
	var mark int64
	err := s.view(func(txn *badger.Txn) error {
		item, err := txn.Get(appliedKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("persistence: read applied mark: %w", err)
		}
		return item.Value(func(v []byte) error {
			m, err := codec.DecodeHighWater(v)
			if err != nil {
				return fmt.Errorf("persistence: applied mark: %w", err)
			}
			mark = m
			return nil
		})
	})
	return uint64(max(mark, 0)), err
}

// Checkpoint syncs Badger, stores the applied mark and deletes the log
// segments no longer needed. The store checkpoints by itself as the log
// grows and at Close; Checkpoint does it now.
func (s *Store) Checkpoint() error {
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	defer s.life.Exit()
	return s.checkpoint()
}

func (s *Store) checkpoint() error {
	if s.journal == nil {
		return nil
	}
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	s.writeMu.Lock()
	applied, broken := s.applied, s.broken
	s.writeMu.Unlock()
	if broken != nil {
		return broken
	}
	if applied > s.ckpt {
		// Below the reserve the mark is not written (Badger writes through
		// a mmap'd memtable log); the log keeps every segment meanwhile.
		if err := s.checkSpace(); err != nil {
			return fmt.Errorf("persistence: checkpoint: %w", err)
		}
		if err := s.db.Sync(); err != nil {
			return fmt.Errorf("persistence: checkpoint: sync badger: %w", err)
		}
		if err := s.putApplied(applied); err != nil {
			return err
		}
		if err := s.db.Sync(); err != nil {
			return fmt.Errorf("persistence: checkpoint: sync badger: %w", err)
		}
		s.ckpt = applied
	}
	s.rlockIndex()
	through := s.ckpt
	for rec := range s.wal.live {
		through = min(through, rec-1)
	}
	s.walMu.RUnlock()
	if _, err := s.journal.Remove(through); err != nil {
		return fmt.Errorf("persistence: checkpoint: %w", err)
	}
	return nil
}

// putApplied stores the applied mark, unsynced.
func (s *Store) putApplied(applied uint64) error {
	err := s.writeVisible(func(wb *badger.WriteBatch) error {
		return wb.Set(appliedKey, codec.AppendHighWater(nil, int64(min(applied, math.MaxInt64))))
	})
	if err != nil {
		return fmt.Errorf("persistence: checkpoint: %w", err)
	}
	return nil
}

// writeVisible makes what fill puts in a write batch one Badger write at
// a new version, outside the journal's log, and moves reads to that
// version at once (the last Write's update is settled first).
func (s *Store) writeVisible(fill func(wb *badger.WriteBatch) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.walMu.Lock()
	defer s.walMu.Unlock()
	s.settleLocked()
	ts := s.nextVersion()
	wb := s.db.NewWriteBatchAt(ts)
	defer wb.Cancel()
	if err := fill(wb); err != nil {
		return err
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	s.committed(ts)
	return nil
}

// runCheckpoints checkpoints each time Write asks, until Close closes
// ckptWake.
func (s *Store) runCheckpoints() {
	defer close(s.ckptDone)
	for range s.ckptWake {
		if err := s.checkpoint(); err != nil {
			s.log.Error().Err(err).Msg("checkpoint failed")
		}
	}
}
