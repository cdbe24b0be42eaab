package persistencetest

import (
	"slices"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

// TestMemStoreConformance runs the Store suite against MemStore.
func TestMemStoreConformance(t *testing.T) {
	TestStore(t, func(t *testing.T) persistence.Store {
		s := NewMemStore(nil)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, memStoredSeqs)
}

// memStoredSeqs returns the journal seqs a MemStore keeps for account,
// including those a snapshot hides from Load.
func memStoredSeqs(s persistence.Store, account string) []uint64 {
	m := s.(*MemStore)
	m.mu.Lock()
	defer m.mu.Unlock()
	var seqs []uint64
	if a := m.accounts[account]; a != nil {
		for seq := range a.journal {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	return seqs
}

// TestMemStoreExpiry steps a fixed clock across expiry instants: state is
// kept until the Unix second that ExpiresAt rounds up to, as in Badger.
func TestMemStoreExpiry(t *testing.T) {
	now := T0
	s := NewMemStore(func() int64 { return now })
	defer s.Close()

	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "whole", Events: []persistence.Event{Reserve(1, 1, T0)}, ExpiresAt: T0 + 10_000},
		{Account: "ragged", Events: []persistence.Event{Reserve(1, 1, T0)}, ExpiresAt: T0 + 10_001},
		{Account: "never", Events: []persistence.Event{Reserve(1, 1, T0)}},
		{Account: "split", Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2}, ExpiresAt: T0 + 5_000},
	}})
	// A later write extends only the keys it writes.
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "split", Events: []persistence.Event{Reserve(2, 2, T0)}, ExpiresAt: T0 + 20_000},
	}})

	steps := []struct {
		at   int64
		want []string
		// split is what Load("split") returns
		split persistence.Loaded
	}{
		{T0, []string{"never", "ragged", "split", "whole"},
			persistence.Loaded{Snapshot: persistence.Snapshot{Seq: 1, NextID: 2}, Events: []persistence.Event{Reserve(2, 2, T0)}}},
		{T0 + 4_999, []string{"never", "ragged", "split", "whole"},
			persistence.Loaded{Snapshot: persistence.Snapshot{Seq: 1, NextID: 2}, Events: []persistence.Event{Reserve(2, 2, T0)}}},
		{T0 + 5_000, []string{"never", "ragged", "split", "whole"}, persistence.Loaded{Events: []persistence.Event{Reserve(2, 2, T0)}}},
		{T0 + 9_999, []string{"never", "ragged", "split", "whole"}, persistence.Loaded{Events: []persistence.Event{Reserve(2, 2, T0)}}},
		{T0 + 10_000, []string{"never", "ragged", "split"}, persistence.Loaded{Events: []persistence.Event{Reserve(2, 2, T0)}}},
		{T0 + 10_999, []string{"never", "ragged", "split"}, persistence.Loaded{Events: []persistence.Event{Reserve(2, 2, T0)}}},
		{T0 + 11_000, []string{"never", "split"}, persistence.Loaded{Events: []persistence.Event{Reserve(2, 2, T0)}}},
		{T0 + 20_000, []string{"never"}, persistence.Loaded{}},
	}
	for i, st := range steps {
		now = st.at
		if got := Accounts(t, s); !slices.Equal(got, st.want) {
			t.Errorf("step %d: at T0%+d ms: Accounts = %q, want %q", i, st.at-T0, got, st.want)
		}
		if got := MustLoad(t, s, "split"); !EqualLoaded(got, st.split) {
			t.Errorf("step %d: at T0%+d ms: Load(split) = %+v, want %+v", i, st.at-T0, got, st.split)
		}
	}
}
