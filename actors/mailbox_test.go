package actors

import (
	"log/slog"
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

// TestProtoactorLockfreeMailboxOrder: with the engine's mailbox and
// dispatcher, each sender's messages arrive in order and none is lost.
func TestProtoactorLockfreeMailboxOrder(t *testing.T) {
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	defer sys.Shutdown()
	const senders, per = 16, 5000
	var bad, got atomic.Int64
	props := actor.PropsFromProducer(func() actor.Actor { return &seqActor{last: make([]int, senders), bad: &bad, got: &got} },
		accountPropsOptions()...)
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
