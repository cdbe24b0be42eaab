package etcdlinks

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/links/internal/record"
	"github.com/pinbot/pinbot/internal/partition"
)

// Record is one record of a links store, as another store holds it: its
// key relative to the store's root ("u/<user id>", "a/<account id>", …;
// see the package documentation) and its plain value, a JSON record of
// the current version. badgerlinks.Store.Records reads them.
type Record struct {
	Key   string
	Value []byte
}

// ImportCount counts the records of an import by kind.
type ImportCount struct {
	Users, Accounts, Tokens int
	Outbox                  int // digest lines not yet delivered
	Observed                int // accounts' records of pins made elsewhere
	History                 int // pictures pinned
	Guilds                  int // servers' settings and auto-pin rules
	// States are the OAuth states of links in progress: never imported
	// (the user runs /link again), as no member could finish them.
	States int
	// Expired are records whose deadline has passed: not imported.
	Expired int
}

// ImportCheck is what etcd holds of the records of an import (Compare).
type ImportCheck struct {
	// Present counts the records etcd already holds with the same value.
	Present int
	// Conflicts are the users, accounts and servers ("user 801",
	// "account 111", "guild 900") of which etcd holds a record that the
	// import does not have, or has with another value, in key order.
	Conflicts []string
}

// importMaxBytes bounds the values of one import transaction, well under
// etcd's default --max-request-bytes.
const importMaxBytes = 512 << 10

// importOwner returns who the record under key belongs to ("user U",
// "account A", "guild G"); false for a kind of record an import does not
// carry.
func importOwner(key string) (owner string, ok bool) {
	kind, rest, found := strings.Cut(key, "/")
	if !found || rest == "" {
		return "", false
	}
	id, _, _ := strings.Cut(rest, "/")
	switch kind + "/" {
	case record.UserPrefix:
		return "user " + id, true
	case record.AccountPrefix, record.TokenPrefix, record.ObservedPrefix, record.OutboxPrefix, record.HistoryPrefix:
		return "account " + id, true
	case record.GuildPrefix:
		return "guild " + id, true
	}
	return "", false
}

// ownerReads returns the reads of everything etcd keeps of owner.
func (s *Store) ownerReads(owner string) []clientv3.Op {
	kind, id, _ := strings.Cut(owner, " ")
	switch kind {
	case "user":
		return []clientv3.Op{clientv3.OpGet(s.key(record.UserKey(id)))}
	case "guild":
		return []clientv3.Op{
			clientv3.OpGet(s.key(record.GuildKey(id))),
			clientv3.OpGet(s.key(record.GuildKey(id)+"/"), clientv3.WithPrefix()),
		}
	}
	return []clientv3.Op{
		clientv3.OpGet(s.key(record.AccountKey(id))),
		clientv3.OpGet(s.key(record.TokenKey(id))),
		clientv3.OpGet(s.key(record.ObservedKey(id))),
		clientv3.OpGet(s.key(record.OutboxPrefix+id+"/"), clientv3.WithPrefix()),
		clientv3.OpGet(s.key(record.HistoryPrefix+id+"/"), clientv3.WithPrefix()),
	}
}

// importable sorts recs for an import at now: the records to write, by
// key, and their counts; it fails on a record that does not decode or
// whose kind the store does not know.
func importable(recs []Record, now time.Time) ([]Record, ImportCount, error) {
	var c ImportCount
	out := make([]Record, 0, len(recs))
	for _, r := range recs {
		if strings.HasPrefix(r.Key, record.StatePrefix) {
			c.States++
			continue
		}
		if _, ok := importOwner(r.Key); !ok {
			return nil, c, fmt.Errorf("links: import: record %q: unknown kind", r.Key)
		}
		deadline, err := importDeadline(r)
		if err != nil {
			return nil, c, err
		}
		if !deadline.IsZero() && !deadline.After(now) {
			c.Expired++
			continue
		}
		switch r.Key[:2] {
		case record.UserPrefix:
			c.Users++
		case record.AccountPrefix:
			c.Accounts++
		case record.TokenPrefix:
			c.Tokens++
		case record.OutboxPrefix:
			c.Outbox++
		case record.ObservedPrefix:
			c.Observed++
		case record.HistoryPrefix:
			c.History++
		case record.GuildPrefix:
			c.Guilds++
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Record) int { return strings.Compare(a.Key, b.Key) })
	return out, c, nil
}

