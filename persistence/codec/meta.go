package codec

import (
	"encoding/binary"

	"github.com/pinbot/pinbot/persistence"
)

// AppendHighWater appends the encoding of the high-water mark hw to dst.
func AppendHighWater(dst []byte, hw int64) []byte {
	start := len(dst)
	dst = append(dst, formatHighWaterV1)
	dst = binary.AppendVarint(dst, hw)
	return appendChecksum(dst, start)
}

// DecodeHighWater decodes a value written by AppendHighWater. Any malformed
// input yields an error wrapping persistence.ErrCorrupt.
func DecodeHighWater(b []byte) (int64, error) {
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

// AppendAnchor appends the encoding of the clock anchor a to dst.
func AppendAnchor(dst []byte, a persistence.ClockAnchor) []byte {
	start := len(dst)
	dst = append(dst, formatAnchorV1)
	dst = binary.AppendUvarint(dst, uint64(len(a.BootID)))
	dst = append(dst, a.BootID...)
	dst = binary.AppendVarint(dst, a.Uptime)
	dst = binary.AppendVarint(dst, a.Engine)
	return appendChecksum(dst, start)
}

// DecodeAnchor decodes a value written by AppendAnchor. Any malformed input
// yields an error wrapping persistence.ErrCorrupt.
func DecodeAnchor(b []byte) (persistence.ClockAnchor, error) {
	body, err := checkFrame(b, formatAnchorV1)
	if err != nil {
		return persistence.ClockAnchor{}, err
	}
	d := decoder{b: body}
	var a persistence.ClockAnchor
	if n := d.count("boot id length", 1); n > 0 {
		a.BootID = string(d.b[:n])
		d.b = d.b[n:]
	}
	a.Uptime = d.varint("uptime")
	a.Engine = d.varint("engine time")
	if err := d.finish(); err != nil {
		return persistence.ClockAnchor{}, err
	}
	return a, nil
}
