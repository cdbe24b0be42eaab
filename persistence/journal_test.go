package persistence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// scriptStore is a Store whose Write runs a function of the test's; the
// journal calls nothing else of it.
type scriptStore struct {
	Store
	write func(b *Batch) error
}

func (s *scriptStore) Write(_ context.Context, b *Batch) error { return s.write(b) }

// outcomes records the done calls of journal writes: per write, every
// error it was called with.
type outcomes struct {
	mu    sync.Mutex
	calls map[int][]error
	ch    chan int // receives the write's number at each call
}

func newOutcomes() *outcomes {
	return &outcomes{calls: make(map[int][]error), ch: make(chan int, 100)}
}

func (o *outcomes) done(i int) func(error) {
	return func(err error) {
		o.mu.Lock()
		o.calls[i] = append(o.calls[i], err)
		o.mu.Unlock()
		o.ch <- i
	}
}

// wait waits for n done calls; a journal that never calls them fails the
// test after a long timeout.
func (o *outcomes) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-o.ch:
		case <-time.After(10 * time.Second):
			t.Fatal("done not called")
		}
	}
}

func (o *outcomes) get(i int) []error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls[i]
}

// settleStore is a scriptStore that is also a settler: Settle runs a
// function of the test's.
type settleStore struct {
	scriptStore
	settle func()
}

func (s *settleStore) Settle() { s.settle() }

// TestJournalAnswersBeforeSettle checks that the writers of a batch are
// answered as soon as the store's Write returns, before the store's
// Settle, which the journal calls after every Write, has finished.
func TestJournalAnswersBeforeSettle(t *testing.T) {
	release := make(chan struct{})
	settled := make(chan struct{}, 100)
	var mu sync.Mutex
	writes := 0
	st := &settleStore{
		scriptStore: scriptStore{write: func(*Batch) error {
			mu.Lock()
			writes++
			mu.Unlock()
			return nil
		}},
		settle: func() {
			<-release // the store's own bookkeeping, held up by the test
			settled <- struct{}{}
		},
	}
	j := NewJournal(context.Background(), st, 0, zerolog.Nop())
	o := newOutcomes()
	j.AppendEvent("a", reserve(1, 1, t0), 0, t0, o.done(0))
	o.wait(t, 1)
	select {
	case <-settled:
		t.Fatal("Settle returned before the test let it")
	default:
	}
	close(release)
	<-settled
	// A batch with nothing to write (a flush marker) gets its answer
	// without a Write, so without a Settle either.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := j.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	j.AppendEvent("b", reserve(1, 1, t0), 0, t0, o.done(1))
	o.wait(t, 1)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if got := o.get(i); len(got) != 1 || got[0] != nil {
			t.Errorf("write %d: done calls = %v, want one, with nil", i, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if n := len(settled) + 1; n != writes {
		t.Errorf("Settle called %d times for %d Writes, want one per Write", n, writes)
	}
}

// TestJournalOutcomes checks that every write's done is called exactly
// once with the batch's outcome.
func TestJournalOutcomes(t *testing.T) {
	errDisk := errors.New("disk error")
	tests := []struct {
		name  string
		write func(b *Batch) error
		want  error
	}{
		{"durable", func(*Batch) error { return nil }, nil},
		{"failed", func(*Batch) error { return errDisk }, errDisk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			batches := 0
			st := &scriptStore{write: func(b *Batch) error {
				mu.Lock()
				batches++
				mu.Unlock()
				return tt.write(b)
			}}
			j := NewJournal(context.Background(), st, 2, zerolog.Nop())
			o := newOutcomes()
			const n = 5
			for i := range n {
				j.AppendEvent(fmt.Sprint("acct", i), reserve(1, 1, t0), 0, t0, o.done(i))
			}
			o.wait(t, n)
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if got := o.get(i); len(got) != 1 || !errors.Is(got[0], tt.want) || (got[0] == nil) != (tt.want == nil) {
					t.Errorf("write %d: done calls = %v, want one, with %v", i, got, tt.want)
				}
			}
			if batches < 3 {
				t.Errorf("%d writes went in %d batches, want at least 3 (at most 2 per batch)", n, batches)
			}
		})
	}
}

// TestJournalBatchHook checks that the batch hook sees every Store.Write,
// with its account writes and its error, before the batch's writers are
// answered, and nothing for a batch that writes nothing.
func TestJournalBatchHook(t *testing.T) {
	errDisk := errors.New("disk error")
	type call struct {
		writes int
		err    string
	}
	var mu sync.Mutex
	var calls []call
	fail := false
	st := &scriptStore{write: func(*Batch) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return errDisk
		}
		return nil
	}}
	j := NewJournal(context.Background(), st, 0, zerolog.Nop(), WithBatchHook(func(writes int, took time.Duration, err error) {
		if took < 0 {
			t.Errorf("hook: took %v < 0", took)
		}
		c := call{writes: writes}
		if err != nil {
			c.err = err.Error()
		}
		mu.Lock()
		calls = append(calls, c)
		mu.Unlock()
	}))
	defer j.Close()
	seen := func() []call {
		mu.Lock()
		defer mu.Unlock()
		return append([]call(nil), calls...)
	}

	o := newOutcomes()
	j.AppendEvent("a", reserve(1, 1, t0), 0, t0, o.done(0))
	o.wait(t, 1)
	if got := seen(); len(got) != 1 || got[0] != (call{1, ""}) {
		t.Fatalf("after one durable write: hook calls %v, want [{1 }]", got)
	}
	// A flush marker writes nothing: no Store.Write, no call.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// The high-water mark alone is a write of no account.
	j.Append(AccountWrite{}, t0, o.done(1))
	o.wait(t, 1)
	mu.Lock()
	fail = true
	mu.Unlock()
	j.AppendEvent("b", reserve(1, 1, t0), 0, t0, o.done(2))
	o.wait(t, 1)
	want := []call{{1, ""}, {0, ""}, {1, errDisk.Error()}}
	if got := seen(); !slices.Equal(got, want) {
		t.Errorf("hook calls %v, want %v", got, want)
	}
}

