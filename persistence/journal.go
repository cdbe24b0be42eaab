package persistence

import (
	"context"
	"errors"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Journal group-commits account writes: writes appended by any number of
// goroutines while one batch is being written are gathered into the next
// batch, so a single Store.Write (one transaction, one fsync) covers them
// all. It is safe for simultaneous use.
//
// By default one batch is in flight at a time. WithPipeline lets several
// be, for a store whose Write waits on a network (etcd) rather than a
// disk: an account's writes still reach the store in the order they were
// appended, and never in two batches in flight at once (see WithPipeline).
type Journal struct {
	store    Store
	ctx      context.Context // of every Store.Write
	settler  settler         // store, when it is one; nil otherwise
	fence    []byte          // Batch.Fence of every batch
	maxBatch int
	pipeline int // most batches in flight; 1: run's single writer
	log      zerolog.Logger
	onBatch  func(writes int, took time.Duration, err error) // nil: none

	mu      sync.Mutex
	queue   []pendingWrite
	closed  bool
	wake    chan struct{} // capacity 1: a batch is waiting
	stopped chan struct{} // closed when the writers have exited

	batch  Batch   // reused by run, the writer of one batch at a time
	events []Event // backing array of the inline events of batch

	// With a pipeline, under mu:
	owner    map[string]uint64 // account -> seq of the batch in flight holding its writes
	scanFrom int               // queue[:scanFrom] is known held back until a batch ends
	lastSeq  uint64            // seq of the last batch cut; batches are numbered from 1
	inflight []uint64          // seqs of the batches cut and not yet ended, ascending
	held     []heldMarker      // flush markers waiting for earlier batches to end
	writers  int               // writer goroutines still running
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
// for it. With WithPipeline, f is called from several goroutines, up to
// one per batch in flight, at once: it must be safe for simultaneous use.
// It is for metrics.
func WithBatchHook(f func(writes int, took time.Duration, err error)) JournalOption {
	return func(j *Journal) { j.onBatch = f }
}

// WithPipeline lets the journal have up to n batches in flight: while n-1
// batches are being written, the next is cut and written beside them,
// each by a goroutine of its own. n <= 1 means one batch at a time, the
// default. The store's Write must be safe for concurrent use. A store
// that implements Settle (a disk store that finishes each Write's
// bookkeeping after it returns, and whose Write is not for concurrent
// use) writes one batch at a time whatever n says: the option is ignored
// for it.
//
// An account's writes reach the store in the order they were appended,
// and never in two batches in flight at once: a queued write whose
// account has a write in flight, and every later write of that account,
// wait until that batch has ended (its writers answered); writes of other
// accounts go past them. So an account's writes are answered in order,
// and a write that failed is answered before its account's next write is
// cut, as with one batch at a time. Writes of different accounts may be
// answered in any order. A flush marker (Flush, or an Append of no
// account) is answered only once every write appended before it has
// been answered.
func WithPipeline(n int) JournalOption {
	return func(j *Journal) { j.pipeline = max(n, 1) }
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
		pipeline: 1,
		log:      log.With().Str("component", "journal").Logger(),
		wake:     make(chan struct{}, 1),
		stopped:  make(chan struct{}),
	}
	for _, o := range opts {
		o(j)
	}
	j.settler, _ = store.(settler)
	if j.settler != nil && j.pipeline > 1 {
		// Its Write is not for concurrent use (see WithPipeline).
		j.log.Warn().Int("pipeline", j.pipeline).Msg("pipeline ignored: the store settles its writes, one batch at a time")
		j.pipeline = 1
	}
	if j.pipeline == 1 {
		go j.run()
		return j
	}
	j.owner = make(map[string]uint64)
	j.writers = j.pipeline
	for range j.pipeline {
		go j.runPipelined(new(pipeWriter))
	}
	return j
}

// Append queues w. highWater is the engine time of the write (see
// Batch.HighWater). done, if not nil, is called once the batch holding w was
// written: with nil when w is durable, else with the error. done runs on a
// journal's goroutine, after the store's Write returned and before that
// goroutine writes its next batch: it must not block, nor wait for the
// journal. The done functions of one account's writes are called in the
// order of their appends, one after the other; with WithPipeline those of
// different accounts may be called at the same time. A w of no account
// is a flush marker: its done is called once every write appended before
// it has been answered, with the error of the batch that carried it.
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
// and returns the outcome for the flush marker itself: the error of the
// batch that carried it (nil when the store accepted that batch).
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

// Close writes what is queued, waits for every batch in flight, and stops
// the journal. Appends after Close fail with ErrClosed. Close does not
// close the store.
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
				// Move the rest to the front and clear the slots it left:
				// they would keep the writes taken (and what their
				// callbacks refer to) from the collector.
				rest := copy(j.queue, j.queue[j.maxBatch:])
				clear(j.queue[rest:])
				j.queue = j.queue[:rest]
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
			if cap(spare) > 4*j.maxBatch {
				// A burst left it; kept, the collector would walk it
				// at every cycle.
				spare = nil
			}
		}
	}
}

