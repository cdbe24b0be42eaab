package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
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

func equalSnapshot(a, b persistence.Snapshot) bool {
	return a.Seq == b.Seq && a.NextID == b.NextID && a.HoldUntil == b.HoldUntil &&
		slices.Equal(a.Committed, b.Committed) && slices.Equal(a.Pending, b.Pending) && slices.Equal(a.Lapsed, b.Lapsed)
}

var codecEvents = []struct {
	name string
	ev   persistence.Event
}{
	{"zero", persistence.Event{}},
	{"reserve", persistence.Event{Seq: 1, Kind: persistence.EventReserve, ID: 1, Count: 3, At: t0, Deadline: t0 + 30_000}},
	{"commit", persistence.Event{Seq: 2, Kind: persistence.EventCommit, ID: 1, At: t1}},
	{"release", persistence.Event{Seq: 3, Kind: persistence.EventRelease, ID: 2}},
	{"unknown kind", persistence.Event{Seq: 4, Kind: 200, ID: 9}},
	{"deadline before at", persistence.Event{Seq: 5, Kind: persistence.EventReserve, At: t1, Deadline: t0}},
	{"extremes", persistence.Event{Seq: math.MaxUint64, Kind: 255, ID: math.MaxUint64, Count: math.MaxUint32,
		At: math.MinInt64, Deadline: math.MaxInt64}},
	{"extremes reversed", persistence.Event{At: math.MaxInt64, Deadline: math.MinInt64}},
}

func TestEventRoundTrip(t *testing.T) {
	for _, tt := range codecEvents {
		t.Run(tt.name, func(t *testing.T) {
			b := AppendEvent([]byte("prefix"), tt.ev)
			if !bytes.HasPrefix(b, []byte("prefix")) {
				t.Fatalf("AppendEvent overwrote dst: %q", b)
			}
			enc := b[len("prefix"):]
			if len(enc) > MaxEventLen {
				t.Errorf("encoded %d bytes, more than MaxEventLen %d", len(enc), MaxEventLen)
			}
			got, err := DecodeEvent(enc)
			if err != nil || got != tt.ev {
				t.Errorf("DecodeEvent(AppendEvent(%+v)) = %+v, %v", tt.ev, got, err)
			}
		})
	}
}

var codecSnapshots = []struct {
	name string
	s    persistence.Snapshot
}{
	{"zero", persistence.Snapshot{}},
	{"typical", persistence.Snapshot{Seq: 120, NextID: 57, Committed: []int64{t0, t1, t1, t3},
		Pending: []persistence.Pending{{ID: 55, ReservedAt: t2, Deadline: t2 + 30_000}, {ID: 56, ReservedAt: t3, Deadline: t3 + 30_000}}}},
	{"unordered", persistence.Snapshot{Committed: []int64{t3, t0, -1, math.MaxInt64, math.MinInt64},
		Pending: []persistence.Pending{{ID: math.MaxUint64, ReservedAt: math.MinInt64, Deadline: math.MaxInt64}, {ID: 0, ReservedAt: math.MaxInt64}}}},
	{"extremes", persistence.Snapshot{Seq: math.MaxUint64, NextID: math.MaxUint64}},
	{"held", persistence.Snapshot{Seq: 3, NextID: 9, Committed: []int64{t0}, HoldUntil: t3}},
	{"held negative", persistence.Snapshot{HoldUntil: math.MinInt64}},
	{"lapsed", persistence.Snapshot{Seq: 7, NextID: 60, Committed: []int64{t0, t1, t2}, Pending: []persistence.Pending{{ID: 59, ReservedAt: t3, Deadline: t3 + 30_000}},
		Lapsed: []persistence.Lapsed{{ID: 57, Deadline: t1}, {ID: 58, Deadline: t2}}}},
	{"lapsed and held", persistence.Snapshot{Committed: []int64{t0}, HoldUntil: t3, Lapsed: []persistence.Lapsed{{ID: 1, Deadline: t0}}}},
	{"lapsed extremes", persistence.Snapshot{Lapsed: []persistence.Lapsed{{ID: math.MaxUint64, Deadline: math.MinInt64}, {ID: 0, Deadline: math.MaxInt64}}}},
}

