package etcdstore

import (
	"container/heap"
	"context"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/partition"
	"github.com/pinbot/pinbot/persistence"
)

// scanKind says which accounts a scan lists.
type scanKind uint8

const (
	scanAccounts  scanKind = iota // a live snapshot or journal event
	scanJournaled                 // a live journal event
	scanJobs                      // a live job
)

func (k scanKind) String() string {
	switch k {
	case scanAccounts:
		return "accounts"
	case scanJournaled:
		return "journaled accounts"
	}
	return "job accounts"
}

// mergePage is the number of keys each partition's first read takes in
// a scan of every partition, so that those reads, of every partition at
// once, stay small.
const mergePage = 16

// cursor walks one partition's range of a scan, account by account,
// reading it a page at a time. It stops at each account that qualifies
// and skips the rest of that account's keys. A scan does not read at one
// revision: a page shows the range as it is when read, so an account
// written during the scan may or may not be listed, and none is listed
// twice.
type cursor struct {
	s    *Store
	kind scanKind
	p    partition.ID
	root string // prefix of the range
	end  string
	next string // first key of the next page
	more bool   // keys may remain from next on
	buf  []*mvccpb.KeyValue
	head string // the account the cursor stopped at
}

func (s *Store) newCursor(kind scanKind, p partition.ID) *cursor {
	root := s.l.accountsRoot(p)
	if kind == scanJobs {
		root = s.l.jobsRoot(p)
	}
	return &cursor{s: s, kind: kind, p: p, root: root, end: rangeEnd(root), next: root, more: true}
}

// getOp is the read of the cursor's next page of at most limit keys.
func (c *cursor) getOp(limit int) clientv3.Op {
	return clientv3.OpGet(c.next, clientv3.WithRange(c.end), clientv3.WithLimit(int64(limit)))
}

// fill takes a page read by getOp.
func (c *cursor) fill(r *clientv3.GetResponse) {
	c.buf = r.Kvs
	c.more = r.More
	if n := len(r.Kvs); n > 0 {
		c.next = string(r.Kvs[n-1].Key) + "\x00"
	} else {
		c.more = false
	}
}

// advance moves the cursor to the next account that qualifies at now;
// ok is false when the range holds no more.
func (c *cursor) advance(ctx context.Context, now int64) (ok bool, err error) {
	for {
		if len(c.buf) == 0 {
			if !c.more {
				return false, nil
			}
			rctx, cancel := c.s.request(ctx)
			resp, err := c.s.cli.Get(rctx, c.next, clientv3.WithRange(c.end), clientv3.WithLimit(int64(c.s.opts.ScanPage)))
			cancel()
			if err != nil {
				return false, c.s.etcdError(fmt.Sprintf("scan partition %d", c.p), err)
			}
			c.fill(resp)
			continue
		}
		kv := c.buf[0]
		c.buf = c.buf[1:]
		account, rest, okKey := splitAccount(c.root, string(kv.Key))
		if !okKey || !persistence.ValidAccount(account) {
			continue // not a key of the store's: nothing to list
		}
		switch c.kind {
		case scanJournaled:
			if !strings.HasPrefix(rest, eventsDir) || !live(kv.Value, now) {
				continue
			}
		default:
			if !live(kv.Value, now) {
				continue
			}
		}
		c.head = account
		// Skip the account's other keys, in this page and beyond.
		prefix := c.root + account + endOfAcctID
		for len(c.buf) > 0 && strings.HasPrefix(string(c.buf[0].Key), prefix) {
			c.buf = c.buf[1:]
		}
		if len(c.buf) == 0 {
			if after := c.root + account + "\x01"; after > c.next {
				c.next = after
			}
		}
		return true, nil
	}
}