// TestJournalFenceAndContext checks that every Store.Write of the journal
// gets the journal's context and carries its fence token, and that a write
// the store refuses as fenced off is answered with that error.
func TestJournalFenceAndContext(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "journal")
	fence := []byte("owner-7")
	var mu sync.Mutex
	var fences []string
	var values []any
	refuse := false
	st := &ctxStore{write: func(ctx context.Context, b *Batch) error {
		mu.Lock()
		defer mu.Unlock()
		fences = append(fences, string(b.Fence))
		values = append(values, ctx.Value(key{}))
		if refuse {
			return fmt.Errorf("store: %w", ErrFenced)
		}
		return nil
	}}
	j := NewJournal(ctx, st, 0, zerolog.Nop(), WithFence(fence))
	defer j.Close()
	o := newOutcomes()
	j.AppendEvent("a", reserve(1, 1, t0), 0, t0, o.done(0))
	o.wait(t, 1)
	mu.Lock()
	refuse = true
	mu.Unlock()
	j.Append(AccountWrite{Account: "b"}, t0, o.done(1))
	o.wait(t, 1)
	if got := o.get(0); len(got) != 1 || got[0] != nil {
		t.Errorf("first write answered %v, want [nil]", got)
	}
	if got := o.get(1); len(got) != 1 || !errors.Is(got[0], ErrFenced) {
		t.Errorf("refused write answered %v, want ErrFenced", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"owner-7", "owner-7"}; !slices.Equal(fences, want) {
		t.Errorf("batch fences %q, want %q", fences, want)
	}
	if want := []any{"journal", "journal"}; !slices.Equal(values, want) {
		t.Errorf("write contexts carry %v, want %v", values, want)
	}
}

// ctxStore is a Store whose Write runs a function of the test's with the
// context it is given.
type ctxStore struct {
	Store
	write func(ctx context.Context, b *Batch) error
}

func (s *ctxStore) Write(ctx context.Context, b *Batch) error { return s.write(ctx, b) }

// TestJournalPartialOutcomes checks that a Write that failed part of its
// batch (PartialWriteError) fails only the writes it names, that each
// write's own fence reaches the store, and that a flush marker in the
// same batch learns the batch failed in part.
func TestJournalPartialOutcomes(t *testing.T) {
	errFenced := fmt.Errorf("partition 3: %w", ErrFenced)
	release, holding := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var seen []string // account=fence of each write the store got
	st := &scriptStore{write: func(b *Batch) error {
		if len(b.Accounts) == 1 && b.Accounts[0].Account == "first" {
			close(holding)
			<-release // hold the first batch so the rest gather into one
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		failed := map[int]error{}
		for i, w := range b.Accounts {
			seen = append(seen, w.Account+"="+string(w.Fence))
			if string(w.Fence) == "stale" {
				failed[i] = errFenced
			}
		}
		return &PartialWriteError{Failed: failed}
	}}
	j := NewJournal(context.Background(), st, 0, zerolog.Nop())
	defer j.Close()
	o := newOutcomes()
	j.AppendEvent("first", reserve(1, 1, t0), 0, t0, o.done(0))
	<-holding
	j.AppendFencedEvent("a", []byte("ok"), reserve(1, 1, t0), 0, t0, o.done(1))
	j.AppendFencedEvent("b", []byte("stale"), reserve(1, 1, t0), 0, t0, o.done(2))
	flushed := make(chan error, 1)
	j.Append(AccountWrite{}, 0, func(err error) { flushed <- err })
	j.Append(AccountWrite{Account: "c", Fence: []byte("ok")}, t0, o.done(3))
	j.Append(AccountWrite{Account: "d", Fence: []byte("stale")}, t0, o.done(4))
	close(release)
	o.wait(t, 5)
	for i, want := range []error{nil, nil, ErrFenced, nil, ErrFenced} {
		got := o.get(i)
		if len(got) != 1 || !errors.Is(got[0], want) || (got[0] == nil) != (want == nil) {
			t.Errorf("write %d answered %v, want [%v]", i, got, want)
		}
	}
	if err := <-flushed; !errors.Is(err, ErrFenced) {
		t.Errorf("flush marker answered %v, want the partial error", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"a=ok", "b=stale", "c=ok", "d=stale"}; !slices.Equal(seen, want) {
		t.Errorf("store saw %q, want %q", seen, want)
	}
}

func TestWriteOutcome(t *testing.T) {
	errDisk := errors.New("disk")
	pe := &PartialWriteError{Failed: map[int]error{1: errDisk}}
	if WriteOutcome(nil, 0) != nil || WriteOutcome(pe, 0) != nil {
		t.Error("an applied write reported failed")
	}
	if WriteOutcome(pe, 1) != errDisk || WriteOutcome(errDisk, 0) != errDisk {
		t.Error("a failed write reported applied")
	}
	if !errors.Is(fmt.Errorf("w: %w", pe), errDisk) {
		t.Error("errors.Is does not see a failed write's error")
	}
}
