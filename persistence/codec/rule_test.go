package codec

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

var codecRules = []persistence.Rules{
	{},
	{Current: persistence.Rule{Limit: 100, Window: 12 * 3600_000}, Lease: 300_000},
	{Current: persistence.Rule{Limit: 50, Window: 3600_000}, Lease: 300_000, Earlier: []persistence.Rule{
		{Limit: 100, Window: 12 * 3600_000, Until: t0 + 12*3600_000 + 300_000},
		{Limit: 20, Window: 24 * 3600_000, Until: t1},
	}},
	{Current: persistence.Rule{Limit: math.MinInt64, Window: math.MaxInt64, Until: math.MinInt64}, Lease: math.MinInt64,
		Earlier: []persistence.Rule{{Limit: math.MaxInt64, Window: math.MinInt64, Until: math.MaxInt64}}},
	{Current: persistence.Rule{Limit: 100, Window: 12 * 3600_000}, Lease: 300_000, Earlier: []persistence.Rule{
		{Limit: 50, Window: 24 * 3600_000, Until: t2},
		{Limit: 0, Window: 12 * 3600_000, Until: t3, From: t1},
	}},
	{Current: persistence.Rule{Limit: 1, Window: 1, From: math.MinInt64}},
}

// TestRulesFormats: rules without a From are written as before (format
// 0x71), so that stores written before From existed read the same bytes,
// and those bytes still decode; rules with one are written as 0x72.
func TestRulesFormats(t *testing.T) {
	if enc := AppendRules(nil, codecRules[2]); enc[0] != formatRulesV1 {
		t.Errorf("rules without a start written as 0x%x, want 0x%x", enc[0], formatRulesV1)
	}
	if enc := AppendRules(nil, codecRules[4]); enc[0] != formatRulesV2 {
		t.Errorf("rules with a start written as 0x%x, want 0x%x", enc[0], formatRulesV2)
	}
	// As stored by a store written before From existed.
	old, _ := hex.DecodeString("716480bab70300c0cf2402c80180b89929c0a7e9a7fa622880f0b252c0c9b2fef9625fc35c4d")
	if got, err := DecodeRules(old); err != nil || !reflect.DeepEqual(got, codecRules[2]) {
		t.Errorf("DecodeRules(0x71 value) = %+v, %v; want %+v", got, err, codecRules[2])
	}
	// A 0x72 value whose rules have no From has another encoding: corrupt.
	v2 := binary.AppendVarint([]byte{formatRulesV2}, 100)
	v2 = binary.AppendVarint(v2, 3600_000)
	v2 = binary.AppendVarint(v2, 0)
	v2 = binary.AppendVarint(v2, 0) // From
	v2 = binary.AppendVarint(v2, 300_000)
	v2 = binary.AppendUvarint(v2, 0)
	if _, err := DecodeRules(appendChecksum(v2, 0)); !errors.Is(err, persistence.ErrCorrupt) {
		t.Errorf("0x72 without a start: %v, want ErrCorrupt", err)
	}
}

func TestRulesRoundTrip(t *testing.T) {
	for _, r := range codecRules {
		got, err := DecodeRules(AppendRules(nil, r))
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("DecodeRules(AppendRules(%+v)) = %+v, %v", r, got, err)
		}
	}
	if _, err := DecodeRules(AppendAnchor(nil, persistence.ClockAnchor{})); !errors.Is(err, persistence.ErrCorrupt) {
		t.Errorf("an anchor read as rules: %v, want ErrCorrupt", err)
	}
	enc := AppendRules(nil, codecRules[2])
	for n := range len(enc) - crcLen {
		if _, err := DecodeRules(appendChecksum(append([]byte(nil), enc[:n]...), 0)); !errors.Is(err, persistence.ErrCorrupt) {
			t.Errorf("rules cut to %d bytes: %v, want ErrCorrupt", n, err)
		}
	}
}
