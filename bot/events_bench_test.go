package bot

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/disgoorg/disgo/gateway"
)

// benchEventsIgnored measures what events the bot drops cost the
// gateway's reading goroutine. raws are dispatches as Discord sends them,
// taken in turn; each is decoded as disgo decodes it, and in
// "decode+drop" handed to handle, which turns it into the bot's type and
// gives it to the bot's handler, and reports false for an event of
// another kind. "decode" is the decoding alone, the floor. ignored counts
// the events the handler reported ignored (its onDone hook): all must be.
// Both report events/s.
func benchEventsIgnored(b *testing.B, raws [][]byte, ignored *int, handle func(gateway.EventData) bool) {
	run := func(b *testing.B, drop bool) {
		b.ReportAllocs()
		*ignored = 0
		start := time.Now()
		for i := range b.N {
			ev := decodeDispatch(b, raws[i%len(raws)])
			if drop && !handle(ev) {
				b.Fatalf("the handler takes no %T", ev)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		if drop && *ignored != b.N {
			b.Fatalf("%d of %d events ignored", *ignored, b.N)
		}
	}
	b.Run("decode", func(b *testing.B) { run(b, false) })
	b.Run("decode+drop", func(b *testing.B) { run(b, true) })
}

// decodeDispatch decodes a gateway dispatch as disgo does.
func decodeDispatch(b *testing.B, raw []byte) gateway.EventData {
	var m gateway.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		b.Fatal(err)
	}
	ev, ok := m.D.(gateway.EventData)
	if !ok {
		b.Fatalf("decoded %T", m.D)
	}
	return ev
}