// importDeadline decodes r and returns the instant after which it is
// forgotten: zero for records kept until changed.
func importDeadline(r Record) (time.Time, error) {
	var rec record.Record
	switch r.Key[:2] {
	case record.UserPrefix:
		rec = &record.User{}
	case record.AccountPrefix:
		rec = &record.Account{}
	case record.TokenPrefix:
		rec = &record.Token{}
	case record.OutboxPrefix:
		rec = &record.Outbox{}
	case record.GuildPrefix:
		rec = &record.Guild{}
		if record.IsAutopinKey(r.Key) {
			rec = &record.AutopinRules{}
		}
	case record.ObservedPrefix:
		o := &record.Observed{}
		if err := record.Decode(r.Value, o); err != nil {
			return time.Time{}, record.Corrupt(r.Key, err)
		}
		var last int64
		for _, p := range o.Pins {
			last = max(last, p.Until)
		}
		return time.UnixMilli(last), nil
	case record.HistoryPrefix:
		h := &record.History{}
		if err := record.Decode(r.Value, h); err != nil {
			return time.Time{}, record.Corrupt(r.Key, err)
		}
		return time.UnixMilli(h.Until), nil
	}
	if err := record.Decode(r.Value, rec); err != nil {
		return time.Time{}, record.Corrupt(r.Key, err)
	}
	return time.Time{}, nil
}

// Compare reads what etcd holds of the users and accounts of recs, the
// records an import at now would write (Import), and reports the
// records already there with the same value, and each user or account
// of which etcd holds anything else: another value, or a record recs
// does not have. An import of recs loses nothing only when Conflicts is
// empty; Present records are those an earlier run of the same import
// wrote. It also returns the counts of recs by kind.
func (s *Store) Compare(ctx context.Context, recs []Record, now time.Time) (ImportCheck, ImportCount, error) {
	var check ImportCheck
	recs, count, err := importable(recs, now)
	if err != nil {
		return check, count, err
	}
	err = s.do(ctx, "import: compare", func(ctx context.Context) error {
		want := make(map[string][]byte, len(recs))
		var owners []string
		seen := map[string]bool{}
		for _, r := range recs {
			want[r.Key] = r.Value
			o, _ := importOwner(r.Key)
			if !seen[o] {
				seen[o] = true
				owners = append(owners, o)
			}
		}
		slices.Sort(owners)
		// At most maxTxnOps reads per transaction: a user is one, an
		// account five, a server two.
		for i := 0; i < len(owners); {
			var ops []clientv3.Op
			var batch []string
			for i < len(owners) && len(ops)+len(s.ownerReads(owners[i])) <= maxTxnOps {
				ops = append(ops, s.ownerReads(owners[i])...)
				batch = append(batch, owners[i])
				i++
			}
			rctx, cancel := s.request(ctx)
			resp, err := s.cli.Txn(rctx).Then(ops...).Commit()
			cancel()
			if err != nil {
				return s.etcdError("import: compare", err)
			}
			k := 0
			for _, o := range batch {
				differs := false
				for range s.ownerReads(o) {
					for _, kv := range resp.Responses[k].GetResponseRange().GetKvs() {
						rel := s.rel(kv.Key)
						w, ok := want[rel]
						plain, err := s.seal.openValue(rel, kv.Value)
						if !ok || err != nil || !bytes.Equal(plain, w) {
							differs = true
							continue
						}
						check.Present++
					}
					k++
				}
				if differs {
					check.Conflicts = append(check.Conflicts, o)
				}
			}
		}
		return nil
	})
	return check, count, err
}

