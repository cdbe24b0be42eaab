package persistencetest

import (
	"errors"
	"sync"
	"syscall"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

func TestFaultStore(t *testing.T) {
	f := NewFaultStore(NewMemStore(nil))
	defer f.Close()
	loadErr := errors.New("disk read error")

	steps := []struct {
		name      string
		fault     func()
		writeErr  error // want from write(seq)
		stored    int   // events of "a" afterwards
		loadAErr  error // want from Load("a")
		loadBFine bool
	}{
		{"no fault", func() {}, nil, 1, nil, true},
		{"disk full", func() { f.FailWrites(ErrDiskFull) }, syscall.ENOSPC, 1, nil, true},
		{"ack lost", func() { f.FailWrites(nil); f.FailWritesAfterApply(ErrDiskFull) }, syscall.ENOSPC, 2, nil, true},
		{"load fails", func() { f.ClearFaults(); f.FailLoad("a", loadErr) }, nil, -1, loadErr, true},
		{"load fixed", func() { f.FailLoad("a", nil) }, nil, 4, nil, true},
	}
	for i, st := range steps {
		st.fault()
		seq := uint64(i + 1)
		err := f.Write(t.Context(), &persistence.Batch{
			Accounts: []persistence.AccountWrite{{Account: "a", Events: []persistence.Event{Reserve(seq, seq, T0)}}},
		})
		if !errors.Is(err, st.writeErr) || (err == nil) != (st.writeErr == nil) {
			t.Errorf("step %d (%s): Write = %v, want %v", i, st.name, err, st.writeErr)
		}
		l, err := f.Load(t.Context(), "a")
		if !errors.Is(err, st.loadAErr) || (err == nil) != (st.loadAErr == nil) {
			t.Errorf("step %d (%s): Load(a) = %v, want %v", i, st.name, err, st.loadAErr)
		}
		if st.stored >= 0 && len(l.Events) != st.stored {
			t.Errorf("step %d (%s): %d events stored, want %d", i, st.name, len(l.Events), st.stored)
		}
		if _, err := f.Load(t.Context(), "b"); (err == nil) != st.loadBFine {
			t.Errorf("step %d (%s): Load(b) = %v", i, st.name, err)
		}
	}
	want := FaultCounts{Writes: 5, FailedWrites: 2, Loads: 10, FailedLoads: 1}
	if got := f.Counts(); got != want {
		t.Errorf("Counts = %+v, want %+v", got, want)
	}
}

func TestFaultStoreConcurrent(t *testing.T) {
	f := NewFaultStore(NewMemStore(nil))
	defer f.Close()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				switch i % 5 {
				case 0:
					f.FailWrites(ErrDiskFull)
				case 1:
					f.ClearFaults()
				case 2:
					f.FailLoad("a", ErrDiskFull)
				}
				_ = f.Write(t.Context(), &persistence.Batch{HighWater: int64(g*100 + i)})
				_, _ = f.Load(t.Context(), "a")
				_ = f.Counts()
			}
		})
	}
	wg.Wait()
	if got := f.Counts(); got.Writes != 200 || got.Loads != 200 {
		t.Errorf("Counts = %+v, want 200 writes and 200 loads", got)
	}
}

// settleCounter is a MemStore that counts Settle calls.
type settleCounter struct {
	*MemStore
	settles int
}

func (s *settleCounter) Settle() { s.settles++ }

// TestFaultStoreSettle: Settle reaches an inner store that settles, and
// is harmless around one that does not.
func TestFaultStoreSettle(t *testing.T) {
	inner := &settleCounter{MemStore: NewMemStore(nil)}
	f := NewFaultStore(inner)
	defer f.Close()
	f.Settle()
	f.FailWrites(ErrDiskFull)
	f.Settle()
	if inner.settles != 2 {
		t.Errorf("inner store settled %d times, want 2", inner.settles)
	}
	plain := NewFaultStore(NewMemStore(nil))
	defer plain.Close()
	plain.Settle()
}
