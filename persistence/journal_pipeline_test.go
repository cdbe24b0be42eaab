package persistence

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// holdStore is a Store whose Write hands each call to the test and
// returns what the test answers it: the test holds a batch in flight for
// as long as it likes. It counts the Writes running at once.
type holdStore struct {
	Store
	calls chan *heldWrite
	stop  chan struct{} // closed when the test ends: Writes fail at once

	mu      sync.Mutex
	running int
	peak    int
	log     []string // "write <ids>" at each Write, and what the test adds
}

// heldWrite is one Write of a holdStore, held until answered.
type heldWrite struct {
	ids    []string // account and event seq of each write, as "a1"
	hw     int64
	answer chan error
}

// startHeld starts a journal of up to n batches in flight on a new
// holdStore. When the test ends, even failed while it held Writes, they
// fail and the journal is closed.
func startHeld(t *testing.T, n int) (*holdStore, *Journal) {
	s := &holdStore{calls: make(chan *heldWrite), stop: make(chan struct{})}
	j := NewJournal(context.Background(), s, 0, zerolog.Nop(), WithPipeline(n))
	t.Cleanup(func() {
		close(s.stop)
		j.Close()
	})
	return s, j
}

func (s *holdStore) Write(_ context.Context, b *Batch) error {
	c := &heldWrite{hw: b.HighWater, answer: make(chan error)}
	for _, w := range b.Accounts {
		c.ids = append(c.ids, writeID(w))
	}
	s.mu.Lock()
	s.running++
	s.peak = max(s.peak, s.running)
	s.log = append(s.log, "write "+fmt.Sprint(c.ids))
	s.mu.Unlock()
	var err error
	select {
	case s.calls <- c:
		select {
		case err = <-c.answer:
		case <-s.stop:
			err = ErrClosed
		}
	case <-s.stop:
		err = ErrClosed
	}
	s.mu.Lock()
	s.running--
	s.mu.Unlock()
	return err
}

// writeID names an account write by its account and its first event's
// Seq ("a1"), or its account alone when it has no event.
func writeID(w AccountWrite) string {
	if len(w.Events) == 0 {
		return w.Account
	}
	return fmt.Sprint(w.Account, w.Events[0].Seq)
}

func (s *holdStore) note(line string) {
	s.mu.Lock()
	s.log = append(s.log, line)
	s.mu.Unlock()
}

// logged returns the store's log so far.
func (s *holdStore) logged() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

func (s *holdStore) peakWrites() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// next returns the next Write the journal starts; a journal that starts
// none fails the test after a long timeout.
func (s *holdStore) next(t *testing.T) *heldWrite {
	t.Helper()
	select {
	case c := <-s.calls:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no Write started")
		return nil
	}
}

// expect checks that c carries the writes ids, in that order.
func (c *heldWrite) expect(t *testing.T, ids ...string) {
	t.Helper()
	if !slices.Equal(c.ids, ids) {
		t.Fatalf("Write of %v, want %v", c.ids, ids)
	}
}

// event appends the event seq of account to j, noting its answer in
// s's log ("done a1") and in o under number i.
func event(j *Journal, s *holdStore, o *outcomes, i int, account string, seq uint64) {
	done := o.done(i)
	j.AppendEvent(account, reserve(seq, seq, t0), 0, t0, func(err error) {
		s.note(fmt.Sprint("done ", account, seq))
		done(err)
	})
}

// indexOf returns where line is in log, failing the test when it is not.
func indexOf(t *testing.T, log []string, line string) int {
	t.Helper()
	i := slices.Index(log, line)
	if i < 0 {
		t.Fatalf("%q not in %q", line, log)
	}
	return i
}

// TestJournalPipelineOtherAccountsPass checks that with two batches in
// flight, a batch of other accounts is written while the first is held,
// and that a write of an account in flight waits until its earlier
// write is answered, then goes, with its account's later writes, in
// order.
func TestJournalPipelineOtherAccountsPass(t *testing.T) {
	s, j := startHeld(t, 2)
	o := newOutcomes()
	event(j, s, o, 0, "a", 1)
	first := s.next(t)
	first.expect(t, "a1")
	// a2 and a3 are queued before b1: b1 goes past them, and the flush
	// marker between waits for them.
	event(j, s, o, 1, "a", 2)
	event(j, s, o, 2, "a", 3)
	flushed := make(chan error, 1)
	j.Append(AccountWrite{}, 0, func(err error) {
		s.note("flushed")
		flushed <- err
	})
	event(j, s, o, 3, "b", 1)
	second := s.next(t)
	second.expect(t, "b1")
	second.answer <- nil
	o.wait(t, 1)
	if got := o.get(3); len(got) != 1 || got[0] != nil {
		t.Fatalf("b1 answered %v while a1 is in flight, want [nil]", got)
	}
	first.answer <- nil
	third := s.next(t)
	third.expect(t, "a2", "a3")
	third.answer <- nil
	o.wait(t, 3)
	if err := <-flushed; err != nil {
		t.Errorf("marker answered %v, want nil", err)
	}
	log := s.logged()
	if indexOf(t, log, "done a1") > indexOf(t, log, "write [a2 a3]") {
		t.Errorf("a2 written before a1 was answered: %q", log)
	}
	if indexOf(t, log, "done a3") > indexOf(t, log, "flushed") {
		t.Errorf("marker answered before a3, appended before it: %q", log)
	}
	if a1, a2, a3 := indexOf(t, log, "done a1"), indexOf(t, log, "done a2"), indexOf(t, log, "done a3"); a1 > a2 || a2 > a3 {
		t.Errorf("a's writes answered out of order: %q", log)
	}
	if p := s.peakWrites(); p != 2 {
		t.Errorf("at most %d Writes at once, want 2", p)
	}
}

