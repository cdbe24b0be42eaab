package actors

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

type seqMsg struct {
	from, n int
	wg      *sync.WaitGroup
}

type seqActor struct {
	last []int
	bad  *atomic.Int64
	got  *atomic.Int64
}

func (s *seqActor) Receive(c actor.Context) {
	if m, ok := c.Message().(*seqMsg); ok {
		if m.n != s.last[m.from]+1 {
			s.bad.Add(1)
		}
		s.last[m.from] = m.n
		s.got.Add(1)
		m.wg.Done()
	}
}

// TestAccountMailboxOrder: with the engine's mailbox and dispatcher, each
// sender's messages arrive in order and none is lost.
func TestAccountMailboxOrder(t *testing.T) {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	defer sys.Shutdown()
	const senders, per = 16, 5000
	var bad, got atomic.Int64
	props := actor.PropsFromProducer(func() actor.Actor { return &seqActor{last: make([]int, senders), bad: &bad, got: &got} },
		accountPropsOptions(newAccountMailbox)...)
	pid := sys.Root.Spawn(props)
	var wg sync.WaitGroup
	wg.Add(senders * per)
	var swg sync.WaitGroup
	for s := 0; s < senders; s++ {
		swg.Add(1)
		go func() {
			defer swg.Done()
			for i := 1; i <= per; i++ {
				sys.Root.Send(pid, &seqMsg{from: s, n: i, wg: &wg})
			}
		}()
	}
	all := make(chan struct{})
	go func() { swg.Wait(); wg.Wait(); close(all) }()
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Fatalf("%d of %d messages arrived", got.Load(), senders*per)
	}
	if bad.Load() != 0 || got.Load() != senders*per {
		t.Fatalf("%d messages out of their sender's order; %d of %d arrived", bad.Load(), got.Load(), senders*per)
	}
}

// fakeInvoker records what the mailbox hands it. onUser, when set, runs
// inside the turn of each user message (to post more, or to panic).
type fakeInvoker struct {
	got        []string
	onUser     func(msg any)
	onSys      func(msg any)
	onEscalate func()
	escalated  []any
}

func (f *fakeInvoker) InvokeSystemMessage(msg any) {
	f.got = append(f.got, "sys:"+msg.(string))
	if f.onSys != nil {
		f.onSys(msg)
	}
}

func (f *fakeInvoker) InvokeUserMessage(msg any) {
	if msg == nil {
		msg = "<nil>"
	}
	f.got = append(f.got, "user:"+msg.(string))
	if f.onUser != nil {
		f.onUser(msg)
	}
}

func (f *fakeInvoker) EscalateFailure(reason any, msg any) {
	f.escalated = append(f.escalated, reason, msg)
	if f.onEscalate != nil {
		f.onEscalate()
	}
}

func newTestMailbox(inv *fakeInvoker, throughput int) *accountMailbox {
	m := newAccountMailbox().(*accountMailbox)
	m.RegisterHandlers(inv, actor.NewSynchronizedDispatcher(throughput))
	m.Start()
	return m
}

func wantServed(t *testing.T, inv *fakeInvoker, want ...string) {
	t.Helper()
	if !slices.Equal(inv.got, want) {
		t.Fatalf("served %q, want %q", inv.got, want)
	}
}

// TestAccountMailboxServesOnThePostingGoroutine: a message to an idle
// mailbox is served before PostUserMessage returns, as with protoactor's
// synchronized dispatcher, which the registry relies on.
func TestAccountMailboxServesOnThePostingGoroutine(t *testing.T) {
	inv := &fakeInvoker{}
	m := newTestMailbox(inv, 300)
	m.PostUserMessage("a")
	wantServed(t, inv, "user:a")
	m.PostSystemMessage("s")
	wantServed(t, inv, "user:a", "sys:s")
	m.PostUserMessage(nil) // delivered like any other, as when queued
	wantServed(t, inv, "user:a", "sys:s", "user:<nil>")
	if m.running || m.UserMessageCount() != 0 {
		t.Fatalf("running %v, %d queued after the turns ended", m.running, m.UserMessageCount())
	}
}

// TestAccountMailboxSystemFirst: messages posted during a turn wait for
// it; system messages are then served before user messages, and each kind
// in the order posted.
func TestAccountMailboxSystemFirst(t *testing.T) {
	inv := &fakeInvoker{}
	m := newTestMailbox(inv, 300)
	inv.onUser = func(msg any) {
		if msg == "first" {
			m.PostUserMessage("u1")
			m.PostSystemMessage("s1")
			m.PostUserMessage("u2")
			m.PostSystemMessage("s2")
			if n := m.UserMessageCount(); n != 2 {
				t.Errorf("UserMessageCount %d during the turn, want 2", n)
			}
		}
	}
	m.PostUserMessage("first")
	wantServed(t, inv, "user:first", "sys:s1", "sys:s2", "user:u1", "user:u2")
}