func TestAnchorRoundTrip(t *testing.T) {
	for _, a := range []persistence.ClockAnchor{
		{},
		{BootID: "0f6c1c1e-3d0a-4c55-a3b9-8f1f5f0d2e7a", Uptime: 123_456_789, Engine: t0},
		{BootID: "x", Uptime: math.MinInt64, Engine: math.MaxInt64},
	} {
		got, err := DecodeAnchor(AppendAnchor(nil, a))
		if err != nil || got != a {
			t.Errorf("DecodeAnchor(AppendAnchor(%+v)) = %+v, %v", a, got, err)
		}
	}
	if _, err := DecodeAnchor(AppendHighWater(nil, t0)); !errors.Is(err, persistence.ErrCorrupt) {
		t.Errorf("a high-water value read as an anchor: %v, want ErrCorrupt", err)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	for _, tt := range codecSnapshots {
		t.Run(tt.name, func(t *testing.T) {
			enc := AppendSnapshot(nil, &tt.s)
			if len(enc) > SnapshotLen(&tt.s) {
				t.Errorf("encoded %d bytes, more than SnapshotLen %d", len(enc), SnapshotLen(&tt.s))
			}
			got, err := DecodeSnapshot(enc)
			if err != nil || !equalSnapshot(got, tt.s) {
				t.Errorf("DecodeSnapshot(AppendSnapshot(%+v)) = %+v, %v", tt.s, got, err)
			}
		})
	}
}

// TestSnapshotSize checks that a full window of 100 pins is compact.
func TestSnapshotSize(t *testing.T) {
	tests := []struct {
		name    string
		spacing int64 // ms between pins
		max     int   // bytes
	}{
		{"pins a second apart", 1_000, 240},
		{"pins 7 minutes apart (the whole 12h window)", 7 * 60_000, 340},
		{"worst case: 2 hours between pins", 2 * 3_600_000, 440},
	}
	for _, tt := range tests {
		s := persistence.Snapshot{Seq: 5000, NextID: 4000}
		for i := range 100 {
			s.Committed = append(s.Committed, t0+int64(i)*tt.spacing)
		}
		for i := range 3 {
			at := t0 + 100*tt.spacing + int64(i)*1_000
			s.Pending = append(s.Pending, persistence.Pending{ID: 3997 + uint64(i), ReservedAt: at, Deadline: at + 30_000})
		}
		n := len(AppendSnapshot(nil, &s))
		t.Logf("%s: 100 pins + 3 pending = %d bytes", tt.name, n)
		if n > tt.max {
			t.Errorf("%s: %d bytes, want at most %d", tt.name, n, tt.max)
		}
	}
}

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
	for _, tt := range codecWALRecords {
		add(AppendWALRecord(nil, tt.seq, tt.entries))
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
			if a, err := DecodeAnchor(in); err == nil {
				if enc := AppendAnchor(nil, a); !bytes.Equal(enc, in) {
					t.Errorf("clock anchor %+v re-encodes to %x, decoded from %x", a, enc, in)
				}
			} else if !errors.Is(err, persistence.ErrCorrupt) {
				t.Errorf("decodeAnchor: %v, want ErrCorrupt", err)
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
	return s
}

func BenchmarkEncodeEvent(b *testing.B) {
	ev := persistence.Event{Seq: 1234, Kind: persistence.EventReserve, ID: 5678, Count: 1, At: t0, Deadline: t0 + 30_000}
	buf := make([]byte, 0, MaxEventLen)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendEvent(buf[:0], ev)
	}
	b.ReportMetric(float64(len(buf)), "bytes/event")
}

func BenchmarkDecodeSnapshot(b *testing.B) {
	s := persistence.Snapshot{Seq: 5000, NextID: 4000}
	for i := range 100 {
		s.Committed = append(s.Committed, t0+int64(i)*7*60_000)
	}
	enc := AppendSnapshot(nil, &s)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeSnapshot(enc); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(enc)), "bytes/snapshot")
}

var codecWALRecords = []struct {
	seq     uint64
	entries []WALEntry
}{
	{1, nil},
	{7, []WALEntry{{Account: "123456789012345678", ExpiresAt: 1_700_050_000, Events: []persistence.Event{
		{Seq: 1, Kind: persistence.EventReserve, ID: 1 << 50, Count: 3, At: t0, Deadline: t0 + 300_000},
		{Seq: 2, Kind: persistence.EventCommit, ID: 1 << 50, At: t1},
		{Seq: 3, Kind: persistence.EventRelease, ID: 1<<50 + 1},
	}}}},
	{math.MaxUint64, []WALEntry{
		{Account: "a", Events: []persistence.Event{{Seq: math.MaxUint64, Kind: persistence.EventCommit, ID: math.MaxUint64, At: math.MinInt64}}},
		{Account: "b", ExpiresAt: math.MaxUint64, Events: []persistence.Event{{Seq: 1, Kind: persistence.EventReserve, Count: math.MaxUint32, At: math.MaxInt64, Deadline: math.MinInt64}}},
		{Account: "a"},
	}},
}

func TestWALRecordRoundTrip(t *testing.T) {
	for _, tt := range codecWALRecords {
		enc := AppendWALRecord(nil, tt.seq, tt.entries)
		seq, entries, err := DecodeWALRecord(enc)
		if err != nil {
			t.Fatalf("decode record %d: %v", tt.seq, err)
		}
		if seq != tt.seq || len(entries) != len(tt.entries) {
			t.Fatalf("record %d decoded as %d with %d entries, want %d", tt.seq, seq, len(entries), len(tt.entries))
		}
		for i, e := range entries {
			w := tt.entries[i]
			if e.Account != w.Account || e.ExpiresAt != w.ExpiresAt || !slices.Equal(e.Events, w.Events) {
				t.Errorf("record %d entry %d = %+v, want %+v", tt.seq, i, e, w)
			}
		}
		for cut := 1; cut < len(enc); cut += max(1, len(enc)/13) {
			if _, _, err := DecodeWALRecord(enc[:cut]); !errors.Is(err, persistence.ErrCorrupt) {
				t.Errorf("record %d cut at %d: %v, want ErrCorrupt", tt.seq, cut, err)
			}
		}
		flipped := bytes.Clone(enc)
		flipped[len(flipped)/2] ^= 0x10
		if _, _, err := DecodeWALRecord(flipped); !errors.Is(err, persistence.ErrCorrupt) {
			t.Errorf("record %d with a flipped bit: %v, want ErrCorrupt", tt.seq, err)
		}
	}
	// An event with seq 0 or an invalid account never decodes, even with a
	// valid checksum.
	for name, entries := range map[string][]WALEntry{
		"seq 0":       {{Account: "a", Events: []persistence.Event{{Seq: 0}}}},
		"nul account": {{Account: "a\x00b", Events: []persistence.Event{{Seq: 1}}}},
	} {
		if _, _, err := DecodeWALRecord(AppendWALRecord(nil, 1, entries)); !errors.Is(err, persistence.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}
