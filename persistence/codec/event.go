package codec

import (
	"encoding/binary"
	"math"

	"github.com/pinbot/pinbot/persistence"
)

// MaxEventLen bounds an encoded Event: format and kind bytes, three
// uvarints and two varints of at most binary.MaxVarintLen64 bytes each,
// and the checksum.
const MaxEventLen = 2 + 5*binary.MaxVarintLen64 + crcLen

// AppendEvent appends the encoding of e to dst and returns the extended
// slice. It allocates only when dst lacks capacity (MaxEventLen bytes
// always suffice).
func AppendEvent(dst []byte, e persistence.Event) []byte {
	start := len(dst)
	dst = append(dst, formatEventV1)
	dst = appendEventBody(dst, e)
	return appendChecksum(dst, start)
}

// DecodeEvent decodes a value written by AppendEvent. Any malformed input
// yields an error wrapping persistence.ErrCorrupt.
func DecodeEvent(b []byte) (persistence.Event, error) {
	body, err := checkFrame(b, formatEventV1)
	if err != nil {
		return persistence.Event{}, err
	}
	d := decoder{b: body}
	e := d.event()
	if err := d.finish(); err != nil {
		return persistence.Event{}, err
	}
	return e, nil
}

func appendEventBody(dst []byte, e persistence.Event) []byte {
	dst = binary.AppendUvarint(dst, e.Seq)
	dst = append(dst, byte(e.Kind))
	dst = binary.AppendUvarint(dst, e.ID)
	dst = binary.AppendUvarint(dst, uint64(e.Count))
	dst = binary.AppendVarint(dst, e.At)
	return binary.AppendVarint(dst, e.Deadline-e.At)
}

func (d *decoder) event() persistence.Event {
	var e persistence.Event
	e.Seq = d.uvarint("seq")
	e.Kind = persistence.EventKind(d.u8("kind"))
	e.ID = d.uvarint("id")
	count := d.uvarint("count")
	if count > math.MaxUint32 {
		d.fail("count")
	}
	e.Count = uint32(count)
	e.At = d.varint("at")
	e.Deadline = e.At + d.varint("deadline")
	return e
}
