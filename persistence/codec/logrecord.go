package codec

import "encoding/binary"

// Kinds of LogOp.
const (
	// LogSet stores Value under Key, expiring at ExpiresAt.
	LogSet byte = 1
	// LogDelete deletes Key.
	LogDelete byte = 2
	// LogEvents holds journal events: Value is a WAL record
	// (AppendWALRecord); Key is empty.
	LogEvents byte = 3
)

// LogOp is one change a journal log record makes.
type LogOp struct {
	Kind      byte
	Key       []byte
	Value     []byte
	ExpiresAt uint64 // Unix seconds, 0: never
}

// AppendLogHeader appends to dst the start of a journal log record, which
// AppendLogOp extends with its changes. The log checksums the record as a
// whole, so it carries no checksum of its own.
func AppendLogHeader(dst []byte) []byte { return append(dst, formatLogV1) }

// AppendLogOp appends one change to a log record begun by AppendLogHeader.
func AppendLogOp(dst []byte, kind byte, key, value []byte, expiresAt uint64) []byte {
	dst = append(dst, kind)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	dst = binary.AppendUvarint(dst, uint64(len(value)))
	dst = append(dst, value...)
	return binary.AppendUvarint(dst, expiresAt)
}

// DecodeLogRecord decodes a journal log record into ops holding copies
// of their keys and values. Malformed input yields an error wrapping
// persistence.ErrCorrupt.
func DecodeLogRecord(b []byte) ([]LogOp, error) {
	if len(b) == 0 || b[0] != formatLogV1 {
		return nil, Corrupt("not a log record")
	}
	d := decoder{b: b[1:]}
	var ops []LogOp
	for d.err == nil && len(d.b) > 0 {
		op := LogOp{Kind: d.u8("op kind")}
		if op.Kind < LogSet || op.Kind > LogEvents {
			d.fail("op kind")
			break
		}
		op.Key = d.bytes("key")
		op.Value = d.bytes("value")
		op.ExpiresAt = d.uvarint("expiry")
		ops = append(ops, op)
	}
	if err := d.finish(); err != nil {
		return nil, err
	}
	return ops, nil
}
