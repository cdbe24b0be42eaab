package badgerlinks

import (
	"context"
	"errors"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// outboxDeleteBatch bounds the keys one transaction of Delete removes,
// well below Badger's limit on a transaction's size.
const outboxDeleteBatch = 1000

// outbox keeps the lines of digests (package digest) that Discord has not
// yet accepted, in the Store beside the links, one record per line under
// record.OutboxKey; like every write of the store, a Put is fsynced
// before it returns. It is safe for simultaneous use, and valid while the
// Store is open.
type outbox struct{ s *Store }

var _ digest.Outbox = (*outbox)(nil)

// Outbox returns the store's digest outbox.
func (s *Store) Outbox() digest.Outbox { return &outbox{s: s} }

// Put stores l, unless a line with its key is stored already, and
// returns the line stored under the key: l, or the one stored first. A
// line without a user or a text, with an invalid key or a text over
// links.MaxOutboxLineLen fails with links.ErrInvalid.
func (o *outbox) Put(ctx context.Context, l digest.Line) (digest.Line, error) {
	rec, err := record.NewOutbox(l)
	if err != nil {
		return digest.Line{}, err
	}
	key := record.OutboxKey(l.Key)
	var stored record.Outbox
	err = o.s.update(ctx, "outbox put", func(txn *badger.Txn) error {
		found, err := getRecord(txn, key, &stored)
		if err != nil || found {
			return err
		}
		stored = *rec
		return setRecord(txn, key, rec)
	})
	if err != nil {
		return digest.Line{}, err
	}
	return stored.Line(l.Key), nil
}

// Delete removes the lines with these keys; a key not stored is no
// error.
func (o *outbox) Delete(ctx context.Context, keys []digest.Key) error {
	for _, k := range keys {
		if err := record.CheckOutboxKey(k); err != nil {
			return err
		}
	}
	for len(keys) > 0 {
		batch := keys[:min(len(keys), outboxDeleteBatch)]
		keys = keys[len(batch):]
		if err := o.s.update(ctx, "outbox delete", func(txn *badger.Txn) error {
			for _, k := range batch {
				if err := deleteKey(txn, record.OutboxKey(k)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// Lines calls fn with every stored line, in order of account and job ID,
// until fn returns an error, which Lines then returns. It reads one
// snapshot. A record that cannot be read is skipped; Lines then returns
// an error wrapping links.ErrCorrupt that names each, once every other line
// was seen.
func (o *outbox) Lines(ctx context.Context, fn func(digest.Line) error) error {
	var bad []error
	err := o.s.scan(ctx, "outbox lines", record.OutboxPrefix, func(id, key string, v []byte) error {
		k, err := record.ParseOutboxKey(id)
		if err != nil {
			bad = append(bad, record.Corrupt(key, err))
			return nil
		}
		var rec record.Outbox
		if err := record.Decode(v, &rec); err != nil {
			bad = append(bad, record.Corrupt(key, err))
			return nil
		}
		return fn(rec.Line(k))
	})
	if err != nil {
		return err
	}
	return errors.Join(bad...)
}
