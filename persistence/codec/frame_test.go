package codec

import (
	"bytes"
	"errors"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

// Fixed engine instants (Unix ms) used as event times.
const (
	t0 = int64(1_700_000_000_000)
	t1 = t0 + 60_000
	t2 = t0 + 120_000
	t3 = t0 + 180_000
)

// TestDecodeDetectsCorruption flips every bit and truncates at every length
// of valid encodings: each must fail with ErrCorrupt, never panic.
func TestDecodeDetectsCorruption(t *testing.T) {
	values := []struct {
		name   string
		enc    []byte
		decode func([]byte) error
	}{
		{"event", AppendEvent(nil, codecEvents[1].ev), func(b []byte) error { _, err := DecodeEvent(b); return err }},
		{"snapshot", AppendSnapshot(nil, &codecSnapshots[1].s), func(b []byte) error { _, err := DecodeSnapshot(b); return err }},
		{"high water", AppendHighWater(nil, t0), func(b []byte) error { _, err := DecodeHighWater(b); return err }},
	}
	for _, v := range values {
		if err := v.decode(v.enc); err != nil {
			t.Fatalf("%s: valid encoding rejected: %v", v.name, err)
		}
		for i := range len(v.enc) * 8 {
			b := bytes.Clone(v.enc)
			b[i/8] ^= 1 << (i % 8)
			if err := v.decode(b); !errors.Is(err, persistence.ErrCorrupt) {
				t.Errorf("%s with bit %d flipped: %v, want ErrCorrupt", v.name, i, err)
			}
		}
		for n := range len(v.enc) {
			if err := v.decode(v.enc[:n]); !errors.Is(err, persistence.ErrCorrupt) {
				t.Errorf("%s truncated to %d bytes: %v, want ErrCorrupt", v.name, n, err)
			}
		}
		if err := v.decode(append(bytes.Clone(v.enc), 0)); !errors.Is(err, persistence.ErrCorrupt) {
			t.Errorf("%s with a byte appended: %v, want ErrCorrupt", v.name, err)
		}
	}
}

// TestDecodeStructure checks the errors behind a valid checksum: values
// that were written wrongly rather than damaged on disk.
func TestDecodeStructure(t *testing.T) {
	frame := func(body ...byte) []byte { return appendChecksum(body, 0) }
	tests := []struct {
		name   string
		b      []byte
		decode func([]byte) error
	}{
		{"event as snapshot", AppendEvent(nil, codecEvents[1].ev), func(b []byte) error { _, err := DecodeSnapshot(b); return err }},
		{"snapshot as event", AppendSnapshot(nil, &codecSnapshots[1].s), func(b []byte) error { _, err := DecodeEvent(b); return err }},
		{"future event version", frame(0x12, 1, 1, 1, 1, 0, 0), func(b []byte) error { _, err := DecodeEvent(b); return err }},
		{"event count over 32 bits", frame(0x11, 1, 1, 1, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0), func(b []byte) error { _, err := DecodeEvent(b); return err }},
		{"huge committed count", frame(0x21, 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0), func(b []byte) error { _, err := DecodeSnapshot(b); return err }},
		{"huge pending count", frame(0x21, 1, 1, 0, 3, 0, 0, 0, 0), func(b []byte) error { _, err := DecodeSnapshot(b); return err }},
		{"overlong varint", frame(0x31, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), func(b []byte) error { _, err := DecodeHighWater(b); return err }},
	}
	for _, tt := range tests {
		if err := tt.decode(tt.b); !errors.Is(err, persistence.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", tt.name, err)
		}
	}
}
