package badgerlinks

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// Records calls fn with every record of the store, as of one instant, in
// key order: its key (as "u/<user id>", see the package documentation)
// and its value, a JSON record, which fn may keep. Records past their
// time to live and the grant generation counter (GrantGen) are left
// out. fn returning an error stops the scan with that error. It is how
// pinbot cluster import reads a single process's links.
func (s *Store) Records(ctx context.Context, fn func(key string, value []byte) error) error {
	return s.view(ctx, "records", func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			key := string(item.Key())
			if strings.HasPrefix(key, "m/") {
				continue
			}
			v, err := item.ValueCopy(nil)
			if err != nil {
				return fmt.Errorf("links: read %q: %w", key, err)
			}
			if err := fn(key, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// GrantGen returns the last grant generation the store handed out (0 if
// none).
func (s *Store) GrantGen(ctx context.Context) (uint64, error) {
	var gen uint64
	err := s.view(ctx, "grant generation", func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(record.GrantGenKey))
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
			return nil
		case err != nil:
			return fmt.Errorf("links: read %q: %w", record.GrantGenKey, err)
		}
		return item.Value(func(v []byte) error {
			if len(v) != 8 {
				return record.Corrupt(record.GrantGenKey, fmt.Errorf("%d bytes, want 8", len(v)))
			}
			gen = binary.BigEndian.Uint64(v)
			return nil
		})
	})
	return gen, err
}