// TestAccountMailboxSuspend: a suspended mailbox serves system messages
// and holds user messages back until it is resumed, in their order.
func TestAccountMailboxSuspend(t *testing.T) {
	inv := &fakeInvoker{}
	m := newTestMailbox(inv, 300)
	m.PostSystemMessage(&actor.SuspendMailbox{})
	m.PostUserMessage("u1")
	m.PostUserMessage("u2")
	m.PostSystemMessage("s1")
	wantServed(t, inv, "sys:s1")
	if n := m.UserMessageCount(); n != 2 {
		t.Fatalf("UserMessageCount %d while suspended, want 2", n)
	}
	m.PostSystemMessage(&actor.ResumeMailbox{})
	wantServed(t, inv, "sys:s1", "user:u1", "user:u2")
	m.PostUserMessage("u3")
	wantServed(t, inv, "sys:s1", "user:u1", "user:u2", "user:u3")
}

// TestAccountMailboxPanic: a panic in a turn is escalated with the
// message that caused it, and serving goes on with what the escalation
// queued: as protoactor does, the mailbox is suspended, the supervisor's
// restart is served, its resume releases the user message queued
// behind the failed one.
func TestAccountMailboxPanic(t *testing.T) {
	inv := &fakeInvoker{}
	m := newTestMailbox(inv, 300)
	inv.onUser = func(msg any) {
		if msg == "boom" {
			m.PostUserMessage("after")
			panic("boom!")
		}
	}
	inv.onEscalate = func() {
		m.PostSystemMessage(&actor.SuspendMailbox{})
		m.PostSystemMessage("restart")
	}
	inv.onSys = func(msg any) {
		if msg == "restart" {
			m.PostSystemMessage(&actor.ResumeMailbox{})
		}
	}
	m.PostUserMessage("boom")
	if len(inv.escalated) != 2 || inv.escalated[0] != "boom!" || inv.escalated[1] != "boom" {
		t.Fatalf("escalated %v, want reason boom! for message boom", inv.escalated)
	}
	wantServed(t, inv, "user:boom", "sys:restart", "user:after")
	if m.running {
		t.Fatal("mailbox still marked running after the panic's turn")
	}
}

// TestAccountMailboxYields: a turn longer than the throughput yields and
// still serves everything, in order.
func TestAccountMailboxYields(t *testing.T) {
	inv := &fakeInvoker{}
	m := newTestMailbox(inv, 3)
	var want []string
	inv.onUser = func(msg any) {
		if msg == "0" {
			for i := 1; i < 20; i++ {
				m.PostUserMessage(fmt.Sprint(i))
			}
		}
	}
	m.PostUserMessage("0")
	for i := 0; i < 20; i++ {
		want = append(want, "user:"+fmt.Sprint(i))
	}
	wantServed(t, inv, want...)
}

// TestMsgQueueModel checks the ring against a slice over random pushes
// and pops, and that a drained queue keeps only a small buffer (a user
// queue's), or none (a system queue's).
func TestMsgQueueModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var q msgQueue
	var model []any
	keep := keepUserQueue
	for step := 0; step < 20000; step++ {
		if r.IntN(100) < 55 || len(model) == 0 && r.IntN(2) == 0 {
			burst := 1 + r.IntN(12)
			for i := 0; i < burst; i++ {
				q.push(step*100 + i)
				model = append(model, step*100+i)
			}
		} else {
			got, ok := q.pop(keep)
			if len(model) == 0 {
				if ok {
					t.Fatalf("step %d: popped %v from an empty queue", step, got)
				}
				continue
			}
			if !ok || got != model[0] {
				t.Fatalf("step %d: popped %v, %v; want %v", step, got, ok, model[0])
			}
			model = model[1:]
		}
		if q.len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, q.len(), len(model))
		}
		if step == 10000 {
			keep = 0 // a system queue's
		}
		if q.len() == 0 && len(q.buf) > keep {
			t.Fatalf("step %d: a drained queue keeps %d slots", step, len(q.buf))
		}
	}
}

// TestAccountMailboxKeepsNoSystemQueue: after a start (a system message,
// which every actor gets) and requests that never wait, the mailbox keeps
// no buffer.
func TestAccountMailboxKeepsNoSystemQueue(t *testing.T) {
	inv := &fakeInvoker{}
	m := newTestMailbox(inv, 300)
	m.PostSystemMessage("started")
	for i := 0; i < 3; i++ {
		m.PostUserMessage(fmt.Sprint(i))
	}
	wantServed(t, inv, "sys:started", "user:0", "user:1", "user:2")
	if m.sys.buf != nil || m.user.buf != nil {
		t.Fatalf("idle mailbox keeps buffers of %d system and %d user slots", len(m.sys.buf), len(m.user.buf))
	}
}
