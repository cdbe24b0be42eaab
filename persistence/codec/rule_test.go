package codec

import (
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
