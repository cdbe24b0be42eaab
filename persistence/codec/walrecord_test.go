package codec

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

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
