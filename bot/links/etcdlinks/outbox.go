package etcdlinks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/disgoorg/snowflake/v2"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/links"
)

// outbox keeps the lines of digests (package digest) that Discord has not
// yet accepted, in the Store, one record per line:
//
//	o/<account id>/<job id, 20 digits>  a digest line not yet delivered: its user, channel and text
//
// It is safe for simultaneous use, and valid while the Store is open.
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

func (r *outboxRecord) line(k digest.Key) digest.Line {
	return digest.Line{Key: k, User: r.User, Guild: r.Guild, Channel: r.Channel, Text: r.Text}
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
// links.MaxOutboxLineLen fails with links.ErrInvalid. One request: a
// transaction that creates the key if absent, or else reads it.
func (o *outbox) Put(ctx context.Context, l digest.Line) (digest.Line, error) {
	if err := checkOutboxKey(l.Key); err != nil {
		return digest.Line{}, err
	}
	rec := outboxRecord{V: recordVersion, User: l.User, Guild: l.Guild, Channel: l.Channel, Text: l.Text}
	if err := rec.check(); err != nil {
		return digest.Line{}, fmt.Errorf("%w: digest line %v: %w", links.ErrInvalid, l.Key, err)
	}
	s, rel := o.s, outboxKey(l.Key)
	stored := rec
	err := s.do(ctx, "outbox put", func(ctx context.Context) error {
		val, err := s.encode(rel, &rec)
		if err != nil {
			return err
		}
		k := s.key(rel)
		rctx, cancel := s.request(ctx)
		defer cancel()
		resp, err := s.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, val)).
			Else(clientv3.OpGet(k)).
			Commit()
		if err != nil {
			return s.etcdError("outbox put", err)
		}
		if resp.Succeeded {
			return nil
		}
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			return fmt.Errorf("links: outbox put: %q deleted while read; try again", k)
		}
		return s.decode(rel, kvs[0].Value, &stored)
	})
	if err != nil {
		return digest.Line{}, err
	}
	return stored.line(l.Key), nil
}

// Delete removes the lines with these keys; a key not stored is no
// error. One transaction per maxTxnOps keys.
func (o *outbox) Delete(ctx context.Context, keys []digest.Key) error {
	rels := make([]string, len(keys))
	for i, k := range keys {
		if err := checkOutboxKey(k); err != nil {
			return err
		}
		rels[i] = outboxKey(k)
	}
	s := o.s
	return s.do(ctx, "outbox delete", func(ctx context.Context) error {
		for chunk := range slices.Chunk(dedupe(rels), maxTxnOps) {
			ops := make([]clientv3.Op, len(chunk))
			for i, rel := range chunk {
				ops[i] = clientv3.OpDelete(s.key(rel))
			}
			if err := s.write(ctx, "outbox delete", ops); err != nil {
				return err
			}
		}
		return nil
	})
}

// Lines calls fn with every stored line, in order of account and job ID,
// until fn returns an error, which Lines then returns. It reads one
// snapshot, a page at a time. A record that cannot be read is skipped;
// Lines then returns an error wrapping links.ErrCorrupt that names each,
// once every other line was seen.
func (o *outbox) Lines(ctx context.Context, fn func(digest.Line) error) error {
	s := o.s
	var bad []error
	err := s.scan(ctx, "outbox lines", outboxPrefix, func(rel string, v []byte) error {
		k, err := parseOutboxKey(rel[len(outboxPrefix):])
		if err != nil {
			bad = append(bad, s.corrupt(rel, err))
			return nil
		}
		var rec outboxRecord
		if err := s.decode(rel, v, &rec); err != nil {
			bad = append(bad, err)
			return nil
		}
		return fn(rec.line(k))
	})
	if err != nil {
		return err
	}
	return errors.Join(bad...)
}
