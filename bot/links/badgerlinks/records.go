package badgerlinks

import (
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// stateKey stores a state under its SHA-256 digest, so that reading the
// database (with its key) does not yield states that could still be used.
func stateKey(state string) string { return record.StateKey(record.StateHash(state)) }

// getRecord reads key into rec. It reports false, with no error, when key
// is absent.
func getRecord(txn *badger.Txn, key string, rec record.Record) (bool, error) {
	item, err := txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("links: read %q: %w", key, err)
	}
	var derr error
	if err := item.Value(func(v []byte) error {
		derr = record.Decode(v, rec)
		return nil
	}); err != nil {
		return false, fmt.Errorf("links: read %q: %w", key, err)
	}
	if derr != nil {
		return false, record.Corrupt(key, derr)
	}
	return true, nil
}

// setRecord stores rec under key in txn.
func setRecord(txn *badger.Txn, key string, rec record.Record) error {
	v, err := record.Encode(rec)
	if err != nil {
		return fmt.Errorf("links: encode %q: %w", key, err)
	}
	if err := txn.Set([]byte(key), v); err != nil {
		return fmt.Errorf("links: write %q: %w", key, err)
	}
	return nil
}

// setRecordTTL stores rec under key in txn, to expire ttl from now by
// Badger's clock (rounded up to a whole second).
func setRecordTTL(txn *badger.Txn, key string, rec record.Record, ttl time.Duration) error {
	v, err := record.Encode(rec)
	if err != nil {
		return fmt.Errorf("links: encode %q: %w", key, err)
	}
	if err := txn.SetEntry(badger.NewEntry([]byte(key), v).WithTTL(ttl.Round(time.Second) + time.Second)); err != nil {
		return fmt.Errorf("links: write %q: %w", key, err)
	}
	return nil
}

// deleteKey deletes key in txn.
func deleteKey(txn *badger.Txn, key string) error {
	if err := txn.Delete([]byte(key)); err != nil {
		return fmt.Errorf("links: delete %q: %w", key, err)
	}
	return nil
}
