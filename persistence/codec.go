package persistence

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"
)

// Stored values and keys.
//
// Every value starts with a format byte and ends with a CRC-32 (Castagnoli)
// of everything before it, little-endian:
//
//	value = format, body..., crc32c(format, body...) [4 bytes]
//
// The high nibble of the format byte names the kind of value and the low
// nibble its encoding version, so a value stored under the wrong kind of key
// is rejected as corrupt rather than misread. Bodies are varints
// (encoding/binary): unsigned fields as uvarints, times and deltas between
// times as zigzag varints, so that any Go value of the types round-trips
// exactly, including out-of-order or negative times. Decoders accept only
// minimal varints and no trailing bytes, so every value has exactly one
// encoding.
//
// Event body (format 0x11), used by the test-only MemStore; a BadgerStore
// stores events in WAL records (see wal.go) with the same fields:
//
//	Seq uvarint, Kind byte, ID uvarint, Count uvarint,
//	At varint, Deadline-At varint
//
// A typical reservation event is about 20 bytes.
//
// Snapshot body (format 0x21):
//
//	Seq uvarint, NextID uvarint,
//	len(Committed) uvarint, Committed[0] varint, Committed[i]-Committed[i-1] varint...,
//	len(Pending) uvarint, then for each pending reservation p:
//	  p.ID-prevID varint, p.ReservedAt-prevAt varint, p.Deadline-p.ReservedAt varint
//
// where prevID starts at zero and prevAt at the last committed time (zero
// if none), and both then follow the previous pending reservation.
//
// Committed times are ascending and at most 12 hours apart, so each delta
// takes 1 to 4 bytes: a snapshot of 100 pins spaced minutes apart takes
// about 300 bytes instead of the 800 that fixed-width times would need.
//
// Snapshot body (format 0x22): the V1 body, then HoldUntil as a varint,
// never zero (a snapshot without a hold is always written as V1, so each
// snapshot has one encoding).
//
// Snapshot body (format 0x23): the V1 body, then HoldUntil as a varint
// (zero when there is no hold), len(Lapsed) as a uvarint, never zero, and
// for each lapsed reservation l: l.ID-prevID varint, l.Deadline-prevAt
// varint, where prevID starts at zero and prevAt at the last committed
// time (zero if none), and both then follow the previous one. A snapshot
// without lapsed reservations is written as V1 or V2.
//
// High-water body (format 0x31): the mark as a zigzag varint.
//
// Clock anchor body (format 0x41): len(BootID) uvarint, BootID bytes,
// Uptime varint, Engine varint.
//
// Differences of int64 values are computed with wrapping arithmetic, which
// the decoder undoes with the same wrapping, so extreme values round-trip.
//
// Keys:
//
//	snapshot:   "s" + account
//	WAL record: "w" + record seq (8 bytes, big-endian)
//	high-water: "m/hw"
//	clock anchor: "m/clock"

const (
	formatEventV1     byte = 0x11
	formatSnapshotV1  byte = 0x21
	formatSnapshotV2  byte = 0x22 // V1 plus HoldUntil; used only when it is not zero
	formatSnapshotV3  byte = 0x23 // V1, HoldUntil and Lapsed; used only when Lapsed is not empty
	formatHighWaterV1 byte = 0x31
	formatAnchorV1    byte = 0x41

	crcLen = 4

	// maxEventLen bounds an encoded Event: format and kind bytes, three
	// uvarints and two varints of at most binary.MaxVarintLen64 bytes each,
	// and the checksum.
	maxEventLen = 2 + 5*binary.MaxVarintLen64 + crcLen
)

const (
	snapshotPrefix = 's'
	seqLen         = 8
)

// highWaterKey is the key of the stored high-water mark.
var highWaterKey = []byte("m/hw")

// anchorKey is the key of the stored clock anchor.
var anchorKey = []byte("m/clock")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// corruptError describes a stored value that cannot be decoded. It wraps
// ErrCorrupt; callers add the account and the kind of value to the message.
type corruptError struct{ reason string }

func (e *corruptError) Error() string { return "corrupt state: " + e.reason }

func (e *corruptError) Unwrap() error { return ErrCorrupt }

func corrupt(reason string) error { return &corruptError{reason: reason} }

