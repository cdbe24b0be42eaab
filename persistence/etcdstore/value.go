package etcdstore

import (
	"encoding/binary"

	"github.com/pinbot/pinbot/persistence/codec"
)

// Format bytes of the store's own framing; see the package documentation.
const (
	formatExpiringV1  byte = 0x01 // expiry second, then a codec value
	formatHighWaterV1 byte = 0x01 // the mark, ordered as bytes
)

// appendHeader appends to dst the start of a value that expires at
// second exp (0: never); the codec value it holds follows.
func appendHeader(dst []byte, exp uint64) []byte {
	dst = append(dst, formatExpiringV1)
	return binary.AppendUvarint(dst, exp)
}

// unwrap splits a value begun by appendHeader into its expiry second and
// the codec value it holds.
func unwrap(v []byte) (exp uint64, body []byte, err error) {
	if len(v) == 0 || v[0] != formatExpiringV1 {
		return 0, nil, codec.Corrupt("unknown value format")
	}
	exp, n := binary.Uvarint(v[1:])
	if n <= 0 || (n > 1 && v[n] == 0) {
		return 0, nil, codec.Corrupt("malformed expiry")
	}
	return exp, v[1+n:], nil
}

// expired reports whether a key expiring at second exp (0: never) has
// expired at now (Unix ms): once now reaches that second.
func expired(exp uint64, now int64) bool {
	return exp != 0 && now >= 0 && exp <= uint64(now/1000)
}

// live reports whether v, a value begun by appendHeader, has not expired at now.
// A value it cannot read counts as live, so that a scan lists its
// account and loading that account reports the damage.
func live(v []byte, now int64) bool {
	exp, _, err := unwrap(v)
	return err != nil || !expired(exp, now)
}

// encodeHighWater encodes hw so that byte order is numeric order (the
// store keeps the largest mark with an etcd comparison of values).
func encodeHighWater(hw int64) string {
	b := make([]byte, 9)
	b[0] = formatHighWaterV1
	binary.BigEndian.PutUint64(b[1:], uint64(hw)^(1<<63))
	return string(b)
}

func decodeHighWater(v []byte) (int64, error) {
	if len(v) != 9 || v[0] != formatHighWaterV1 {
		return 0, codec.Corrupt("malformed high-water mark")
	}
	return int64(binary.BigEndian.Uint64(v[1:]) ^ (1 << 63)), nil
}
