package cluster

import (
	"encoding/binary"
	"hash/fnv"

	"github.com/pinbot/pinbot/internal/partition"
)

// desired returns the member that should own partition p among the live
// members: the one of highest weight (rendezvous hashing), ties to the
// greater id. A member joining or leaving moves only the partitions it
// wins or held. "" when there is no member. Every member of a cluster must
// compute the same: weight is part of the protocol.
func desired(members []string, p partition.ID) string {
	var best string
	var bestW uint64
	for _, id := range members {
		w := weight(id, p)
		if best == "" || w > bestW || (w == bestW && id > best) {
			best, bestW = id, w
		}
	}
	return best
}

// weight is FNV-1a 64 of the member id and the partition (4 bytes,
// big-endian), through splitmix64's finalizer: FNV's last bytes barely
// reach its high bits, and the comparison is decided there.
func weight(id string, p partition.ID) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(p))
	h.Write(b[:])
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
