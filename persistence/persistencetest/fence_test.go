package persistencetest

import (
	"errors"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

// TestFenceStoreConformance runs the Store suite against a FenceStore
// over a MemStore: a store that fences passes it as one that does not.
func TestFenceStoreConformance(t *testing.T) {
	TestStore(t, func(t *testing.T) persistence.Store {
		s := NewFenceStore(NewMemStore(nil))
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, func(s persistence.Store, account string) []uint64 {
		return memStoredSeqs(s.(*FenceStore).Store, account)
	})
}

// TestFenceStore steps through owners' tokens: a write under a token
// older than the newest one seen is refused as fenced off and writes
// nothing; Fence hands the state to another owner.
func TestFenceStore(t *testing.T) {
	mem := NewMemStore(nil)
	s := NewFenceStore(mem)
	defer s.Close()
	write := func(account, fence string) error {
		return s.Write(t.Context(), &persistence.Batch{
			Accounts: []persistence.AccountWrite{{Account: account, Events: []persistence.Event{Reserve(1, 1, T0)}}},
			Fence:    []byte(fence),
		})
	}
	steps := []struct {
		account, fence string
		fence2         string // when set, Fence(fence2) before the write
		fenced         bool
	}{
		{"a", "", "", false},    // nothing seen: an empty token passes
		{"b", "e1", "", false},  // the first owner
		{"c", "", "", true},     // no token once an owner wrote
		{"d", "e2", "", false},  // a newer owner
		{"e", "e1", "", true},   // the older one is stale now
		{"f", "e2", "e3", true}, // another owner took over
		{"g", "e3", "", false},
	}
	for i, st := range steps {
		if st.fence2 != "" {
			s.Fence([]byte(st.fence2))
		}
		err := write(st.account, st.fence)
		if got := errors.Is(err, persistence.ErrFenced); got != st.fenced || (!st.fenced && err != nil) {
			t.Fatalf("step %d: write under %q = %v, want fenced %v", i, st.fence, err, st.fenced)
		}
		want := persistence.Loaded{Events: []persistence.Event{Reserve(1, 1, T0)}}
		if st.fenced {
			want = persistence.Loaded{}
		}
		CheckLoaded(t, mem, st.account, want)
	}
}
