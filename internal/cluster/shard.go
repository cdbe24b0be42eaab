package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pinbot/pinbot/internal/partition"
)

// MaxShards bounds ShardConfig.Count.
const MaxShards = 1 << 16

// ShardConfig hands a member the gateway's shards as a second kind of
// resource beside the partitions: each shard has an owner key under the
// owning member's lease, acquired, served until the serving deadline,
// handed over and lost by the same rules as a partition's (see the
// package documentation). Its desired owner is the live member of highest
// rendezvous weight for it among the members that run shards with the
// same count.
type ShardConfig struct {
	// Count is the cluster's gateway shard count; 0: this member runs no
	// shards, and the callbacks may be nil.
	Count int
	// Acquired is called once the member created shard's owner key, before
	// it serves the shard: the shard's connection may be opened from here
	// on. An error gives the shard back, as Config.Acquired's does. It
	// should not wait for the connection: the member acquires and hands
	// over Config.Parallel resources at a time.
	Acquired func(shard int) error
	// Lost is called when the member stopped holding shard without a
	// graceful handover: its connection must be closed at once and its
	// events dropped. It must not block.
	Lost func(shard int)
	// Release is the graceful handover of shard, called while the member
	// still holds its key: it closes the connection so that its session
	// stays resumable and stores the session for the next owner. ctx ends
	// when the serving deadline passes or Close's context ends. An error
	// is followed by Lost(shard).
	Release func(ctx context.Context, shard int) error
}

func (c ShardConfig) validate() error {
	switch {
	case c.Count < 0 || c.Count > MaxShards:
		return fmt.Errorf("cluster: Config.Shards.Count %d out of range [0, %d]", c.Count, MaxShards)
	case c.Count == 0:
		return nil
	case c.Acquired == nil:
		return errors.New("cluster: Config.Shards.Acquired is nil")
	case c.Lost == nil:
		return errors.New("cluster: Config.Shards.Lost is nil")
	case c.Release == nil:
		return errors.New("cluster: Config.Shards.Release is nil")
	}
	return nil
}

// ShardObserver is what an Observer also implements to learn of the
// shards (optional).
type ShardObserver interface {
	// ShardAcquired reports that the member began holding shard.
	ShardAcquired(shard int)
	// ShardLost reports that the member stopped holding shard without a
	// handover.
	ShardLost(shard int)
	// ShardHandedOver reports that the member released shard and deleted
	// its key.
	ShardHandedOver(shard int)
}

// resKind is what a resource is.
type resKind uint8

const (
	partitionRes resKind = iota
	shardRes
)

// res is one resource a member may hold an owner key for.
type res struct {
	kind resKind
	n    uint32
}

func partitionOf(p partition.ID) res { return res{kind: partitionRes, n: uint32(p)} }
func shardOf(s int) res              { return res{kind: shardRes, n: uint32(s)} }

// field names the resource's kind in the log.
func (r res) field() string {
	if r.kind == shardRes {
		return "shard"
	}
	return "partition"
}

// ownerKey returns r's owner key.
func (m *Member) ownerKey(r res) string {
	if r.kind == shardRes {
		return m.keys.ShardOwner(int(r.n))
	}
	return m.keys.Owner(partition.ID(r.n))
}

// parseOwnerKey returns the resource of an owner key, without the owners'
// prefix; false for a key of no resource of this member's counts.
func (m *Member) parseOwnerKey(rest string) (res, bool) {
	kind, count := partitionRes, m.cfg.Partitions
	// A member that knows no shards ignores their keys, as it ignores
	// any owner key it cannot parse.
	if s, ok := strings.CutPrefix(m.keys.Owners()+rest, m.keys.ShardOwners()); ok {
		kind, count, rest = shardRes, m.cfg.Shards.Count, s
	}
	n, err := strconv.ParseUint(rest, 10, 32)
	if err != nil || n >= uint64(count) {
		return res{}, false
	}
	return res{kind: kind, n: uint32(n)}, true
}

// desiredShard returns the member that should hold shard s among members:
// rendezvous as for partitions, with a weight of its own so that a
// partition's owner and the same-numbered shard's are independent.
func desiredShard(members []string, s int) string {
	var best string
	var bestW uint64
	for _, id := range members {
		// "/" is in no member id: no shard weight equals a partition's.
		w := weight(id+"/shard", partition.ID(s))
		if best == "" || w > bestW || (w == bestW && id > best) {
			best, bestW = id, w
		}
	}
	return best
}

// runsShards says whether a member runs this member's shard count.
func (m *Member) runsShards(info MemberInfo) bool {
	return m.cfg.Shards.Count > 0 && info.Shards == m.cfg.Shards.Count
}

// HeldShards returns the shards whose owner key this member holds, being
// acquired or handed over included, in order.
func (m *Member) HeldShards() []int {
	m.mu.Lock()
	var out []int
	for r := range m.held {
		if r.kind == shardRes {
			out = append(out, int(r.n))
		}
	}
	m.mu.Unlock()
	slices.Sort(out)
	return out
}

// ShardTenure returns the create revision of shard's owner key while
// this member holds it and is within its serving deadline, being
// acquired or handed over included: the fence of what the member stores
// for the shard (ShardSessions.Checkpoint), and the sign that it may
// still hand the shard's events on. It is cheap and does not block on
// etcd.
func (m *Member) ShardTenure(shard int) (int64, bool) {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.held[shardOf(shard)]
	if t == nil || m.lapsed || now >= m.deadline {
		return 0, false
	}
	return t.rev, true
}

// ShardOwners returns each shard's owner as this member last saw the
// owner keys, by shard; "" for a shard nobody holds.
func (m *Member) ShardOwners() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, m.cfg.Shards.Count)
	for i := range out {
		if o, ok := m.view.owners[shardOf(i)]; ok {
			out[i] = o.member
		}
	}
	return out
}
