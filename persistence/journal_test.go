package persistence

import (
	"context"
	"errors"
	"fmt"
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

func (s *scriptStore) Write(b *Batch) error { return s.write(b) }

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

// TestJournalAnswersWhenDurable checks that the writers of a batch learn
// it is durable as soon as the store calls Batch.Durable, while the
// store's Write is still finishing.
func TestJournalAnswersWhenDurable(t *testing.T) {
	release := make(chan struct{})
	returned := make(chan struct{})
	st := &scriptStore{write: func(b *Batch) error {
		defer close(returned)
		b.Durable()
		<-release // the store's own bookkeeping, held up by the test
		return nil
	}}
	j := NewJournal(st, 0, zerolog.Nop())
	o := newOutcomes()
	j.AppendEvent("a", reserve(1, 1, t0), 0, t0, o.done(0))
	o.wait(t, 1)
	select {
	case <-returned:
		t.Fatal("Write returned before the test let it")
	default:
	}
	close(release)
	<-returned
	// A batch with nothing to write (a flush marker) after one the store
	// called durable still gets its answer.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := j.Flush(ctx); err != nil {
		t.Fatalf("Flush after a durable batch: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if got := o.get(0); len(got) != 1 || got[0] != nil {
		t.Errorf("done calls = %v, want one, with nil", got)
	}
}

// TestJournalOutcomes checks that every write's done is called exactly
// once with the batch's outcome, whether or not the store calls
// Batch.Durable.
func TestJournalOutcomes(t *testing.T) {
	errDisk := errors.New("disk error")
	tests := []struct {
		name  string
		write func(b *Batch) error
		want  error
	}{
		{"durable", func(b *Batch) error { b.Durable(); return nil }, nil},
		{"nil without Durable", func(*Batch) error { return nil }, nil},
		{"failed", func(*Batch) error { return errDisk }, errDisk},
		// A store that breaks the contract cannot take the answer back.
		{"failed after Durable", func(b *Batch) error { b.Durable(); return errDisk }, nil},
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
			j := NewJournal(st, 2, zerolog.Nop())
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
