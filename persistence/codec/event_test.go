package codec

import (
	"bytes"
	"math"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

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

func BenchmarkEncodeEvent(b *testing.B) {
	ev := persistence.Event{Seq: 1234, Kind: persistence.EventReserve, ID: 5678, Count: 1, At: t0, Deadline: t0 + 30_000}
	buf := make([]byte, 0, MaxEventLen)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendEvent(buf[:0], ev)
	}
	b.ReportMetric(float64(len(buf)), "bytes/event")
}