// TestJournalPipelineFlushWaits checks that a flush marker cut while
// writes appended before it are in flight in an earlier batch is answered
// only once they are, with the outcome of its own batch.
func TestJournalPipelineFlushWaits(t *testing.T) {
	errDisk := errors.New("disk error")
	s, j := startHeld(t, 2)
	o := newOutcomes()
	event(j, s, o, 0, "a", 1)
	first := s.next(t)
	first.expect(t, "a1")
	// A marker with a high-water mark is written, in a batch of its own.
	flushed := make(chan error, 1)
	j.Append(AccountWrite{}, t0, func(err error) {
		s.note("flushed")
		flushed <- err
	})
	marker := s.next(t)
	if marker.expect(t); marker.hw != t0 {
		t.Fatalf("marker's batch has high-water mark %d, want %d", marker.hw, t0)
	}
	marker.answer <- errDisk
	// The only writer free is the one that wrote the marker: once it
	// writes b1, it has ended the marker's batch.
	event(j, s, o, 1, "b", 1)
	second := s.next(t)
	second.expect(t, "b1")
	select {
	case err := <-flushed:
		t.Fatalf("marker answered (%v) while a1, appended before it, is in flight", err)
	default:
	}
	first.answer <- nil
	if err := <-flushed; !errors.Is(err, errDisk) {
		t.Errorf("marker answered %v, want its batch's error", err)
	}
	second.answer <- nil
	o.wait(t, 2)
	log := s.logged()
	if indexOf(t, log, "done a1") > indexOf(t, log, "flushed") {
		t.Errorf("marker answered before a1: %q", log)
	}
	// Flush's marker, of no high-water mark, is written by no Write.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := j.Flush(ctx); err != nil {
		t.Errorf("Flush with nothing in flight: %v", err)
	}
}

// TestJournalPipelinePartialOutcomes checks that a batch the store
// applied in part, cut beside another in flight, answers each write with
// its own outcome, and its flush marker with the partial error, once the
// other batch, holding a write appended before it, has ended.
func TestJournalPipelinePartialOutcomes(t *testing.T) {
	errFenced := fmt.Errorf("partition 3: %w", ErrFenced)
	s, j := startHeld(t, 2)
	o := newOutcomes()
	event(j, s, o, 0, "x", 1)
	first := s.next(t)
	event(j, s, o, 1, "y", 1)
	second := s.next(t)
	second.expect(t, "y1")
	// Both writers busy: the rest gather.
	event(j, s, o, 2, "a", 1)
	event(j, s, o, 3, "b", 1)
	flushed := make(chan error, 1)
	j.Append(AccountWrite{}, 0, func(err error) { flushed <- err }) // goes with a1, waits for y1
	event(j, s, o, 4, "y", 2)                                       // waits for y1
	event(j, s, o, 5, "c", 1)
	event(j, s, o, 6, "d", 1)
	first.answer <- nil
	third := s.next(t)
	third.expect(t, "a1", "b1", "c1", "d1")
	third.answer <- &PartialWriteError{Failed: map[int]error{1: errFenced, 3: errFenced}}
	o.wait(t, 5) // x1, a1, b1, c1, d1
	select {
	case err := <-flushed:
		t.Fatalf("marker answered (%v) while y1, appended before it, is in flight", err)
	default:
	}
	second.answer <- errFenced
	fourth := s.next(t)
	fourth.expect(t, "y2")
	if err := <-flushed; !errors.Is(err, ErrFenced) || !errors.As(err, new(*PartialWriteError)) {
		t.Errorf("marker answered %v, want the partial error of its batch", err)
	}
	fourth.answer <- nil
	o.wait(t, 2)
	for i, want := range []error{nil, ErrFenced, nil, ErrFenced, nil, nil, ErrFenced} {
		got := o.get(i)
		if len(got) != 1 || !errors.Is(got[0], want) || (got[0] == nil) != (want == nil) {
			t.Errorf("write %d answered %v, want [%v]", i, got, want)
		}
	}
	log := s.logged()
	if indexOf(t, log, "done y1") > indexOf(t, log, "write [y2]") {
		t.Errorf("y2 cut before y1's failure was answered: %q", log)
	}
}

