package badgerlinks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dgraph-io/badger/v4"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/links"
)

// The digests' outbox lives in the store beside the links, under its own
// prefix, one record per line:
//
//	o/<account id>/<job id, 20 digits>  a digest line not yet delivered: its user, channel and text
//
// Like every write of the store, a Put is fsynced before it returns.
const outboxPrefix = "o/"

// outboxDeleteBatch bounds the keys one transaction of Delete removes,
// well below Badger's limit on a transaction's size.
const outboxDeleteBatch = 1000

// outbox keeps the lines of digests (package digest) that Discord has not
// yet accepted, in the Store. It is safe for simultaneous use, and valid
// while the Store is open.
type outbox struct{ s *Store }

var _ digest.Outbox = (*outbox)(nil)

// Outbox returns the store's digest outbox.
func (s *Store) Outbox() digest.Outbox { return &outbox{s: s} }

// outboxRecord is stored under o/<account id>/<job id>.
type outboxRecord struct {
	V       int          `json:"v"`
	User    snowflake.ID `json:"user"`
	Guild   snowflake.ID `json:"guild,omitempty"`
	Channel snowflake.ID `json:"channel,omitempty"`
	Text    string       `json:"text"`
}

func (r *outboxRecord) version() int { return r.V }

func (r *outboxRecord) check() error {
	switch {
	case r.User == 0:
		return errors.New("no user")
	case r.Text == "":
		return errors.New("no text")
	case len(r.Text) > links.MaxOutboxLineLen:
		return fmt.Errorf("text of %d bytes, more than %d", len(r.Text), links.MaxOutboxLineLen)
	case !utf8.ValidString(r.Text):
		return errors.New("text is not valid UTF-8")
	}
	return nil
}

func outboxKey(k digest.Key) string {
	return fmt.Sprintf("%s%s/%020d", outboxPrefix, k.Account, k.Job)
}

// parseOutboxKey reads the key of a record; id is the key without the
// prefix.
func parseOutboxKey(id string) (digest.Key, error) {
	account, job, ok := strings.Cut(id, "/")
	if !ok {
		return digest.Key{}, errors.New("no job ID")
	}
	n, err := strconv.ParseUint(job, 10, 64)
	if err != nil || n == 0 {
		return digest.Key{}, fmt.Errorf("job ID %q is not a positive number", job)
	}
	if err := links.CheckID("account id", account); err != nil {
		return digest.Key{}, err
	}
	return digest.Key{Account: account, Job: n}, nil
}

// checkOutboxKey reports a key that cannot be stored.
func checkOutboxKey(k digest.Key) error {
	if err := links.CheckID("account id", k.Account); err != nil {
		return err
	}
	if k.Job == 0 {
		return fmt.Errorf("%w: job ID is 0", links.ErrInvalid)
	}
	return nil
}

// Put stores l, unless a line with its key is stored already, and
// returns the line stored under the key: l, or the one stored first. A
// line without a user or a text, with an invalid key or a text over
// links.MaxOutboxLineLen fails with links.ErrInvalid.
func (o *outbox) Put(ctx context.Context, l digest.Line) (digest.Line, error) {
	if err := checkOutboxKey(l.Key); err != nil {
		return digest.Line{}, err
	}
	rec := outboxRecord{V: recordVersion, User: l.User, Guild: l.Guild, Channel: l.Channel, Text: l.Text}
	if err := rec.check(); err != nil {
		return digest.Line{}, fmt.Errorf("%w: digest line %v: %w", links.ErrInvalid, l.Key, err)
	}
	key := outboxKey(l.Key)
	var stored outboxRecord
	err := o.s.update(ctx, "outbox put", func(txn *badger.Txn) error {
		found, err := getRecord(txn, key, &stored)
		if err != nil || found {
			return err
		}
		stored = rec
		return setRecord(txn, key, &rec)
	})
	if err != nil {
		return digest.Line{}, err
	}
	return stored.line(l.Key), nil
}

func (r *outboxRecord) line(k digest.Key) digest.Line {
	return digest.Line{Key: k, User: r.User, Guild: r.Guild, Channel: r.Channel, Text: r.Text}
}

// Delete removes the lines with these keys; a key not stored is no
// error.
func (o *outbox) Delete(ctx context.Context, keys []digest.Key) error {
	for _, k := range keys {
		if err := checkOutboxKey(k); err != nil {
			return err
		}
	}
	for len(keys) > 0 {
		batch := keys[:min(len(keys), outboxDeleteBatch)]
		keys = keys[len(batch):]
		if err := o.s.update(ctx, "outbox delete", func(txn *badger.Txn) error {
			for _, k := range batch {
				if err := deleteKey(txn, outboxKey(k)); err != nil {
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
	err := o.s.scan(ctx, "outbox lines", outboxPrefix, func(id, key string, v []byte) error {
		k, err := parseOutboxKey(id)
		if err != nil {
			bad = append(bad, corrupt(key, err))
			return nil
		}
		var rec outboxRecord
		if err := decodeRecord(v, &rec); err != nil {
			bad = append(bad, corrupt(key, err))
			return nil
		}
		return fn(rec.line(k))
	})
	if err != nil {
		return err
	}
	return errors.Join(bad...)
}
