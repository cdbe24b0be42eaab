package codec

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"

	"github.com/pinbot/pinbot/persistence"
)

// Format bytes of the values; see the package documentation.
const (
	formatEventV1     byte = 0x11
	formatSnapshotV1  byte = 0x21
	formatSnapshotV2  byte = 0x22 // V1 plus HoldUntil; used only when it is not zero
	formatSnapshotV3  byte = 0x23 // V1, HoldUntil and Lapsed; used only when Lapsed is not empty
	formatSnapshotV4  byte = 0x24 // V3's fields and Rebuilt; used only when Rebuilt is not zero
	formatHighWaterV1 byte = 0x31
	formatWALV1       byte = 0x41
	formatAnchorV1    byte = 0x51
	formatJobV1       byte = 0x61
	formatRulesV1     byte = 0x71
	formatRulesV2     byte = 0x72 // V1 with each rule's From; used only when one is not zero
	formatLogV1       byte = 0x81

	crcLen = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// corruptError describes a stored value that cannot be decoded. It wraps
// persistence.ErrCorrupt; callers add the account and the kind of value
// to the message.
type corruptError struct{ reason string }

func (e *corruptError) Error() string { return "corrupt state: " + e.reason }

func (e *corruptError) Unwrap() error { return persistence.ErrCorrupt }

// Corrupt returns the error the decoders return for unreadable stored
// state, "corrupt state: " and reason, wrapping persistence.ErrCorrupt.
// Stores use it for what they find wrong around the values (a malformed
// key, a record stored under another record's key).
func Corrupt(reason string) error { return &corruptError{reason: reason} }

// appendChecksum appends the CRC-32C of b[start:] to b.
func appendChecksum(b []byte, start int) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// checkFrame verifies b's format byte and checksum and returns its body.
func checkFrame(b []byte, format byte) ([]byte, error) {
	if len(b) < 1+crcLen {
		return nil, Corrupt("value too short (" + strconv.Itoa(len(b)) + " bytes)")
	}
	if b[0] != format {
		return nil, Corrupt("unknown format byte 0x" + strconv.FormatUint(uint64(b[0]), 16) +
			" (want 0x" + strconv.FormatUint(uint64(format), 16) + ")")
	}
	n := len(b) - crcLen
	if crc32.Checksum(b[:n], castagnoli) != binary.LittleEndian.Uint32(b[n:]) {
		return nil, Corrupt("checksum mismatch")
	}
	return b[1:n], nil
}

// decoder reads varints from a value body. The first failure sticks: later
// reads return zero and err reports it.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = Corrupt("bad " + what)
	}
	d.b = nil
}

func (d *decoder) uvarint(what string) uint64 {
	v, n := binary.Uvarint(d.b)
	// Reject padded encodings (a final 0x00 byte after a continuation), so
	// that every value has exactly one encoding.
	if n <= 0 || n > 1 && d.b[n-1] == 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint(what string) int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 || n > 1 && d.b[n-1] == 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) u8(what string) byte {
	if len(d.b) == 0 {
		d.fail(what)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// count reads a length prefix and checks that the rest of the body can hold
// that many elements of at least minLen bytes each, so a corrupt length
// never causes a large allocation.
func (d *decoder) count(what string, minLen int) int {
	n := d.uvarint(what)
	if d.err == nil && n > uint64(len(d.b)/minLen) {
		d.fail(what)
		return 0
	}
	return int(n)
}

func (d *decoder) finish() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = Corrupt(strconv.Itoa(len(d.b)) + " trailing bytes")
	}
	return d.err
}