// TestJournalPipelineClose checks that Close writes what is queued,
// waits for every batch in flight, and that appends after it fail with
// ErrClosed.
func TestJournalPipelineClose(t *testing.T) {
	s, j := startHeld(t, 2)
	o := newOutcomes()
	event(j, s, o, 0, "a", 1)
	first := s.next(t)
	event(j, s, o, 1, "b", 1)
	second := s.next(t)
	event(j, s, o, 2, "a", 2)
	event(j, s, o, 3, "c", 1)
	closed := make(chan struct{})
	var runningAtClose, answeredAtClose int // when Close returned
	go func() {
		j.Close()
		s.mu.Lock()
		runningAtClose = s.running
		s.mu.Unlock()
		o.mu.Lock()
		answeredAtClose = len(o.calls)
		o.mu.Unlock()
		close(closed)
	}()
	stillOpen := func(what string) {
		t.Helper()
		select {
		case <-closed:
			t.Fatalf("Close returned while %s", what)
		default:
		}
	}
	second.answer <- nil
	third := s.next(t)
	third.expect(t, "c1")
	stillOpen("two batches are in flight")
	first.answer <- nil
	fourth := s.next(t)
	fourth.expect(t, "a2")
	third.answer <- nil
	o.wait(t, 3) // b1, a1, c1
	stillOpen("a batch is in flight")
	fourth.answer <- nil
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	if runningAtClose != 0 || answeredAtClose != 4 {
		t.Errorf("Close returned with %d Writes running and %d of 4 writes answered", runningAtClose, answeredAtClose)
	}
	o.wait(t, 1)
	for i := range 4 {
		if got := o.get(i); len(got) != 1 || got[0] != nil {
			t.Errorf("write %d answered %v, want [nil]", i, got)
		}
	}
	j.AppendEvent("d", reserve(1, 1, t0), 0, t0, o.done(4))
	o.wait(t, 1)
	if got := o.get(4); len(got) != 1 || !errors.Is(got[0], ErrClosed) {
		t.Errorf("append after Close answered %v, want ErrClosed", got)
	}
	if err := j.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestJournalPipelineBound checks that no more than n Writes run at once,
// and that n do when there is work for them; and that a store that
// settles its writes gets one at a time whatever the option says.
func TestJournalPipelineBound(t *testing.T) {
	for _, tt := range []struct {
		name   string
		settle bool
		want   int
	}{
		{"concurrent store", false, 3},
		{"settling store", true, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &holdStore{calls: make(chan *heldWrite), stop: make(chan struct{})}
			var st Store = s
			if tt.settle {
				st = &settlingHoldStore{s}
			}
			j := NewJournal(context.Background(), st, 1, zerolog.Nop(), WithPipeline(3))
			t.Cleanup(func() {
				close(s.stop)
				j.Close()
			})
			o := newOutcomes()
			const n = 12
			for i := range n {
				event(j, s, o, i, fmt.Sprint("acct", i), 1)
			}
			// Hold as many Writes as may run, then answer the oldest
			// and take the next, until all are written.
			var held []*heldWrite
			for range tt.want {
				held = append(held, s.next(t))
			}
			started := tt.want
			for len(held) > 0 {
				held[0].answer <- nil
				held = held[1:]
				if started < n {
					held = append(held, s.next(t))
					started++
				}
			}
			o.wait(t, n)
			j.Close()
			if p := s.peakWrites(); p != tt.want {
				t.Errorf("at most %d Writes at once, want %d", p, tt.want)
			}
		})
	}
}

// settlingHoldStore is a holdStore that settles its writes, as the disk
// stores do.
type settlingHoldStore struct{ *holdStore }

func (s *settlingHoldStore) Settle() {}

// TestJournalPipelineRandom has goroutines append writes of a few
// accounts, with flush markers, to a journal whose store delays and fails
// writes at random, and checks that each account's writes reach the store
// in append order, never in two Writes at once, that no more Writes than
// the pipeline allows run at once, that every write is answered once,
// in its account's order, with its outcome, and that each marker is
// answered after every write appended before it.
func TestJournalPipelineRandom(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprint("pipeline=", n), func(t *testing.T) { runPipelineRandom(t, n) })
	}
}

