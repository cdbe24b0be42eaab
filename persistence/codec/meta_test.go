package codec

import (
	"errors"
	"math"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

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
