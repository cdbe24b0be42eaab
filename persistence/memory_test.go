package persistence

import (
	"slices"
	"testing"
)

// TestMemStoreExpiry steps a fixed clock across expiry instants: state is
// kept until the Unix second that ExpiresAt rounds up to, as in Badger.
func TestMemStoreExpiry(t *testing.T) {
	now := t0
	s := NewMemStore(func() int64 { return now })
	defer s.Close()

	mustWrite(t, s, &Batch{Accounts: []AccountWrite{
		{Account: "whole", Events: []Event{reserve(1, 1, t0)}, ExpiresAt: t0 + 10_000},
		{Account: "ragged", Events: []Event{reserve(1, 1, t0)}, ExpiresAt: t0 + 10_001},
		{Account: "never", Events: []Event{reserve(1, 1, t0)}},
		{Account: "split", Snapshot: &Snapshot{Seq: 1, NextID: 2}, ExpiresAt: t0 + 5_000},
	}})
	// A later write extends only the keys it writes.
	mustWrite(t, s, &Batch{Accounts: []AccountWrite{
		{Account: "split", Events: []Event{reserve(2, 2, t0)}, ExpiresAt: t0 + 20_000},
	}})

	steps := []struct {
		at   int64
		want []string
		// split is what Load("split") returns
		split Loaded
	}{
		{t0, []string{"never", "ragged", "split", "whole"},
			Loaded{Snapshot: Snapshot{Seq: 1, NextID: 2}, Events: []Event{reserve(2, 2, t0)}}},
		{t0 + 4_999, []string{"never", "ragged", "split", "whole"},
			Loaded{Snapshot: Snapshot{Seq: 1, NextID: 2}, Events: []Event{reserve(2, 2, t0)}}},
		{t0 + 5_000, []string{"never", "ragged", "split", "whole"}, Loaded{Events: []Event{reserve(2, 2, t0)}}},
		{t0 + 9_999, []string{"never", "ragged", "split", "whole"}, Loaded{Events: []Event{reserve(2, 2, t0)}}},
		{t0 + 10_000, []string{"never", "ragged", "split"}, Loaded{Events: []Event{reserve(2, 2, t0)}}},
		{t0 + 10_999, []string{"never", "ragged", "split"}, Loaded{Events: []Event{reserve(2, 2, t0)}}},
		{t0 + 11_000, []string{"never", "split"}, Loaded{Events: []Event{reserve(2, 2, t0)}}},
		{t0 + 20_000, []string{"never"}, Loaded{}},
	}
	for i, st := range steps {
		now = st.at
		if got := accounts(t, s); !slices.Equal(got, st.want) {
			t.Errorf("step %d: at t0%+d ms: Accounts = %q, want %q", i, st.at-t0, got, st.want)
		}
		if got := mustLoad(t, s, "split"); !equalLoaded(got, st.split) {
			t.Errorf("step %d: at t0%+d ms: Load(split) = %+v, want %+v", i, st.at-t0, got, st.split)
		}
	}
}
