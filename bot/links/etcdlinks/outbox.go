package etcdlinks

import (
	"context"
	"errors"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/links/internal/record"
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

// Put stores l, unless a line with its key is stored already, and
// returns the line stored under the key: l, or the one stored first. A
// line without a user or a text, with an invalid key or a text over
// links.MaxOutboxLineLen fails with links.ErrInvalid. One request: a
// transaction that creates the key if absent, or else reads it.
func (o *outbox) Put(ctx context.Context, l digest.Line) (digest.Line, error) {
	rec, err := record.NewOutbox(l)
	if err != nil {
		return digest.Line{}, err
	}
	s, rel := o.s, record.OutboxKey(l.Key)
	stored := *rec
	err = s.do(ctx, "outbox put", func(ctx context.Context) error {
		val, err := s.encode(rel, rec)
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
	return stored.Line(l.Key), nil
}

// Delete removes the lines with these keys; a key not stored is no
// error. One transaction per maxTxnOps keys.
func (o *outbox) Delete(ctx context.Context, keys []digest.Key) error {
	rels := make([]string, len(keys))
	for i, k := range keys {
		if err := record.CheckOutboxKey(k); err != nil {
			return err
		}
		rels[i] = record.OutboxKey(k)
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
	err := s.scan(ctx, "outbox lines", record.OutboxPrefix, func(rel string, v []byte) error {
		k, err := record.ParseOutboxKey(rel[len(record.OutboxPrefix):])
		if err != nil {
			bad = append(bad, s.corrupt(rel, err))
			return nil
		}
		var rec record.Outbox
		if err := s.decode(rel, v, &rec); err != nil {
			bad = append(bad, err)
			return nil
		}
		return fn(rec.Line(k))
	})
	if err != nil {
		return err
	}
	return errors.Join(bad...)
}
