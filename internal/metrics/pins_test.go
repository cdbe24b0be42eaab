package metrics

import (
	"testing"

	"github.com/pinbot/pinbot/internal/metrics/metricstest"
)

// TestPinsBySource: each picture counts under its source and result; a
// picture the board had already counts as a duplicate avoided under its
// source, and only such a picture; a source or result outside the lists
// counts as other, so that the series stay the same fixed set.
func TestPinsBySource(t *testing.T) {
	m := New()
	b := m.Bot(nil)
	b.PinDone("command", "pinned", "")
	b.PinDone("message_command", "pinned", "")
	b.PinDone("reaction", "pinned", "")
	b.PinDone("reaction", "skipped", "duplicate")
	b.PinDone("reaction", "skipped", "duplicate")
	b.PinDone("command", "skipped", "duplicate")
	b.PinDone("queued", "skipped", "duplicate")
	b.PinDone("queued", "failed", "rate_limited")
	b.PinDone("reaction", "queued", "")
	b.PinDone("a source nobody listed", "skipped", "duplicate")
	b.PinDone("command", "a result nobody listed", "limit")

	s := metricstest.ScrapeHandler(t, m.Handler())
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"pinbot_pins_total", []string{"source", "command", "result", "pinned"}, 1},
		{"pinbot_pins_total", []string{"source", "message_command", "result", "pinned"}, 1},
		{"pinbot_pins_total", []string{"source", "reaction", "result", "pinned"}, 1},
		{"pinbot_pins_total", []string{"source", "reaction", "result", "skipped"}, 2},
		{"pinbot_pins_total", []string{"source", "reaction", "result", "queued"}, 1},
		{"pinbot_pins_total", []string{"source", "queued", "result", "failed"}, 1},
		{"pinbot_pins_total", []string{"source", "other", "result", "skipped"}, 1},
		{"pinbot_pins_total", []string{"source", "command", "result", "other"}, 1},
		{"pinbot_pins_total", []string{"result", "pinned"}, 3},
		{"pinbot_duplicates_avoided_total", []string{"source", "reaction"}, 2},
		{"pinbot_duplicates_avoided_total", []string{"source", "command"}, 1},
		{"pinbot_duplicates_avoided_total", []string{"source", "queued"}, 1},
		{"pinbot_duplicates_avoided_total", []string{"source", "message_command"}, 0},
		{"pinbot_duplicates_avoided_total", []string{"source", "other"}, 1},
		{"pinbot_pin_failures_total", []string{"reason", "duplicate"}, 5},
	} {
		if got := s.Get(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	want := map[string]int{
		"pinbot_pins_total":               (len(PinSources) + 1) * (len(PinResults) + 1),
		"pinbot_duplicates_avoided_total": len(PinSources) + 1,
	}
	for name, n := range want {
		if got := len(s[name].GetMetric()); got != n {
			t.Errorf("%s has %d series, want %d: the lists and other", name, got, n)
		}
	}
}
