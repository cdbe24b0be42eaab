package codec

import (
	"encoding/hex"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

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
	{"rebuilt", persistence.Snapshot{Seq: 9, NextID: 12, Committed: []int64{t0, t2}, Rebuilt: t3}},
	{"rebuilt, held and lapsed", persistence.Snapshot{Committed: []int64{t0, t1}, HoldUntil: t3, Lapsed: []persistence.Lapsed{{ID: 4, Deadline: t1}}, Rebuilt: t2}},
	{"rebuilt extremes", persistence.Snapshot{Rebuilt: math.MinInt64}},
}

func equalSnapshot(a, b persistence.Snapshot) bool {
	return a.Seq == b.Seq && a.NextID == b.NextID && a.HoldUntil == b.HoldUntil && a.Rebuilt == b.Rebuilt &&
		slices.Equal(a.Committed, b.Committed) && slices.Equal(a.Pending, b.Pending) && slices.Equal(a.Lapsed, b.Lapsed)
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

// TestSnapshotFormats: each snapshot is written in the oldest format
// that holds it, so that a store written before a format existed reads
// the same bytes; and values written in the earlier formats, as stored,
// still decode.
func TestSnapshotFormats(t *testing.T) {
	for _, tt := range []struct {
		name   string
		s      persistence.Snapshot
		format byte
	}{
		{"plain", codecSnapshots[1].s, formatSnapshotV1},
		{"held", codecSnapshots[4].s, formatSnapshotV2},
		{"lapsed", codecSnapshots[6].s, formatSnapshotV3},
		{"rebuilt", codecSnapshots[9].s, formatSnapshotV4},
	} {
		if enc := AppendSnapshot(nil, &tt.s); enc[0] != tt.format {
			t.Errorf("%s: written as format 0x%x, want 0x%x", tt.name, enc[0], tt.format)
		}
	}
	for _, tt := range []struct {
		name string
		enc  string // hex, as stored by the store before Rebuilt existed
		want persistence.Snapshot
	}{
		{"V1", "2178390480a0abfef962c0a9070080d30e026ebfa907e0d40302c0a907e0d4034092fae6", codecSnapshots[1].s},
		{"V2", "2103090180a0abfef962006166015d", persistence.Snapshot{Seq: 3, NextID: 9, Committed: []int64{t0}}},
		{"V2 held", "2203090180a0abfef96200c09cc1fef9624e216d8a", codecSnapshots[4].s},
		{"V3", "23073c0380a0abfef962c0a907c0a9070176c0a907e0d403000272bfa90702c0a907e8b2721a", codecSnapshots[6].s},
	} {
		b, err := hex.DecodeString(tt.enc)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeSnapshot(b)
		if err != nil || !equalSnapshot(got, tt.want) {
			t.Errorf("%s: DecodeSnapshot = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
	// A V4 value without Rebuilt has another encoding (V1): corrupt.
	zero := append(AppendSnapshot(nil, &codecSnapshots[9].s)[:0:0], formatSnapshotV4, 0, 0, 0, 0, 0, 0, 0)
	if _, err := DecodeSnapshot(appendChecksum(zero, 0)); !errors.Is(err, persistence.ErrCorrupt) {
		t.Errorf("V4 with Rebuilt 0: %v, want ErrCorrupt", err)
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
