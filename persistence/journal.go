package persistence

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Journal group-commits account writes: writes appended by any number of
// goroutines while one batch is being written are gathered into the next
// batch, so a single Store.Write (one transaction, one fsync) covers them
// all. It is safe for simultaneous use.
type Journal struct {
	store    Store
	ctx      context.Context // of every Store.Write
	settler  settler         // store, when it is one; nil otherwise
	fence    []byte          // Batch.Fence of every batch
	maxBatch int
	log      zerolog.Logger
	onBatch  func(writes int, took time.Duration, err error) // nil: none

	mu      sync.Mutex
	queue   []pendingWrite
	closed  bool
	wake    chan struct{} // capacity 1: a batch is waiting
	stopped chan struct{} // closed when the writer has exited

	batch  Batch   // reused by the writer goroutine only
	events []Event // backing array of the inline events of batch
}

type pendingWrite struct {
	w AccountWrite
	// ev is the single event of an AppendEvent, kept inline so that the
	// common case allocates no slice; w.Events is then nil.
	ev    Event
	hasEv bool
	hw    int64
	done  func(error)
}

// settler is implemented by stores whose Write returns as soon as its
// batch is durable, before the store has updated what it keeps in memory
// about it, such as the Badger store's index of its write-ahead log. The
// store does that update before any call that needs it; Settle does it
// now. The journal calls Settle after it has answered a batch's writers,
// so that they go on while the store finishes, and the next batch does
// not wait for it. Settle does nothing once the store is closed.
type settler interface {
	Settle()
}

// DefaultMaxBatch is the most account writes one Store.Write carries.
const DefaultMaxBatch = 4096

// JournalOption configures a Journal (see NewJournal).
type JournalOption func(*Journal)

// WithBatchHook has f called after every Store.Write of the journal, on
// the journal's goroutine before the batch's writers are answered, with
// the number of account writes the batch carried (0 for a batch holding
// only the high-water mark), how long Write took (Go's monotonic clock)
// and its error. f must be cheap and must not block: the next batch waits
// for it. It is for metrics.
func WithBatchHook(f func(writes int, took time.Duration, err error)) JournalOption {
	return func(j *Journal) { j.onBatch = f }
}

// WithFence has every batch of the journal carry token as its Batch.Fence.
// The journal keeps token; the caller must not change it.
func WithFence(token []byte) JournalOption {
	return func(j *Journal) { j.fence = token }
}

// NewJournal starts a journal writing to store, at most maxBatch account
// writes per Store.Write (DefaultMaxBatch if maxBatch <= 0). Close stops it.
// Every Store.Write of the journal gets ctx: a batch is written for many
// callers at once, so none of their contexts applies; the owner's does
// (the engine's). ctx ending does not stop the journal; Close does.
func NewJournal(ctx context.Context, store Store, maxBatch int, log zerolog.Logger, opts ...JournalOption) *Journal {
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	j := &Journal{
		store:    store,
		ctx:      ctx,
		maxBatch: maxBatch,
		log:      log.With().Str("component", "journal").Logger(),
		wake:     make(chan struct{}, 1),
		stopped:  make(chan struct{}),
	}
	for _, o := range opts {
		o(j)
	}
	j.settler, _ = store.(settler)
	go j.run()
	return j
}

// Append queues w. highWater is the engine time of the write (see
// Batch.HighWater). done, if not nil, is called once the batch holding w was
// written: with nil when w is durable, else with the error. done runs on the
// journal's goroutine, after the store's Write returned and before the
// next batch is written: it must not block, nor wait for the journal.
// After Close, done is called at once with ErrClosed.
func (j *Journal) Append(w AccountWrite, highWater int64, done func(error)) {
	j.append(pendingWrite{w: w, hw: highWater, done: done})
}

func (j *Journal) append(p pendingWrite) {
	done := p.done
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		if done != nil {
			done(ErrClosed)
		}
		return
	}
	j.queue = append(j.queue, p)
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// AppendEvent queues one event of account, like Append with an
// AccountWrite holding only ev and expiresAt, without allocating for it.
func (j *Journal) AppendEvent(account string, ev Event, expiresAt, highWater int64, done func(error)) {
	j.append(pendingWrite{w: AccountWrite{Account: account, ExpiresAt: expiresAt}, ev: ev, hasEv: true, hw: highWater, done: done})
}