func (j *Journal) write(take []pendingWrite) {
	wrote, err := j.writeBatch(&j.batch, &j.events, take)
	// The writers go on as soon as the batch is durable; the store's own
	// bookkeeping of it runs after, while they do.
	answer(take, err, true)
	if wrote && j.settler != nil {
		j.settler.Settle()
	}
}

// writeBatch writes the writes of take as one batch, built in b with the
// inline events in *events (both reused by their one writer goroutine),
// and returns whether it called the store's Write, and Write's error. A
// batch of nothing but flush markers with no high-water mark is not
// written.
func (j *Journal) writeBatch(b *Batch, events *[]Event, take []pendingWrite) (wrote bool, err error) {
	b.Accounts = b.Accounts[:0]
	b.HighWater = 0
	b.Fence = j.fence
	evs := (*events)[:0]
	for i := range take {
		if take[i].hasEv {
			evs = append(evs, take[i].ev)
		}
	}
	*events = evs
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
	wrote = len(b.Accounts) > 0 || b.HighWater > 0
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
	return wrote, err
}

// pipeWriter is what one writer goroutine of a pipelined journal reuses
// from batch to batch; no other goroutine touches it.
type pipeWriter struct {
	batch  Batch
	events []Event
	take   []pendingWrite // the writes of the batch in flight, in append order
	ready  []heldMarker   // flush markers to answer
}

// heldMarker is a flush marker whose batch, seq, has ended with err, to
// be answered once every batch cut before it has ended too.
type heldMarker struct {
	seq  uint64
	err  error
	done func(error)
}

// runPipelined is one writer goroutine of a pipelined journal: it cuts a
// batch from the queue, writes it, answers it, and again, while there is
// something to cut; then it waits to be woken. Several run at once, each
// with its own batch.
func (j *Journal) runPipelined(w *pipeWriter) {
	for range j.wake {
		for {
			seq, exit := j.cut(w)
			if exit {
				j.exitWriter()
				return
			}
			if seq == 0 {
				break
			}
			_, err := j.writeBatch(&w.batch, &w.events, w.take)
			j.end(w, seq, err)
			// As run does: let the callers just answered append to the
			// next batch before it is cut.
			runtime.Gosched()
		}
	}
}