// scanPartition calls fn with each account of partition p that kind
// lists, in byte order.
func (s *Store) scanPartition(ctx context.Context, kind scanKind, p partition.ID, fn func(account string) error) error {
	if err := s.checkPartition(p); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.life.Exit()
	c := s.newCursor(kind, p)
	for {
		ok, err := c.advance(ctx, s.now())
		if err != nil || !ok {
			return err
		}
		if err := fn(c.head); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// scanAll calls fn with each account of every partition that kind
// lists, in byte order: a merge of the partitions' cursors, whose first
// pages are read a transaction of many partitions at a time.
func (s *Store) scanAll(ctx context.Context, kind scanKind, fn func(account string) error) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.life.Exit()
	cursors := make([]*cursor, s.opts.Partitions)
	for p := range cursors {
		cursors[p] = s.newCursor(kind, partition.ID(p))
	}
	for start := 0; start < len(cursors); start += s.opts.MaxTxnOps {
		batch := cursors[start:min(start+s.opts.MaxTxnOps, len(cursors))]
		ops := make([]clientv3.Op, len(batch))
		for i, c := range batch {
			ops[i] = c.getOp(min(mergePage, s.opts.ScanPage))
		}
		rctx, cancel := s.request(ctx)
		resp, err := s.cli.Txn(rctx).Then(ops...).Commit()
		cancel()
		if err != nil {
			return s.etcdError("scan "+kind.String(), err)
		}
		for i, r := range resp.Responses {
			batch[i].fill((*clientv3.GetResponse)(r.GetResponseRange()))
		}
	}
	h := make(cursorHeap, 0, len(cursors))
	now := s.now()
	for _, c := range cursors {
		ok, err := c.advance(ctx, now)
		if err != nil {
			return err
		}
		if ok {
			h = append(h, c)
		}
	}
	heap.Init(&h)
	for len(h) > 0 {
		c := h[0]
		if err := fn(c.head); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		ok, err := c.advance(ctx, s.now())
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return nil
}

// cursorHeap orders cursors by the account they stopped at. No two
// cursors stop at the same account: an account lives in one partition.
type cursorHeap []*cursor

func (h cursorHeap) Len() int           { return len(h) }
func (h cursorHeap) Less(i, j int) bool { return h[i].head < h[j].head }
func (h cursorHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)        { *h = append(*h, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// Accounts calls fn with each account that has a snapshot or journal
// events whose expiry has not passed, once, in byte order of the
// account IDs across every partition. See cursor for what a scan sees
// of writes made during it; fn may call Load and Write, but not Close.
func (s *Store) Accounts(ctx context.Context, fn func(account string) error) error {
	return s.scanAll(ctx, scanAccounts, fn)
}

// Journaled calls fn with each account that has journal events whose
// expiry has not passed, in byte order across every partition. The
// events a snapshot supersedes are deleted with its write, so these are
// the events no snapshot holds.
func (s *Store) Journaled(ctx context.Context, fn func(account string) error) error {
	return s.scanAll(ctx, scanJournaled, fn)
}

// JobAccounts calls fn with each account that has jobs whose expiry has
// not passed, once, in byte order across every partition.
func (s *Store) JobAccounts(ctx context.Context, fn func(account string) error) error {
	return s.scanAll(ctx, scanJobs, fn)
}

// PartitionAccounts is Accounts for the accounts of partition p: what a
// member taking p over reads.
func (s *Store) PartitionAccounts(ctx context.Context, p partition.ID, fn func(account string) error) error {
	return s.scanPartition(ctx, scanAccounts, p, fn)
}

// PartitionJournaled is Journaled for the accounts of partition p.
func (s *Store) PartitionJournaled(ctx context.Context, p partition.ID, fn func(account string) error) error {
	return s.scanPartition(ctx, scanJournaled, p, fn)
}

// PartitionJobAccounts is JobAccounts for the accounts of partition p.
func (s *Store) PartitionJobAccounts(ctx context.Context, p partition.ID, fn func(account string) error) error {
	return s.scanPartition(ctx, scanJobs, p, fn)
}