// Import writes recs, sealed, into the store, unconditionally, in
// transactions within etcd's default limits; the records of pins made
// elsewhere and of pictures pinned go under leases that end no earlier
// than their deadlines, as the store's own writes put them. OAuth
// states and records whose deadline is at or before now are left out.
// It then raises the store's grant generation counter to grantGen
// unless it is already there: generations stay unique across the
// records imported and those Link hands out later.
//
// It is for an operator's import from a single process while no member
// runs, after Compare found no conflict: writing a record etcd already
// holds with the same value changes nothing, so an import interrupted
// midway (etcd unreachable) can be run again. It returns the counts of
// recs by kind and how many records it wrote; on an error, those before
// the failed transaction are written.
func (s *Store) Import(ctx context.Context, recs []Record, grantGen uint64, now time.Time) (ImportCount, int, error) {
	recs, count, err := importable(recs, now)
	if err != nil {
		return count, 0, err
	}
	written := 0
	err = s.do(ctx, "import", func(ctx context.Context) error {
		var ops []clientv3.Op
		size := 0
		flush := func() error {
			if len(ops) == 0 {
				return nil
			}
			if err := s.write(ctx, "import", ops); err != nil {
				return err
			}
			written += len(ops)
			ops, size = ops[:0], 0
			return nil
		}
		for _, r := range recs {
			deadline, _ := importDeadline(r) // importable decoded it
			opts := []clientv3.OpOption{}
			if !deadline.IsZero() {
				width := historyBucket
				if strings.HasPrefix(r.Key, record.ObservedPrefix) {
					width = observedBucket
				}
				lease, err := s.lease(ctx, "import", deadline, width)
				if err != nil {
					return err
				}
				opts = append(opts, clientv3.WithLease(lease))
			}
			v := s.seal.sealValue(r.Key, r.Value)
			if len(ops) == maxTxnOps || size+len(v)+len(r.Key) > importMaxBytes {
				if err := flush(); err != nil {
					return err
				}
			}
			ops = append(ops, clientv3.OpPut(s.key(r.Key), string(v), opts...))
			size += len(v) + len(r.Key)
		}
		if err := flush(); err != nil {
			return err
		}
		return s.raiseGrantGen(ctx, grantGen)
	})
	return count, written, err
}

// raiseGrantGen sets the grant generation counter to gen when it is
// lower, by a compare-and-swap on its revision.
func (s *Store) raiseGrantGen(ctx context.Context, gen uint64) error {
	if gen == 0 {
		return nil
	}
	k := s.key(record.GrantGenKey)
	for attempt := 1; ; attempt++ {
		rctx, cancel := s.request(ctx)
		resp, err := s.cli.Get(rctx, k)
		cancel()
		if err != nil {
			return s.etcdError("import: grant generation", err)
		}
		var cur kv
		if len(resp.Kvs) == 1 {
			cur = kv{value: resp.Kvs[0].Value, mod: resp.Kvs[0].ModRevision}
		}
		have, err := s.parseGen(cur)
		if err != nil {
			return err
		}
		if have >= gen {
			return nil
		}
		rctx, cancel = s.request(ctx)
		tr, err := s.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", cur.mod)).
			Then(clientv3.OpPut(k, strconv.FormatUint(gen, 10))).
			Commit()
		cancel()
		if err != nil {
			return s.etcdError("import: grant generation", err)
		}
		if tr.Succeeded {
			return nil
		}
		if attempt == maxAttempts {
			return fmt.Errorf("links: import: grant generation: still racing after %d attempts", attempt)
		}
	}
}

// ImportCounts counts recs by kind as Import at now would write them,
// without a store: for a dry run.
func ImportCounts(recs []Record, now time.Time) (ImportCount, error) {
	_, c, err := importable(recs, now)
	return c, err
}

// Exists reports whether etcd holds a links store under keys (its key
// check, which the first Open writes), without writing anything.
func Exists(ctx context.Context, cli *clientv3.Client, keys partition.Keys) (bool, error) {
	resp, err := cli.Get(ctx, keys.Links()+keyCheckKey, clientv3.WithCountOnly())
	if err != nil {
		return false, fmt.Errorf("links: etcd: %w", err)
	}
	return resp.Count > 0, nil
}
