package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

// jobPrefix starts the key of a job: "j" + account + NUL + job ID (8
// bytes, big-endian), so that an account's jobs sort by ID and no
// account's keys are a prefix of another's (account IDs hold no NUL).
const jobPrefix = 'j'

// appendJobsPrefix appends the key prefix of account's jobs to dst.
func appendJobsPrefix(dst []byte, account string) []byte {
	dst = append(dst, jobPrefix)
	dst = append(dst, account...)
	return append(dst, 0)
}

// appendJobKey appends the key of account's job id to dst.
func appendJobKey(dst []byte, account string, id uint64) []byte {
	return binary.BigEndian.AppendUint64(appendJobsPrefix(dst, account), id)
}

// writeJobs adds aw's job deletions, then its jobs, to txn; it returns the
// entries and bytes added.
func writeJobs(txn *badger.Txn, aw *persistence.AccountWrite) (entries, size int, err error) {
	for _, id := range aw.DropJobs {
		k := appendJobKey(nil, aw.Account, id)
		if err := txn.Delete(k); err != nil {
			return entries, size, wrapTxn(fmt.Sprintf("account %q: delete job %d", aw.Account, id), err)
		}
		entries++
		size += len(k)
	}
	for i := range aw.Jobs {
		j := &aw.Jobs[i]
		k := appendJobKey(nil, aw.Account, j.ID)
		v := codec.AppendJob(nil, j)
		if err := txn.SetEntry(newEntry(k, v, persistence.JobExpirySecond(j))); err != nil {
			return entries, size, wrapTxn(fmt.Sprintf("account %q: job %d", aw.Account, j.ID), err)
		}
		entries++
		size += len(k) + len(v)
	}
	return entries, size, nil
}

// Jobs returns account's stored jobs, ascending by ID; expired ones are
// not seen. A job that cannot be decoded yields an error wrapping
// ErrCorrupt that names the account and the job.
func (s *Store) Jobs(_ context.Context, account string) ([]persistence.Job, error) {
	if err := persistence.CheckAccount(account); err != nil {
		return nil, err
	}
	if !s.life.Enter() {
		return nil, persistence.ErrClosed
	}
	defer s.life.Exit()
	s.rlockIndex()
	defer s.walMu.RUnlock()

	var jobs []persistence.Job
	prefix := appendJobsPrefix(nil, account)
	err := s.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 16})
		defer it.Close()
		for it.Rewind(); it.ValidForPrefix(prefix); it.Next() {
			item := it.Item()
			key := item.Key()
			if len(key) != len(prefix)+8 {
				return fmt.Errorf("badgerstore: account %q: %w", account, codec.Corrupt(fmt.Sprintf("malformed job key %x", key)))
			}
			id := binary.BigEndian.Uint64(key[len(prefix):])
			var j persistence.Job
			var derr error
			if err := item.Value(func(v []byte) error {
				j, derr = codec.DecodeJob(v)
				return nil
			}); err != nil {
				return fmt.Errorf("badgerstore: account %q: read job %d: %w", account, id, err)
			}
			if derr == nil && j.ID != id {
				derr = codec.Corrupt(fmt.Sprintf("job %d stored under the key of job %d", j.ID, id))
			}
			if derr != nil {
				return fmt.Errorf("badgerstore: account %q: job %d: %w", account, id, derr)
			}
			jobs = append(jobs, j)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return jobs, nil
}

// JobAccounts calls fn with each account that has stored jobs, once, in
// byte order, reading keys only. It does not see writes made after it
// started. Malformed keys are logged and skipped.
func (s *Store) JobAccounts(_ context.Context, fn func(account string) error) error {
	if !s.life.Enter() {
		return persistence.ErrClosed
	}
	defer s.life.Exit()
	s.rlockIndex()
	s.walMu.RUnlock()
	return s.view(func(txn *badger.Txn) error {
		prefix := []byte{jobPrefix}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		it.Rewind()
		for it.ValidForPrefix(prefix) {
			key := it.Item().Key()
			end := bytes.IndexByte(key, 0)
			if end < 0 || !persistence.ValidAccount(key[1:end]) {
				s.log.Warn().Hex("key", key).Msg("skipping malformed job key")
				it.Next()
				continue
			}
			account := string(key[1:end])
			if err := fn(account); err != nil {
				return err
			}
			// On to the next account: past every key of this one.
			next := appendJobsPrefix(nil, account)
			next[len(next)-1] = 1
			it.Seek(next)
		}
		return nil
	})
}