// AppendFencedEvent is AppendEvent for a write carrying its own fencing
// token (AccountWrite.Fence).
func (j *Journal) AppendFencedEvent(account string, fence []byte, ev Event, expiresAt, highWater int64, done func(error)) {
	j.append(pendingWrite{w: AccountWrite{Account: account, ExpiresAt: expiresAt, Fence: fence}, ev: ev, hasEv: true, hw: highWater, done: done})
}

// Flush waits until everything appended before the call has been written,
// and returns the first error among those writes' outcome for the flush
// marker itself (nil when the store accepted the batch).
func (j *Journal) Flush(ctx context.Context) error {
	ch := make(chan error, 1)
	j.Append(AccountWrite{}, 0, func(err error) { ch <- err })
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes what is queued, stops the journal and waits for it.
// Appends after Close fail with ErrClosed. Close does not close the store.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		<-j.stopped
		return nil
	}
	j.closed = true
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
	<-j.stopped
	return nil
}

func (j *Journal) run() {
	defer close(j.stopped)
	var spare []pendingWrite
	for range j.wake {
		for {
			j.mu.Lock()
			if len(j.queue) == 0 {
				closed := j.closed
				j.mu.Unlock()
				if closed {
					return
				}
				break
			}
			var take []pendingWrite
			if len(j.queue) <= j.maxBatch {
				take = j.queue
				j.queue = spare[:0]
			} else {
				take = make([]pendingWrite, j.maxBatch)
				copy(take, j.queue)
				j.queue = append(j.queue[:0], j.queue[j.maxBatch:]...)
			}
			j.mu.Unlock()
			j.write(take)
			// The callers write just woke sit in this goroutine's run
			// queue. Let them run before the next batch is cut: their next
			// writes then join it instead of waiting a whole sync more, and
			// they are not stranded behind a processor held by the sync
			// (the Go scheduler hands a processor in a system call to
			// others only after a while). docs/benchmarks.md has what it
			// does to batch sizes and durable throughput.
			runtime.Gosched()
			clear(take)
			spare = take[:0]
		}
	}
}

func (j *Journal) write(take []pendingWrite) {
	b := &j.batch
	b.Accounts = b.Accounts[:0]
	b.HighWater = 0
	b.Fence = j.fence
	evs := j.events[:0]
	for i := range take {
		if take[i].hasEv {
			evs = append(evs, take[i].ev)
		}
	}
	j.events = evs
	k := 0
	for i := range take {
		p := &take[i]
		if p.w.Account != "" {
			w := p.w
			if p.hasEv {
				w.Events = evs[k : k+1 : k+1]
				k++
			}
			b.Accounts = append(b.Accounts, w)
		}
		b.HighWater = max(b.HighWater, p.hw)
	}
	var err error
	wrote := len(b.Accounts) > 0 || b.HighWater > 0
	if wrote {
		var start time.Time
		if j.onBatch != nil {
			start = time.Now()
		}
		err = j.store.Write(j.ctx, b)
		if err != nil {
			j.log.Error().Err(err).Int("writes", len(b.Accounts)).Msg("journal write failed")
		}
		if j.onBatch != nil {
			j.onBatch(len(b.Accounts), time.Since(start), err)
		}
	}
	clear(b.Accounts)
	// The writers go on as soon as the batch is durable; the store's own
	// bookkeeping of it runs after, while they do.
	answer(take, err)
	if wrote && j.settler != nil {
		j.settler.Settle()
	}
}

// answer calls the done function of each write in ws with its outcome of
// the batch that carried them, which err, the batch's error, tells: a
// PartialWriteError fails only the writes it names. A write with no
// account (a flush marker) gets err itself.
func answer(ws []pendingWrite, err error) {
	var pe *PartialWriteError
	if !errors.As(err, &pe) {
		for i := range ws {
			if ws[i].done != nil {
				ws[i].done(err)
			}
		}
		return
	}
	k := 0 // index in the batch of the next write with an account
	for i := range ws {
		if ws[i].w.Account == "" {
			if ws[i].done != nil {
				ws[i].done(err)
			}
			continue
		}
		if ws[i].done != nil {
			ws[i].done(pe.Failed[k])
		}
		k++
	}
}
