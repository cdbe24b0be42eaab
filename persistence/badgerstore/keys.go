package badgerstore

import "encoding/binary"

// Keys of the store's Badger database. Values are encoded by
// persistence/codec; each key holds one kind of value:
//
//	snapshot:     "s" + account
//	WAL record:   "w" + record seq (8 bytes, big-endian)
//	high-water:   "m/hw"
//	clock anchor: "m/clock"
//	job:          "j" + account + NUL + job ID (8 bytes, big-endian)
//	rules:        "m/rules"

const (
	snapshotPrefix = 's'
	walPrefix      = 'w'
	seqLen         = 8
	walKeyLen      = 1 + seqLen
)

// highWaterKey is the key of the stored high-water mark.
var highWaterKey = []byte("m/hw")

// anchorKey is the key of the stored clock anchor.
var anchorKey = []byte("m/clock")

// holdPrefix is a key prefix no stored key has, so that the memtable
// hold's iterator references no table file (see memtableHold).
var holdPrefix = []byte{0}

// appendSnapshotKey appends the snapshot key of account to dst.
func appendSnapshotKey(dst []byte, account string) []byte {
	dst = append(dst, snapshotPrefix)
	return append(dst, account...)
}

// appendWALKey appends the key of WAL record seq to dst.
func appendWALKey(dst []byte, seq uint64) []byte {
	dst = append(dst, walPrefix)
	return binary.BigEndian.AppendUint64(dst, seq)
}

// walKeySeq returns the record seq of a WAL key; ok is false if malformed.
func walKeySeq(key []byte) (uint64, bool) {
	if len(key) != walKeyLen || key[0] != walPrefix {
		return 0, false
	}
	return binary.BigEndian.Uint64(key[1:]), true
}
