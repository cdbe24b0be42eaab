package etcdlinks

import (
	"context"
	"errors"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// outbox keeps the lines of digests (package digest) that Discord has not
// yet accepted, in the Store, one record per line:
//
//	o/<account id>/<job id, 20 digits>  a digest line not yet delivered: its user, channel, text and owner
//
// A member's outbox (MemberOutbox) records in each line it puts the
// member that keeps it, and takes over the lines of members whose
// member key (partition.Keys.Member) is gone. It is safe for
// simultaneous use, and valid while the Store is open.
type outbox struct {
	s     *Store
	owner string // the member whose lines Put stores; "" for Outbox()
}

var (
	_ digest.Outbox       = (*outbox)(nil)
	_ digest.SharedOutbox = (*outbox)(nil)
)

// maxClaimAttempts bounds Put's tries to create a line or take over the
// stored one, each undone by another member's write to it.
const maxClaimAttempts = 10

// Outbox returns the store's digest outbox, whose lines belong to no
// member: for a single process over etcd, and for tools.
func (s *Store) Outbox() digest.Outbox { return &outbox{s: s} }

// MemberOutbox returns the store's digest outbox as the cluster member
// member sees it (a digest.SharedOutbox): Put stores lines as member's,
// and Claim takes over those of members that no longer run, which are
// the members without a member key (partition.Keys.Member) under the
// keys the store was opened with. Lines without an owner (put through
// Outbox) are any member's to claim. An empty member fails every Put and
// Claim with links.ErrInvalid.
func (s *Store) MemberOutbox(member string) digest.SharedOutbox {
	return &outbox{s: s, owner: member}
}

// memberKey is the etcd key of member's member key.
func (s *Store) memberKey(member string) string { return s.members + member }

// Put stores l, unless a line with its key is stored already, and
// returns the line stored under the key: l, or the one stored first. A
// line without a user or a text, with an invalid key or a text over
// links.MaxOutboxLineLen fails with links.ErrInvalid. One request: a
// transaction that creates the key if absent, or else reads it.
//
// A member's outbox stores l as the member's. A line stored already
// under another member's name is taken over as Claim does when that
// member no longer runs, and otherwise returned with an error wrapping
// digest.ErrElsewhere: that member sends it.
func (o *outbox) Put(ctx context.Context, l digest.Line) (digest.Line, error) {
	rec, err := record.NewOutbox(l)
	if err != nil {
		return digest.Line{}, err
	}
	if err := o.checkOwner(o.owner != ""); err != nil {
		return digest.Line{}, err
	}
	rec.Owner = o.owner
	s, rel := o.s, record.OutboxKey(l.Key)
	stored := *rec
	err = s.do(ctx, "outbox put", func(ctx context.Context) error {
		val, err := s.encode(rel, rec)
		if err != nil {
			return err
		}
		k := s.key(rel)
		for attempt := 1; ; attempt++ {
			rctx, cancel := s.request(ctx)
			resp, err := s.cli.Txn(rctx).
				If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
				Then(clientv3.OpPut(k, val)).
				Else(clientv3.OpGet(k)).
				Commit()
			cancel()
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
			if err := s.decode(rel, kvs[0].Value, &stored); err != nil {
				return err
			}
			if o.owner == "" || stored.Owner == o.owner {
				return nil
			}
			taken, live, err := o.take(ctx, rel, kvs[0].ModRevision, stored)
			switch {
			case err != nil:
				return err
			case taken:
				return nil
			case live:
				return fmt.Errorf("links: outbox put: line %v kept by member %q: %w", l.Key, stored.Owner, digest.ErrElsewhere)
			case attempt == maxClaimAttempts:
				return fmt.Errorf("links: outbox put: %q still changing after %d attempts", k, attempt)
			}
		}
	})
	if err != nil && !errors.Is(err, digest.ErrElsewhere) {
		return digest.Line{}, err
	}
	return stored.Line(l.Key), err
}

// checkOwner fails a member's call on an outbox without one (want) or
// with an empty one.
func (o *outbox) checkOwner(member bool) error {
	if member && o.owner == "" {
		return fmt.Errorf("%w: digest outbox without a member", links.ErrInvalid)
	}
	return nil
}

// take rewrites the line under rel, as read at revision mod, as o's:
// one transaction, applied only while the line is unchanged since and,
// unless it is o's already or no member's, its owner has no member key.
// It reports whether it took the line, and, when not, whether the
// line's owner is live.
func (o *outbox) take(ctx context.Context, rel string, mod int64, rec record.Outbox) (taken, live bool, err error) {
	s, k, from := o.s, o.s.key(rel), rec.Owner
	rec.Owner = o.owner
	val, err := s.encode(rel, &rec)
	if err != nil {
		return false, false, err
	}
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", mod)}
	var orElse []clientv3.Op
	if from != "" && from != o.owner {
		mk := s.memberKey(from)
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(mk), "=", 0))
		orElse = append(orElse, clientv3.OpGet(mk, clientv3.WithCountOnly()))
	}
	rctx, cancel := s.request(ctx)
	defer cancel()
	resp, err := s.cli.Txn(rctx).If(cmps...).Then(clientv3.OpPut(k, val)).Else(orElse...).Commit()
	if err != nil {
		return false, false, s.etcdError("outbox claim", err)
	}
	if resp.Succeeded {
		return true, false, nil
	}
	if len(orElse) > 0 {
		live = resp.Responses[0].GetResponseRange().GetCount() > 0
	}
	return false, live, nil
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