// appendChecksum appends the CRC-32C of b[start:] to b.
func appendChecksum(b []byte, start int) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// checkFrame verifies b's format byte and checksum and returns its body.
func checkFrame(b []byte, format byte) ([]byte, error) {
	if len(b) < 1+crcLen {
		return nil, corrupt("value too short (" + strconv.Itoa(len(b)) + " bytes)")
	}
	if b[0] != format {
		return nil, corrupt("unknown format byte 0x" + strconv.FormatUint(uint64(b[0]), 16) +
			" (want 0x" + strconv.FormatUint(uint64(format), 16) + ")")
	}
	n := len(b) - crcLen
	if crc32.Checksum(b[:n], castagnoli) != binary.LittleEndian.Uint32(b[n:]) {
		return nil, corrupt("checksum mismatch")
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
		d.err = corrupt("bad " + what)
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
		d.err = corrupt(strconv.Itoa(len(d.b)) + " trailing bytes")
	}
	return d.err
}

// appendEvent appends the encoding of e to dst and returns the extended
// slice. It allocates only when dst lacks capacity (maxEventLen bytes
// always suffice).
func appendEvent(dst []byte, e Event) []byte {
	start := len(dst)
	dst = append(dst, formatEventV1)
	dst = appendEventBody(dst, e)
	return appendChecksum(dst, start)
}

// decodeEvent decodes a value written by appendEvent. It does not retain b.
// Any malformed input yields an error wrapping ErrCorrupt.
func decodeEvent(b []byte) (Event, error) {
	body, err := checkFrame(b, formatEventV1)
	if err != nil {
		return Event{}, err
	}
	d := decoder{b: body}
	e := d.event()
	if err := d.finish(); err != nil {
		return Event{}, err
	}
	return e, nil
}

// snapshotLen returns an upper bound of the encoded size of s, in bytes.
func snapshotLen(s *Snapshot) int {
	return 1 + 5*binary.MaxVarintLen64 + len(s.Committed)*binary.MaxVarintLen64 +
		len(s.Pending)*3*binary.MaxVarintLen64 + len(s.Lapsed)*2*binary.MaxVarintLen64 + crcLen
}

// appendSnapshot appends the encoding of s to dst and returns the extended
// slice. It allocates only when dst lacks capacity (snapshotLen(s) bytes
// always suffice).
func appendSnapshot(dst []byte, s *Snapshot) []byte {
	start := len(dst)
	switch {
	case len(s.Lapsed) > 0:
		dst = append(dst, formatSnapshotV3)
	case s.HoldUntil != 0:
		dst = append(dst, formatSnapshotV2)
	default:
		dst = append(dst, formatSnapshotV1)
	}
	dst = binary.AppendUvarint(dst, s.Seq)
	dst = binary.AppendUvarint(dst, s.NextID)
	dst = binary.AppendUvarint(dst, uint64(len(s.Committed)))
	var prev int64
	for _, t := range s.Committed {
		dst = binary.AppendVarint(dst, t-prev)
		prev = t
	}
	dst = binary.AppendUvarint(dst, uint64(len(s.Pending)))
	var prevID uint64
	prevAt := prev
	for _, p := range s.Pending {
		dst = binary.AppendVarint(dst, int64(p.ID-prevID))
		dst = binary.AppendVarint(dst, p.ReservedAt-prevAt)
		dst = binary.AppendVarint(dst, p.Deadline-p.ReservedAt)
		prevID, prevAt = p.ID, p.ReservedAt
	}
	if s.HoldUntil != 0 || len(s.Lapsed) > 0 {
		dst = binary.AppendVarint(dst, s.HoldUntil)
	}
	if len(s.Lapsed) > 0 {
		dst = binary.AppendUvarint(dst, uint64(len(s.Lapsed)))
		prevID, prevAt := uint64(0), prev
		for _, l := range s.Lapsed {
			dst = binary.AppendVarint(dst, int64(l.ID-prevID))
			dst = binary.AppendVarint(dst, l.Deadline-prevAt)
			prevID, prevAt = l.ID, l.Deadline
		}
	}
	return appendChecksum(dst, start)
}

