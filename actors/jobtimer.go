package actors

import (
	"container/heap"
	"context"
	"errors"
	"math"
	"sync"
)

// jobTimer is the engine's one timer for queued jobs: a min-heap of the
// accounts that have jobs waiting, keyed by the instant the first of them
// is due, and one goroutine that sleeps until the earliest and then wakes
// those accounts' actors (spawning passivated ones). There is no timer or
// goroutine per job or per account; an account's actor sets its entry
// whenever its first due instant may have changed.
type jobTimer struct {
	mu    sync.Mutex
	h     dueHeap
	index map[string]*dueEntry
	wake  chan struct{} // capacity 1: the earliest instant may have moved
}

type dueEntry struct {
	account string
	at      int64
	i       int
}

type dueHeap []*dueEntry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i, j
}
func (h *dueHeap) Push(x any) {
	e := x.(*dueEntry)
	e.i = len(*h)
	*h = append(*h, e)
}
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

func newJobTimer() *jobTimer {
	return &jobTimer{index: make(map[string]*dueEntry), wake: make(chan struct{}, 1)}
}

// set makes account due at at; Never removes it.
func (t *jobTimer) set(account string, at int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.index[account]
	switch {
	case at == Never && e == nil:
		return
	case at == Never:
		heap.Remove(&t.h, e.i)
		delete(t.index, account)
	case e == nil:
		e = &dueEntry{account: account, at: at}
		heap.Push(&t.h, e)
		t.index[account] = e
	case e.at == at:
		return
	default:
		e.at = at
		heap.Fix(&t.h, e.i)
	}
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// due removes and returns the accounts due at now.
func (t *jobTimer) due(now int64) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for len(t.h) > 0 && t.h[0].at <= now {
		e := heap.Pop(&t.h).(*dueEntry)
		delete(t.index, e.account)
		out = append(out, e.account)
	}
	return out
}

// next returns the earliest instant in the heap, Never if none.
func (t *jobTimer) next() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.h) == 0 {
		return Never
	}
	return t.h[0].at
}

// len returns how many accounts wait.
func (t *jobTimer) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.h)
}

// maxWakes is how many account actors the timer wakes at once.
const maxWakes = 64

// run wakes each account's actor when it comes due, until ctx ends. An
// actor woken serves its due jobs and sets its next instant again; an
// actor that cannot be reached (the engine closing) is left for the next
// start, which finds its jobs in the store.
func (e *Engine) runJobTimer(ctx context.Context) {
	t := e.jobs
	sem := make(chan struct{}, maxWakes)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		for _, account := range t.due(e.clock.Now()) {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				err := e.reg.send(ctx, account, &request{op: opRunJobs})
				switch {
				case err == nil || ctx.Err() != nil:
				case errors.Is(err, ErrNotOwner):
					// Lost to another member since it came due: its jobs
					// are the owner's to run.
					e.log.Debug().Err(err).Str("account", account).Msg("account due for its queued jobs is not served here")
				default:
					e.log.Error().Err(err).Str("account", account).Msg("waking an account for its queued jobs failed")
				}
			}()
		}
		next := t.next()
		var fired <-chan struct{}
		stop := func() {}
		if next != Never && next != math.MaxInt64 {
			fired, stop = wakeAt(e.clock, next)
		}
		select {
		case <-ctx.Done():
			stop()
			return
		case <-t.wake:
		case <-fired:
		}
		stop()
	}
}

// drop removes the accounts for which match returns true and returns how
// many it removed.
func (t *jobTimer) drop(match func(account string) bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for account, e := range t.index {
		if match(account) {
			heap.Remove(&t.h, e.i)
			delete(t.index, account)
			n++
		}
	}
	return n
}
