package actors

import (
	"runtime"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// accountMailbox is the protoactor mailbox of every account actor.
//
// It keeps protoactor's mailbox contract: system messages go before user
// messages; a SuspendMailbox holds back user messages (not system ones)
// until a ResumeMailbox; a panic in the actor is recovered and escalated
// to the supervisor, and serving goes on with what that queued; after
// Throughput messages in one turn the goroutine yields.
//
// It differs from protoactor's own mailboxes in three ways, all for the
// cost of a message, which is most of the engine's CPU:
//
//   - It runs the actor's turn on the goroutine that posts to an idle
//     mailbox, as protoactor's synchronized dispatcher does (the engine
//     uses that dispatcher, whose Throughput the mailbox reads), without
//     going through Dispatcher.Schedule, which allocates a closure per
//     turn.
//   - A message posted to an idle mailbox with nothing queued is served
//     at once, without being queued: it cannot overtake anything.
//   - Queued messages sit in a ring buffer that is allocated only when
//     messages actually wait, not in a node allocated per message; an
//     account's actor rarely has more than one message at a time.
//
// MessageBatch envelopes are delivered as they are: account actors never
// receive them.
type accountMailbox struct {
	mu         sync.Mutex
	user       msgQueue
	sys        msgQueue
	running    bool // a goroutine is serving the mailbox
	suspended  bool // user messages are held back
	throughput int32
	invoker    actor.MessageInvoker
}

// newAccountMailbox is the actor.MailboxProducer of account actors.
func newAccountMailbox() actor.Mailbox { return &accountMailbox{} }

// RegisterHandlers implements actor.Mailbox.
func (m *accountMailbox) RegisterHandlers(invoker actor.MessageInvoker, dispatcher actor.Dispatcher) {
	m.invoker = invoker
	m.throughput = int32(max(dispatcher.Throughput(), 1))
}

// Start implements actor.Mailbox.
func (m *accountMailbox) Start() {}

// UserMessageCount implements actor.Mailbox: the user messages queued.
func (m *accountMailbox) UserMessageCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.user.len()
}

// PostUserMessage implements actor.Mailbox.
func (m *accountMailbox) PostUserMessage(msg any) {
	m.mu.Lock()
	if m.running || m.suspended || m.sys.len() > 0 || m.user.len() > 0 {
		m.user.push(msg)
		m.startUnlocked(nil, false)
		return
	}
	// Idle and empty: nothing this message could overtake.
	m.startUnlocked(msg, true)
}

// PostSystemMessage implements actor.Mailbox.
func (m *accountMailbox) PostSystemMessage(msg any) {
	m.mu.Lock()
	m.sys.push(msg)
	m.startUnlocked(nil, false)
}

// startUnlocked, called with mu held, releases it and serves the mailbox
// on this goroutine unless another is serving it already; first and
// hasFirst are as for serve.
func (m *accountMailbox) startUnlocked(first any, hasFirst bool) {
	if m.running {
		m.mu.Unlock()
		return
	}
	m.running = true
	m.mu.Unlock()
	m.serve(first, hasFirst)
}

// serve runs turns until the mailbox goes idle; first, when hasFirst, is a
// user message to serve before the queues.
func (m *accountMailbox) serve(first any, hasFirst bool) {
	for !m.turn(first, hasFirst) {
		first, hasFirst = nil, false
	}
}

// turn serves messages until none can be served, then marks the mailbox
// idle and returns true. It returns false, with the mailbox still marked
// running, when the actor panicked: the failure was escalated, which
// queued the system messages the next turn serves.
func (m *accountMailbox) turn(first any, hasFirst bool) (idle bool) {
	var msg any
	defer func() {
		if r := recover(); r != nil {
			m.invoker.EscalateFailure(r, msg)
		}
	}()
	served := int32(0)
	if hasFirst {
		msg = first
		served++
		m.invoker.InvokeUserMessage(msg)
	}
	for {
		if served >= m.throughput {
			served = 0
			runtime.Gosched()
		}
		m.mu.Lock()
		if sm, ok := m.sys.pop(0); ok {
			switch sm.(type) {
			case *actor.SuspendMailbox:
				m.suspended = true
				m.mu.Unlock()
			case *actor.ResumeMailbox:
				m.suspended = false
				m.mu.Unlock()
			default:
				m.mu.Unlock()
				msg = sm
				served++
				m.invoker.InvokeSystemMessage(sm)
			}
			continue
		}
		if !m.suspended {
			if um, ok := m.user.pop(keepUserQueue); ok {
				m.mu.Unlock()
				msg = um
				served++
				m.invoker.InvokeUserMessage(um)
				continue
			}
		}
		m.running = false
		m.mu.Unlock()
		return true
	}
}

// msgQueue is a FIFO ring of messages. Its buffer is allocated when a
// message is first queued and given back once the queue drains, unless it
// is small (see pop); the zero value is an empty queue.
type msgQueue struct {
	buf  []any
	head int32
	n    int32
}

// keepUserQueue is the largest buffer a drained user queue keeps: an
// account whose messages collide once is likely to again. A drained
// system queue keeps none: system messages are rare (start, stop,
// restart), and every actor gets one at its start.
const keepUserQueue = 4

func (q *msgQueue) len() int { return int(q.n) }

func (q *msgQueue) push(msg any) {
	if int(q.n) == len(q.buf) {
		q.grow()
	}
	i := int(q.head + q.n)
	if i >= len(q.buf) {
		i -= len(q.buf)
	}
	q.buf[i] = msg
	q.n++
}

// pop removes the oldest message; the queue then keeps its buffer when
// drained only if it holds at most keep slots.
func (q *msgQueue) pop(keep int) (any, bool) {
	if q.n == 0 {
		return nil, false
	}
	msg := q.buf[q.head]
	q.buf[q.head] = nil
	q.head++
	if int(q.head) == len(q.buf) {
		q.head = 0
	}
	q.n--
	if q.n == 0 {
		q.head = 0
		if len(q.buf) > keep {
			q.buf = nil
		}
	}
	return msg, true
}

// grow doubles the buffer (at least 2 slots), keeping the order.
func (q *msgQueue) grow() {
	buf := make([]any, max(2*len(q.buf), 2))
	for i := int32(0); i < q.n; i++ {
		j := int(q.head + i)
		if j >= len(q.buf) {
			j -= len(q.buf)
		}
		buf[i] = q.buf[j]
	}
	q.buf, q.head = buf, 0
}
