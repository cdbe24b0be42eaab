package codec

import (
	"encoding/binary"

	"github.com/pinbot/pinbot/persistence"
)

// SnapshotLen returns an upper bound of the encoded size of s, in bytes.
func SnapshotLen(s *persistence.Snapshot) int {
	return 1 + 7*binary.MaxVarintLen64 + len(s.Committed)*binary.MaxVarintLen64 +
		len(s.Pending)*3*binary.MaxVarintLen64 + len(s.Lapsed)*2*binary.MaxVarintLen64 + crcLen
}

// AppendSnapshot appends the encoding of s to dst and returns the extended
// slice. It allocates only when dst lacks capacity (SnapshotLen(s) bytes
// always suffice).
func AppendSnapshot(dst []byte, s *persistence.Snapshot) []byte {
	start := len(dst)
	switch {
	case s.Rebuilt != 0:
		dst = append(dst, formatSnapshotV4)
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
	if s.HoldUntil != 0 || len(s.Lapsed) > 0 || s.Rebuilt != 0 {
		dst = binary.AppendVarint(dst, s.HoldUntil)
	}
	if len(s.Lapsed) > 0 || s.Rebuilt != 0 {
		dst = binary.AppendUvarint(dst, uint64(len(s.Lapsed)))
		prevID, prevAt := uint64(0), prev
		for _, l := range s.Lapsed {
			dst = binary.AppendVarint(dst, int64(l.ID-prevID))
			dst = binary.AppendVarint(dst, l.Deadline-prevAt)
			prevID, prevAt = l.ID, l.Deadline
		}
	}
	if s.Rebuilt != 0 {
		dst = binary.AppendVarint(dst, s.Rebuilt)
	}
	return appendChecksum(dst, start)
}

// DecodeSnapshot decodes a value written by AppendSnapshot; empty lists
// decode as nil. Any malformed input yields an error wrapping
// persistence.ErrCorrupt.
func DecodeSnapshot(b []byte) (persistence.Snapshot, error) {
	format := formatSnapshotV1
	if len(b) > 0 && (b[0] == formatSnapshotV2 || b[0] == formatSnapshotV3 || b[0] == formatSnapshotV4) {
		format = b[0]
	}
	body, err := checkFrame(b, format)
	if err != nil {
		return persistence.Snapshot{}, err
	}
	d := decoder{b: body}
	var s persistence.Snapshot
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
		s.Pending = make([]persistence.Pending, n)
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
	case formatSnapshotV3, formatSnapshotV4:
		s.HoldUntil = d.varint("hold until")
		n := d.count("lapsed count", 2)
		if n == 0 && format == formatSnapshotV3 {
			d.fail("lapsed count")
			break
		}
		if n > 0 {
			s.Lapsed = make([]persistence.Lapsed, n)
		}
		prevID, prevAt := uint64(0), lastCommitted
		for i := range s.Lapsed {
			l := &s.Lapsed[i]
			l.ID = prevID + uint64(d.varint("lapsed id"))
			l.Deadline = prevAt + d.varint("lapsed deadline")
			prevID, prevAt = l.ID, l.Deadline
		}
		if format == formatSnapshotV4 {
			if s.Rebuilt = d.varint("rebuilt"); s.Rebuilt == 0 {
				d.fail("rebuilt")
			}
		}
	}
	if err := d.finish(); err != nil {
		return persistence.Snapshot{}, err
	}
	return s, nil
}