// Claim takes for the member the lines of members that no longer run
// and, when own is true, the lines already under its name, and calls fn
// with each line taken, in order of account and job ID, until fn
// returns an error, which Claim then returns. It reads the live members
// and the lines, a page at a time, then takes each line it may by a
// transaction (take) that checks again that the line is unchanged and
// its owner still without a member key: of members claiming a line at
// once, one takes it. A record that cannot be read is skipped; Claim
// then returns an error wrapping links.ErrCorrupt that names each, once
// every other line was seen.
func (o *outbox) Claim(ctx context.Context, own bool, fn func(digest.Line) error) error {
	if err := o.checkOwner(true); err != nil {
		return err
	}
	s := o.s
	var bad []error
	err := s.do(ctx, "outbox claim", func(ctx context.Context) error {
		live, err := o.liveMembers(ctx)
		if err != nil {
			return err
		}
		return s.scanPages(ctx, "outbox claim", record.OutboxPrefix, 0, func(kvs []kv) error {
			for _, kv := range kvs {
				k, err := record.ParseOutboxKey(kv.rel[len(record.OutboxPrefix):])
				if err != nil {
					bad = append(bad, s.corrupt(kv.rel, err))
					continue
				}
				var rec record.Outbox
				if err := s.decode(kv.rel, kv.value, &rec); err != nil {
					bad = append(bad, err)
					continue
				}
				if (rec.Owner == o.owner && !own) || (rec.Owner != o.owner && live[rec.Owner]) {
					continue
				}
				taken, _, err := o.take(ctx, kv.rel, kv.mod, rec)
				if err != nil {
					return err
				}
				if !taken {
					continue // sent, or taken by another member, since the read
				}
				if err := fn(rec.Line(k)); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	return errors.Join(bad...)
}

// liveMembers returns the ids of the members whose member key is there.
func (o *outbox) liveMembers(ctx context.Context) (map[string]bool, error) {
	s := o.s
	rctx, cancel := s.request(ctx)
	defer cancel()
	resp, err := s.cli.Get(rctx, s.members, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, s.etcdError("outbox claim", err)
	}
	live := make(map[string]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		live[string(kv.Key[len(s.members):])] = true
	}
	return live, nil
}