// cut moves into w.take the next batch of queued writes that may go now,
// and returns its seq: 0 when none may (nothing queued, or every queued
// write waits for a batch in flight), with exit set when the journal is
// closed and nothing is left queued.
//
// A write goes unless its account has a write in flight in another batch
// or an earlier queued write that waits: an account's writes are then in
// one batch in flight at most, in append order. Writes of other accounts
// go past those that wait. A flush marker goes only when no earlier write
// waits, so that every write appended before it is in this batch or one
// cut before. The high-water marks that batches carry only ever raise the
// stored marks, never lower them (etcdstore writes every mark, a
// partition's or, for a batch of no account, writeGlobalHighWater's,
// with hwOp, which keeps the larger of the stored mark and the batch's),
// so batches may land in any order.
func (j *Journal) cut(w *pipeWriter) (seq uint64, exit bool) {
	j.mu.Lock()
	if len(j.queue) == 0 {
		closed := j.closed
		j.mu.Unlock()
		return 0, closed
	}
	q := j.queue
	seq = j.lastSeq + 1
	// queue[:scanFrom] waited at the last cut, and no batch has ended
	// since: they still wait, and a marker after them must too.
	kept := j.scanFrom
	waiting := kept > 0
	i := kept
	for ; i < len(q) && len(w.take) < j.maxBatch; i++ {
		p := &q[i]
		if p.w.Account == "" {
			if waiting {
				q[kept] = *p
				kept++
				continue
			}
		} else if s, busy := j.owner[p.w.Account]; busy && s != seq {
			waiting = true
			q[kept] = *p
			kept++
			continue
		} else {
			j.owner[p.w.Account] = seq
		}
		w.take = append(w.take, *p)
	}
	n := copy(q[kept:], q[i:])
	clear(q[kept+n:])
	j.queue = q[:kept+n]
	j.scanFrom = kept
	more := len(j.queue) > kept // writes not looked at, past maxBatch
	if len(w.take) == 0 {
		j.mu.Unlock()
		return 0, false
	}
	j.lastSeq = seq
	j.inflight = append(j.inflight, seq)
	j.mu.Unlock()
	if more {
		// Another writer may cut them beside this batch.
		j.signal()
	}
	return seq, false
}

// end answers batch seq, just written by w with outcome err: its writes
// at once, then, once every batch cut before it has ended, its flush
// markers, with those of later batches that waited for it. Its accounts
// may go in the next batch cut only once their writes are answered.
func (j *Journal) end(w *pipeWriter, seq uint64, err error) {
	answer(w.take, err, false)
	j.mu.Lock()
	for i := range w.take {
		if a := w.take[i].w.Account; a != "" {
			delete(j.owner, a)
		} else {
			j.held = append(j.held, heldMarker{seq: seq, err: err, done: w.take[i].done})
		}
	}
	j.scanFrom = 0
	for i, s := range j.inflight {
		if s == seq {
			j.inflight = append(j.inflight[:i], j.inflight[i+1:]...)
			break
		}
	}
	if len(j.held) > 0 {
		oldest := uint64(math.MaxUint64) // oldest batch still in flight
		if len(j.inflight) > 0 {
			oldest = j.inflight[0]
		}
		k := 0
		for _, h := range j.held {
			if h.seq < oldest {
				w.ready = append(w.ready, h)
			} else {
				j.held[k] = h
				k++
			}
		}
		clear(j.held[k:])
		j.held = j.held[:k]
	}
	j.mu.Unlock()
	for _, h := range w.ready {
		if h.done != nil {
			h.done(h.err)
		}
	}
	clear(w.ready)
	w.ready = w.ready[:0]
	clear(w.take)
	w.take = w.take[:0]
}

// exitWriter ends a writer goroutine of a pipelined journal that found
// the journal closed and nothing queued; the last one to exit stops the
// journal, the others wake one still waiting, so that it exits too.
func (j *Journal) exitWriter() {
	j.mu.Lock()
	j.writers--
	last := j.writers == 0
	j.mu.Unlock()
	if last {
		close(j.stopped)
		return
	}
	j.signal()
}

// signal wakes a writer, unless one is already due to wake.
func (j *Journal) signal() {
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// answer calls the done function of each write in ws with its outcome of
// the batch that carried them, which err, the batch's error, tells: a
// PartialWriteError fails only the writes it names. A write with no
// account (a flush marker) gets err itself when markers is set, and is
// left alone when it is not.
func answer(ws []pendingWrite, err error, markers bool) {
	var pe *PartialWriteError
	if !errors.As(err, &pe) {
		for i := range ws {
			if ws[i].done != nil && (markers || ws[i].w.Account != "") {
				ws[i].done(err)
			}
		}
		return
	}
	k := 0 // index in the batch of the next write with an account
	for i := range ws {
		if ws[i].w.Account == "" {
			if markers && ws[i].done != nil {
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