func runPipelineRandom(t *testing.T, pipeline int) {
	const (
		accounts   = 5
		goroutines = 8
		perG       = 300
	)
	errDisk := errors.New("disk error")
	name := func(a int) string { return fmt.Sprint("acct", a) }
	type key struct {
		account string
		seq     uint64
	}
	var (
		smu      sync.Mutex
		written  = map[string][]uint64{} // seqs of each account, in Write order
		inWrite  = map[string]bool{}     // accounts of the Writes running
		running  int
		peak     int
		expected = map[key]bool{} // whether the store failed the write
		writes   int
		problems []string // of the store's, under smu
	)
	st := &scriptStore{write: func(b *Batch) error {
		smu.Lock()
		writes++
		running++
		peak = max(peak, running)
		mine := map[string]bool{}
		for _, w := range b.Accounts {
			if inWrite[w.Account] && !mine[w.Account] {
				problems = append(problems, w.Account+" in two Writes at once")
			}
			mine[w.Account] = true
			inWrite[w.Account] = true
			written[w.Account] = append(written[w.Account], w.Events[0].Seq)
		}
		smu.Unlock()
		for range rand.IntN(20) {
			runtime.Gosched() // a Write of its own length
		}
		var err error
		failed := map[int]error{}
		switch rand.IntN(8) {
		case 0:
			err = errDisk
		case 1, 2:
			for i := range b.Accounts {
				if rand.IntN(3) == 0 {
					failed[i] = errDisk
				}
			}
			if len(failed) > 0 {
				err = &PartialWriteError{Failed: failed}
			}
		}
		smu.Lock()
		for i, w := range b.Accounts {
			_, f := failed[i]
			expected[key{w.Account, w.Events[0].Seq}] = err == errDisk || f
			delete(inWrite, w.Account)
		}
		running--
		smu.Unlock()
		return err
	}}
	var hooks int
	var hmu sync.Mutex
	j := NewJournal(context.Background(), st, 7, zerolog.Nop(), WithPipeline(pipeline), WithBatchHook(func(int, time.Duration, error) {
		hmu.Lock()
		hooks++
		hmu.Unlock()
	}))

	var (
		amu      [accounts]sync.Mutex // held over an account's seq and its Append
		next     [accounts]uint64     // last seq appended
		appended [accounts]uint64     // last seq whose Append returned
		dmu      sync.Mutex
		answered = map[key]int{}
		failures = map[key]bool{}
		lastDone [accounts]uint64
		late     []string // answers out of order, under dmu
		markers  sync.WaitGroup
	)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), uint64(pipeline)))
			for range perG {
				if r.IntN(20) == 0 {
					// A marker: every write whose Append returned must be
					// answered before it is.
					dmu.Lock()
					before := appended
					dmu.Unlock()
					markers.Add(1)
					j.Append(AccountWrite{}, int64(r.IntN(3))*t0, func(error) {
						defer markers.Done()
						dmu.Lock()
						defer dmu.Unlock()
						for a := range accounts {
							if lastDone[a] < before[a] {
								late = append(late, fmt.Sprintf("marker answered before %s %d", name(a), before[a]))
							}
						}
					})
					continue
				}
				a := r.IntN(accounts)
				amu[a].Lock()
				next[a]++
				seq := next[a]
				j.AppendEvent(name(a), reserve(seq, seq, t0), 0, t0, func(err error) {
					dmu.Lock()
					defer dmu.Unlock()
					k := key{name(a), seq}
					answered[k]++
					failures[k] = err != nil
					if lastDone[a] != seq-1 {
						late = append(late, fmt.Sprintf("%s %d answered after %d", name(a), seq, lastDone[a]))
					}
					lastDone[a] = seq
				})
				dmu.Lock()
				appended[a] = max(appended[a], seq)
				dmu.Unlock()
				amu[a].Unlock()
			}
		})
	}
	wg.Wait()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	markers.Wait()

	smu.Lock()
	defer smu.Unlock()
	dmu.Lock()
	defer dmu.Unlock()
	for _, p := range slices.Concat(problems, late) {
		t.Error(p)
	}
	if peak > pipeline {
		t.Errorf("%d Writes at once, want at most %d", peak, pipeline)
	}
	hmu.Lock()
	if hooks != writes {
		t.Errorf("batch hook called %d times for %d Writes", hooks, writes)
	}
	hmu.Unlock()
	for a := range accounts {
		want := make([]uint64, next[a])
		for i := range want {
			want[i] = uint64(i + 1)
		}
		if got := written[name(a)]; !slices.Equal(got, want) {
			t.Errorf("%s written in the order %v, want 1..%d in order", name(a), got, next[a])
		}
		for seq := uint64(1); seq <= next[a]; seq++ {
			k := key{name(a), seq}
			if answered[k] != 1 {
				t.Errorf("%s %d answered %d times, want once", name(a), seq, answered[k])
			}
			if failures[k] != expected[k] {
				t.Errorf("%s %d answered failed=%v, the store failed it: %v", name(a), seq, failures[k], expected[k])
			}
		}
	}
}
