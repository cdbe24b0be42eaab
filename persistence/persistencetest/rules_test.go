package persistencetest

import (
	"errors"
	"reflect"
	"syscall"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

// TestFaultStoreRules: SetRules fails as Write does under each write
// fault, and Rules passes through.
func TestFaultStoreRules(t *testing.T) {
	f := NewFaultStore(NewMemStore(nil))
	defer f.Close()
	r1 := persistence.Rules{Current: persistence.Rule{Limit: 100, Window: 43_200_000}, Lease: 300_000}
	r2 := persistence.Rules{Current: persistence.Rule{Limit: 50, Window: 3_600_000}, Lease: 300_000,
		Earlier: []persistence.Rule{{Limit: 100, Window: 43_200_000, Until: T3}}}
	steps := []struct {
		name   string
		fault  func()
		set    persistence.Rules
		setErr error
		want   persistence.Rules
	}{
		{"no fault", func() {}, r1, nil, r1},
		{"disk full", func() { f.FailWrites(ErrDiskFull) }, r2, syscall.ENOSPC, r1},
		{"ack lost", func() { f.FailWrites(nil); f.FailWritesAfterApply(ErrDiskFull) }, r2, syscall.ENOSPC, r2},
		{"cleared", f.ClearFaults, r1, nil, r1},
	}
	for i, st := range steps {
		st.fault()
		if err := f.SetRules(t.Context(), st.set); !errors.Is(err, st.setErr) || (err == nil) != (st.setErr == nil) {
			t.Errorf("step %d (%s): SetRules = %v, want %v", i, st.name, err, st.setErr)
		}
		if got, err := f.Rules(t.Context()); err != nil || !reflect.DeepEqual(got, st.want) {
			t.Errorf("step %d (%s): Rules = %+v, %v; want %+v", i, st.name, got, err, st.want)
		}
	}
}