// decodeSnapshot decodes a value written by appendSnapshot. It does not
// retain b; empty lists decode as nil. Any malformed input yields an error
// wrapping ErrCorrupt.
func decodeSnapshot(b []byte) (Snapshot, error) {
	format := formatSnapshotV1
	if len(b) > 0 && (b[0] == formatSnapshotV2 || b[0] == formatSnapshotV3) {
		format = b[0]
	}
	body, err := checkFrame(b, format)
	if err != nil {
		return Snapshot{}, err
	}
	d := decoder{b: body}
	var s Snapshot
	s.Seq = d.uvarint("seq")
	s.NextID = d.uvarint("next id")
	var prevAt int64
	if n := d.count("committed count", 1); n > 0 {
		s.Committed = make([]int64, n)
		for i := range s.Committed {
			prevAt += d.varint("committed time")
			s.Committed[i] = prevAt
		}
	}
	lastCommitted := prevAt
	if n := d.count("pending count", 3); n > 0 {
		s.Pending = make([]Pending, n)
		var prevID uint64
		for i := range s.Pending {
			p := &s.Pending[i]
			p.ID = prevID + uint64(d.varint("pending id"))
			p.ReservedAt = prevAt + d.varint("pending reserved at")
			p.Deadline = p.ReservedAt + d.varint("pending deadline")
			prevID, prevAt = p.ID, p.ReservedAt
		}
	}
	switch format {
	case formatSnapshotV2:
		if s.HoldUntil = d.varint("hold until"); s.HoldUntil == 0 {
			d.fail("hold until")
		}
	case formatSnapshotV3:
		s.HoldUntil = d.varint("hold until")
		n := d.count("lapsed count", 2)
		if n == 0 {
			d.fail("lapsed count")
			break
		}
		s.Lapsed = make([]Lapsed, n)
		prevID, prevAt := uint64(0), lastCommitted
		for i := range s.Lapsed {
			l := &s.Lapsed[i]
			l.ID = prevID + uint64(d.varint("lapsed id"))
			l.Deadline = prevAt + d.varint("lapsed deadline")
			prevID, prevAt = l.ID, l.Deadline
		}
	}
	if err := d.finish(); err != nil {
		return Snapshot{}, err
	}
	return s, nil
}

// appendHighWater appends the encoding of the high-water mark hw to dst.
func appendHighWater(dst []byte, hw int64) []byte {
	start := len(dst)
	dst = append(dst, formatHighWaterV1)
	dst = binary.AppendVarint(dst, hw)
	return appendChecksum(dst, start)
}

// decodeHighWater decodes a value written by appendHighWater.
func decodeHighWater(b []byte) (int64, error) {
	body, err := checkFrame(b, formatHighWaterV1)
	if err != nil {
		return 0, err
	}
	d := decoder{b: body}
	hw := d.varint("high water")
	if err := d.finish(); err != nil {
		return 0, err
	}
	return hw, nil
}

// appendAnchor appends the encoding of the clock anchor a to dst.
func appendAnchor(dst []byte, a ClockAnchor) []byte {
	start := len(dst)
	dst = append(dst, formatAnchorV1)
	dst = binary.AppendUvarint(dst, uint64(len(a.BootID)))
	dst = append(dst, a.BootID...)
	dst = binary.AppendVarint(dst, a.Uptime)
	dst = binary.AppendVarint(dst, a.Engine)
	return appendChecksum(dst, start)
}

// decodeAnchor decodes a value written by appendAnchor.
func decodeAnchor(b []byte) (ClockAnchor, error) {
	body, err := checkFrame(b, formatAnchorV1)
	if err != nil {
		return ClockAnchor{}, err
	}
	d := decoder{b: body}
	var a ClockAnchor
	if n := d.count("boot id length", 1); n > 0 {
		a.BootID = string(d.b[:n])
		d.b = d.b[n:]
	}
	a.Uptime = d.varint("uptime")
	a.Engine = d.varint("engine time")
	if err := d.finish(); err != nil {
		return ClockAnchor{}, err
	}
	return a, nil
}

// appendSnapshotKey appends the snapshot key of account to dst.
func appendSnapshotKey(dst []byte, account string) []byte {
	dst = append(dst, snapshotPrefix)
	return append(dst, account...)
}

// validAccountBytes is ValidAccount for a byte slice.
func validAccountBytes(account []byte) bool {
	if len(account) == 0 || len(account) > MaxAccountLen {
		return false
	}
	for _, c := range account {
		if c == 0 {
			return false
		}
	}
	return true
}

// expiresAtSeconds converts an ExpiresAt in Unix milliseconds to the Unix
// second at which the stored keys expire, rounding up so that state never
// expires before the instant the engine asked for. Zero means no expiry.
func expiresAtSeconds(ms int64) uint64 {
	if ms <= 0 {
		return 0
	}
	s := ms / 1000
	if ms%1000 != 0 {
		s++
	}
	return uint64(s)
}
