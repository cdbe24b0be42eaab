package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

// FuzzDecode feeds arbitrary bytes to every decoder, which must not panic,
// and round-trips the event and snapshot the bytes describe.
func FuzzDecode(f *testing.F) {
	// Seeds: valid values, and their bodies without the checksum, which
	// the target completes.
	add := func(enc []byte) {
		f.Add(enc)
		f.Add(enc[:len(enc)-crcLen])
	}
	for _, tt := range codecEvents {
		add(AppendEvent(nil, tt.ev))
	}
	for _, tt := range codecSnapshots {
		add(AppendSnapshot(nil, &tt.s))
	}
	add(AppendHighWater(nil, t0))
	add(AppendAnchor(nil, persistence.ClockAnchor{BootID: "boot", Uptime: 5, Engine: t0}))
	for _, r := range codecRules {
		add(AppendRules(nil, r))
	}
	for _, tt := range codecWALRecords {
		add(AppendWALRecord(nil, tt.seq, tt.entries))
	}
	for _, j := range codecJobs {
		add(AppendJob(nil, &j))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		// Arbitrary bytes, and the same bytes with a valid checksum appended
		// so that the parsing behind the checksum is reached: decoded or
		// rejected as corrupt, never a panic, and whatever decodes
		// re-encodes to the same bytes.
		for _, in := range [][]byte{b, appendChecksum(bytes.Clone(b), 0)} {
			if ev, err := DecodeEvent(in); err == nil {
				if enc := AppendEvent(nil, ev); !bytes.Equal(enc, in) {
					t.Errorf("event %+v re-encodes to %x, decoded from %x", ev, enc, in)
				}
			} else if !errors.Is(err, persistence.ErrCorrupt) {
				t.Errorf("decodeEvent: %v, want ErrCorrupt", err)
			}
			if s, err := DecodeSnapshot(in); err == nil {
				if enc := AppendSnapshot(nil, &s); !bytes.Equal(enc, in) {
					t.Errorf("snapshot %+v re-encodes to %x, decoded from %x", s, enc, in)
				}
			} else if !errors.Is(err, persistence.ErrCorrupt) {
				t.Errorf("decodeSnapshot: %v, want ErrCorrupt", err)
			}
			if seq, entries, err := DecodeWALRecord(in); err == nil {
				if enc := AppendWALRecord(nil, seq, entries); !bytes.Equal(enc, in) {
					t.Errorf("WAL record %d %+v re-encodes to %x, decoded from %x", seq, entries, enc, in)
				}
			} else if !errors.Is(err, persistence.ErrCorrupt) {
				t.Errorf("decodeWALRecord: %v, want ErrCorrupt", err)
			}
			if j, err := DecodeJob(in); err == nil {
				if enc := AppendJob(nil, &j); !bytes.Equal(enc, in) {
					t.Errorf("job %+v re-encodes to %x, decoded from %x", j, enc, in)
				}
			} else if !errors.Is(err, persistence.ErrCorrupt) {
				t.Errorf("DecodeJob: %v, want ErrCorrupt", err)
			}
			if a, err := DecodeAnchor(in); err == nil {
				if enc := AppendAnchor(nil, a); !bytes.Equal(enc, in) {
					t.Errorf("clock anchor %+v re-encodes to %x, decoded from %x", a, enc, in)
				}
			} else if !errors.Is(err, persistence.ErrCorrupt) {
				t.Errorf("decodeAnchor: %v, want ErrCorrupt", err)
			}
			if r, err := DecodeRules(in); err == nil {
				if enc := AppendRules(nil, r); !bytes.Equal(enc, in) {
					t.Errorf("rules %+v re-encode to %x, decoded from %x", r, enc, in)
				}
			} else if !errors.Is(err, persistence.ErrCorrupt) {
				t.Errorf("decodeRules: %v, want ErrCorrupt", err)
			}
			if hw, err := DecodeHighWater(in); err == nil {
				if enc := AppendHighWater(nil, hw); !bytes.Equal(enc, in) {
					t.Errorf("high water %d re-encodes to %x, decoded from %x", hw, enc, in)
				}
			} else if !errors.Is(err, persistence.ErrCorrupt) {
				t.Errorf("decodeHighWater: %v, want ErrCorrupt", err)
			}
		}

		// The same bytes read as field values: valid values round-trip.
		ev := fuzzEvent(b)
		if got, err := DecodeEvent(AppendEvent(nil, ev)); err != nil || got != ev {
			t.Errorf("event %+v round-trips to %+v, %v", ev, got, err)
		}
		s := fuzzSnapshot(b)
		if got, err := DecodeSnapshot(AppendSnapshot(nil, &s)); err != nil || !equalSnapshot(got, s) {
			t.Errorf("snapshot %+v round-trips to %+v, %v", s, got, err)
		}
	})
}

// fuzzReader hands out fixed-width values from fuzz input, zeros once it
// runs out.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) u64() uint64 {
	var buf [8]byte
	n := copy(buf[:], r.b)
	r.b = r.b[n:]
	return binary.LittleEndian.Uint64(buf[:])
}

func fuzzEvent(b []byte) persistence.Event {
	r := fuzzReader{b: b}
	return persistence.Event{Seq: r.u64(), Kind: persistence.EventKind(r.u64()), ID: r.u64(), Count: uint32(r.u64()),
		At: int64(r.u64()), Deadline: int64(r.u64())}
}

func fuzzSnapshot(b []byte) persistence.Snapshot {
	r := fuzzReader{b: b}
	s := persistence.Snapshot{Seq: r.u64(), NextID: r.u64()}
	for range r.u64() % 8 {
		s.Committed = append(s.Committed, int64(r.u64()))
	}
	for range r.u64() % 4 {
		s.Pending = append(s.Pending, persistence.Pending{ID: r.u64(), ReservedAt: int64(r.u64()), Deadline: int64(r.u64())})
	}
	s.HoldUntil = int64(r.u64())
	for range r.u64() % 4 {
		s.Lapsed = append(s.Lapsed, persistence.Lapsed{ID: r.u64(), Deadline: int64(r.u64())})
	}
	s.Rebuilt = int64(r.u64())
	return s
}
