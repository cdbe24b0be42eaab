package metrics

import (
	"testing"

	"github.com/pinbot/pinbot/internal/metrics/metricstest"
)

// TestReactionsCounted: each pin reaction counts under its result, every
// listed result is exported from the start, and an unlisted one counts
// as other.
func TestReactionsCounted(t *testing.T) {
	m := New()
	b := m.Bot(nil)
	b.ReactionDone("ran")
	b.ReactionDone("ran")
	b.ReactionDone("canceled")
	b.ReactionDone("a result nobody listed")
	s := metricstest.ScrapeHandler(t, m.Handler())
	for _, r := range ReactionResults {
		want := 0.0
		switch r {
		case "ran":
			want = 2
		case "canceled":
			want = 1
		}
		if got, ok := s.Lookup("pinbot_reactions_total", "result", r); !ok || got != want {
			t.Errorf("pinbot_reactions_total{result=%q} = %v (exported %v), want %v", r, got, ok, want)
		}
	}
	if got := s.Get("pinbot_reactions_total", "result", "other"); got != 1 {
		t.Errorf("pinbot_reactions_total{result=other} = %v, want 1", got)
	}
}
