// Package partition divides accounts among the members of a pinbot
// cluster and names the etcd keys they share. It is the one definition
// that internal/cluster (who owns what), persistence/etcdstore (where an
// account's state lives) and the links store agree on; changing Of, or
// a key below, strands the state of every running cluster.
package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// DefaultCount is the number of partitions of a new cluster. The count is
// fixed for a cluster's lifetime: the first member stores it, and the
// others refuse to start with another.
const DefaultCount = 256

// MaxCount bounds the partition count a cluster may be created with.
const MaxCount = 65536

// ID is a partition number, 0 to the cluster's count minus one.
type ID uint32

// Of returns the partition of account among count partitions: FNV-1a 64
// of its bytes, modulo count. count must be between 1 and MaxCount.
func Of(account string, count int) ID {
	h := fnv.New64a()
	h.Write([]byte(account))
	return ID(h.Sum64() % uint64(count))
}

// Fence is the fencing token of one partition's writes: the etcd revision
// at which its owner key was created by the member that holds it. A store
// applies a write only while the owner key still has that create
// revision, so a member that lost the partition (its lease expired, the
// key was deleted, and perhaps created again by another member, or by
// itself later) cannot write with a token of its earlier tenure.
type Fence struct {
	Partition ID
	Revision  int64 // > 0
}

// FenceLen is the length of an encoded Fence.
const FenceLen = 12

// ErrBadFence is wrapped by the error of decoding a malformed fence.
var ErrBadFence = errors.New("partition: malformed fence")

// Encode returns f as the opaque token persistence.AccountWrite.Fence
// carries: the partition (4 bytes) and revision (8), big-endian.
func (f Fence) Encode() []byte {
	b := make([]byte, FenceLen)
	binary.BigEndian.PutUint32(b, uint32(f.Partition))
	binary.BigEndian.PutUint64(b[4:], uint64(f.Revision))
	return b
}

// DecodeFence parses a token made by Fence.Encode.
func DecodeFence(b []byte) (Fence, error) {
	if len(b) != FenceLen {
		return Fence{}, fmt.Errorf("%w: %d bytes, want %d", ErrBadFence, len(b), FenceLen)
	}
	f := Fence{Partition: ID(binary.BigEndian.Uint32(b)), Revision: int64(binary.BigEndian.Uint64(b[4:]))}
	if f.Revision <= 0 {
		return Fence{}, fmt.Errorf("%w: revision %d", ErrBadFence, f.Revision)
	}
	return f, nil
}

// Keys names the etcd keys of one cluster, all under Prefix (which ends
// with "/", for example "/pinbot/"). Every key of an account's state is
// under State(p) of its partition p, so that a partition's state is one
// range.
type Keys struct {
	Prefix string
}

// NewKeys returns the keys under prefix, adding the final "/" if missing.
func NewKeys(prefix string) Keys {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return Keys{Prefix: prefix}
}

func pad(p ID) string {
	s := strconv.FormatUint(uint64(p), 10)
	return strings.Repeat("0", 5-len(s)) + s
}

// Settings is the key of the cluster's settings (partition count, limit,
// window, lease, shards, key check), written once by the first member.
func (k Keys) Settings() string { return k.Prefix + "settings" }

// Members is the prefix of the member keys.
func (k Keys) Members() string { return k.Prefix + "members/" }

// Member is the key of member id, held under the member's lease.
func (k Keys) Member(id string) string { return k.Members() + id }

// Owners is the prefix of the partitions' owner keys.
func (k Keys) Owners() string { return k.Prefix + "owners/" }

// Owner is the key of partition p's owner: its value is the owning
// member's id, it is held under that member's lease, and its create
// revision is the partition's Fence.
func (k Keys) Owner(p ID) string { return k.Owners() + pad(p) }

// ShardOwners is the prefix of the gateway shards' owner keys, below
// Owners: a reader of the partitions' owner keys skips it.
func (k Keys) ShardOwners() string { return k.Owners() + "shards/" }

// ShardOwner is the key of gateway shard n's owner, held as a
// partition's owner key is.
func (k Keys) ShardOwner(n int) string { return k.ShardOwners() + pad(ID(n)) }

// Gateway is the prefix of the gateway's keys (the shard count Discord
// recommended, the shards' sessions kept across a handover, the
// identify buckets), outside the member and owner keys a member
// watches.
func (k Keys) Gateway() string { return k.Prefix + "gateway/" }

// ShardCount is the key of the shard count the cluster stored when its
// settings leave it to Discord.
func (k Keys) ShardCount() string { return k.Gateway() + "shards" }

// States is the prefix of every partition's state.
func (k Keys) States() string { return k.Prefix + "state/" }

// State is the prefix of partition p's state (accounts, jobs, high-water
// mark), for persistence/etcdstore to lay out below.
func (k Keys) State(p ID) string { return k.States() + pad(p) + "/" }

// Links is the prefix of the links store's keys (users, tokens, states).
func (k Keys) Links() string { return k.Prefix + "links/" }

// Global is the prefix of state that belongs to no partition (the
// engine's rules, the members' clock anchors).
func (k Keys) Global() string { return k.Prefix + "global/" }
