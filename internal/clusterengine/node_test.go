package clusterengine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/internal/cluster"
	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/partition"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/etcdstore"
)

const (
	testLimit  = 5
	testWindow = 3 * time.Second
	testLease  = 500 * time.Millisecond
	testParts  = 16
)

// harness runs nodes of one cluster over an embedded etcd.
type harness struct {
	t     testing.TB
	etcd  *etcdtest.Cluster
	keys  partition.Keys
	mu    sync.Mutex
	nodes []*testNode
	turn  int
	// engine, when set, adjusts the nodes' engine configuration.
	engine func(*actors.Config)
}

type testNode struct {
	*Node
	name      string
	memberCli *clientv3.Client // the membership's: cut to make the node lose its lease
	storeCli  *clientv3.Client
	cut, gone atomic.Bool
}

func newHarness(t testing.TB) *harness {
	return &harness{t: t, etcd: etcdtest.Start(t, 3), keys: partition.NewKeys("/pinbot-test")}
}

func (h *harness) client() *clientv3.Client {
	h.t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: h.etcd.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		h.t.Fatal(err)
	}
	return cli
}

func (h *harness) start(name string) *testNode {
	h.t.Helper()
	tn := &testNode{name: name, memberCli: h.client(), storeCli: h.client()}
	h.t.Cleanup(func() { tn.memberCli.Close(); tn.storeCli.Close() })
	ecfg := actors.DefaultConfig()
	ecfg.Limit, ecfg.Window, ecfg.Lease = testLimit, testWindow, testLease
	if h.engine != nil {
		h.engine(&ecfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := Start(ctx, Config{
		Client:     tn.storeCli,
		Keys:       h.keys,
		Partitions: testParts,
		Member:     cluster.Config{Client: tn.memberCli, Member: name, Addr: name + ":0", LeaseTTL: 2 * time.Second, Log: zerolog.Nop()},
		Engine:     ecfg,
		Log:        zerolog.Nop(),
	})
	if err != nil {
		h.t.Fatalf("starting node %s: %v", name, err)
	}
	tn.Node = n
	h.t.Cleanup(func() {
		if !tn.gone.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_ = n.Close(ctx)
		}
	})
	h.mu.Lock()
	h.nodes = append(h.nodes, tn)
	h.mu.Unlock()
	return tn
}

// serving returns a live node that serves account, if any; when several
// believe they do (a member cut off that has not noticed yet), each is
// picked in turn, as fronts with different views of the cluster would.
func (h *harness) serving(account string) *testNode {
	h.mu.Lock()
	defer h.mu.Unlock()
	var found []*testNode
	for _, n := range h.nodes {
		if !n.gone.Load() && n.Serves(account) {
			found = append(found, n)
		}
	}
	if len(found) == 0 {
		return nil
	}
	h.turn++
	return found[h.turn%len(found)]
}

// waitServed waits until every account is served by exactly one node.
func (h *harness) waitServed(accounts []string, within time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(within)
	for {
		missing := ""
		for _, a := range accounts {
			if h.serving(a) == nil {
				missing = a
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("account %s served by no node after %v", missing, within)
		}
		time.Sleep(10 * time.Millisecond) // ownership settles through etcd's watches
	}
}

// waitSettled waits until the live nodes hold every partition between
// them, none moving, each some, unchanged for half a second (a node that
// has just joined takes its share one handover at a time).
func (h *harness) waitSettled(within time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(within)
	var last string
	var since time.Time
	for {
		held, settled, shape := 0, true, ""
		h.mu.Lock()
		for _, n := range h.nodes {
			if n.gone.Load() {
				continue
			}
			st := n.Member.Status()
			held += st.Held
			settled = settled && st.Moving == 0 && st.Held > 0
			shape += fmt.Sprint(n.Member.Held())
		}
		h.mu.Unlock()
		switch {
		case !settled || held != testParts:
			last = ""
		case shape != last:
			last, since = shape, time.Now()
		case time.Since(since) >= 500*time.Millisecond:
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("partitions not settled after %v: %d held", within, held)
		}
		time.Sleep(10 * time.Millisecond) // ownership settles through etcd's watches
	}
}

// ledger records every pin the workload made: what Pinterest received.
type ledger struct {
	mu   sync.Mutex
	pins map[string][]time.Time
}

func (l *ledger) add(account string, at time.Time) {
	l.mu.Lock()
	l.pins[account] = append(l.pins[account], at)
	l.mu.Unlock()
}

// check fails the test if some account received more than testLimit pins
// within any testWindow.
func (l *ledger) check(t *testing.T) (total int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for account, ts := range l.pins {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		total += len(ts)
		for i := testLimit; i < len(ts); i++ {
			if ts[i].Sub(ts[i-testLimit]) < testWindow {
				t.Errorf("account %s: %d pins between %s and %s, within %v: over the limit of %d",
					account, testLimit+1, ts[i-testLimit].Format("15:04:05.000"), ts[i].Format("15:04:05.000"), testWindow, testLimit)
				break
			}
		}
	}
	return total
}

func (l *ledger) since(account string, t0 time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ts := range l.pins[account] {
		if ts.After(t0) {
			n++
		}
	}
	return n
}

// workload pins on every account through whichever node serves it, as
// fast as the limit allows, until ctx ends: each slot granted is pinned
// at once and its commit sent.
func workload(ctx context.Context, h *harness, accounts []string, l *ledger, workers int) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; ctx.Err() == nil; i++ {
				account := accounts[i%len(accounts)]
				n := h.serving(account)
				if n == nil {
					time.Sleep(5 * time.Millisecond) // no owner yet: a client's pause before trying again
					continue
				}
				rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				g, err := n.Engine.Reserve(rctx, account, 1)
				if err != nil || g.Granted == 0 {
					cancel()
					time.Sleep(2 * time.Millisecond)
					continue
				}
				at := time.Now()
				l.add(account, at) // the pin is made, whatever becomes of the commit
				_, _ = n.Engine.Commit(rctx, g.Reservations()[0], at)
				cancel()
			}
		})
	}
	return &wg
}

// TestNeverOverTheLimitAcrossFailover runs pins on accounts spread over
// three members while one loses its lease (its etcd session cut, its
// engine still running: as a paused or partitioned process), a fourth
// joins and one leaves gracefully. Pinterest's side of the ledger never
// has more than the limit in any window, every account is served again
// after each change, and no acknowledged pin is forgotten.
func TestNeverOverTheLimitAcrossFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 20 seconds")
	}
	h := newHarness(t)
	var accounts []string
	for i := range 24 {
		accounts = append(accounts, fmt.Sprintf("acct-%02d", i))
	}
	a, b, _ := h.start("a"), h.start("b"), h.start("c")
	h.waitServed(accounts, 20*time.Second)

	l := &ledger{pins: map[string][]time.Time{}}
	ctx, stop := context.WithCancel(context.Background())
	wg := workload(ctx, h, accounts, l, 8)
	defer func() { stop(); wg.Wait() }()

	phase := func(name string, d time.Duration) {
		t.Logf("phase %s", name)
		time.Sleep(d) // the workload runs for the phase's length
	}
	phase("steady", 2*time.Second)

	// a loses its lease: its membership's client is cut; its engine and
	// its store client go on, believing what they believe.
	owned := []string{}
	for _, acct := range accounts {
		if a.Serves(acct) {
			owned = append(owned, acct)
		}
	}
	a.memberCli.Close()
	cutAt := time.Now()
	phase("a cut off", 5*time.Second)
	for _, acct := range owned {
		if a.Serves(acct) {
			t.Fatalf("node a still serves %s %v after its lease was cut", acct, time.Since(cutAt))
		}
	}
	// Service comes back within the lease and an acquisition (about 3 s
	// here); the bound leaves room for a machine busy with other tests.
	h.waitServed(accounts, 20*time.Second)
	a.gone.Store(true)

	_ = h.start("d")
	phase("d joined", 3*time.Second)
	h.waitServed(accounts, 20*time.Second)

	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	if err := b.Close(cctx); err != nil {
		t.Errorf("closing b: %v", err)
	}
	cancel()
	b.gone.Store(true)
	phase("b left", 3*time.Second)
	h.waitServed(accounts, 20*time.Second)
	stop()
	wg.Wait()

	total := l.check(t)
	if total < len(accounts)*testLimit {
		t.Fatalf("%d pins in all, want at least %d: the workload barely ran", total, len(accounts)*testLimit)
	}
	for _, acct := range owned {
		if l.since(acct, cutAt) == 0 {
			t.Errorf("account %s, a's before the cut, got no pin after it", acct)
		}
	}
	// Every pin still in its window is counted by the account's owner.
	checkOwnersCount(t, h, l, accounts)
}

// TestStaleFenceRefused: a node whose partition was taken over while it
// still had a resident actor cannot write: the actor's grant fails with
// ErrFenced and nothing of it reaches the state the new owner reads.
func TestStaleFenceRefused(t *testing.T) {
	h := newHarness(t)
	accounts := []string{"x-1", "x-2", "x-3", "x-4"}
	a := h.start("a")
	h.waitServed(accounts, 20*time.Second)
	ctx := context.Background()
	for _, acct := range accounts {
		if g, err := a.Engine.Reserve(ctx, acct, 1); err != nil || g.Granted != 1 {
			t.Fatalf("Reserve(%s): %+v, %v", acct, g, err)
		}
	}
	// Steal the first account's partition behind a's back: delete its
	// owner key and create it again (a newer tenure, someone else's).
	p := partition.Of(accounts[0], testParts)
	cli := h.etcd.Client()
	if _, err := cli.Delete(ctx, h.keys.Owner(p)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, h.keys.Owner(p), "thief"); err != nil {
		t.Fatal(err)
	}
	// a's actor for the account is resident with its old fence: whatever
	// a believes, its next grant cannot become durable.
	_, err := a.Engine.Reserve(ctx, accounts[0], 1)
	if err == nil {
		t.Fatal("a grant under a stolen partition's old fence succeeded")
	}
	if !errors.Is(err, actors.ErrUnavailable) && !errors.Is(err, actors.ErrNotOwner) {
		t.Fatalf("Reserve under a stale fence: %v, want ErrUnavailable (fenced) or ErrNotOwner", err)
	}
	loaded, err := a.Store.Load(ctx, accounts[0])
	if err != nil {
		t.Fatal(err)
	}
	granted := 0
	for _, e := range loaded.Events {
		granted += int(e.Count)
	}
	granted += len(loaded.Snapshot.Pending)
	if granted != 1 {
		t.Fatalf("stored state holds %d reservations, want the 1 granted before the theft", granted)
	}
}

// TestClockSkewBounds: a member counts every pin for the window plus
// MaxSkew, and acquiring a partition whose stored high-water mark is
// ahead of its clock waits for its clock to pass it, or refuses the
// partition when it is further ahead than the clocks may disagree.
func TestClockSkewBounds(t *testing.T) {
	h := newHarness(t)
	n := h.start("a")
	if got, want := n.Engine.Config().Window, testWindow+DefaultMaxSkew; got != want {
		t.Fatalf("the member's engine window is %v, want the window plus MaxSkew, %v", got, want)
	}
	// Another writer's clock ran ahead: it left the partition of acct-x
	// with a high-water mark in this member's future.
	ctx := context.Background()
	other, err := etcdstore.Open(ctx, h.etcd.Client(), h.keys, etcdstore.Options{Partitions: testParts})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	p := partition.Of("acct-x", testParts)
	// The member alone holds every partition once it has settled; only
	// then is its sleep replaced (acquisitions call it).
	deadline := time.Now().Add(20 * time.Second)
	for st := n.Member.Status(); st.Held != testParts || st.Moving != 0; st = n.Member.Status() {
		if time.Now().After(deadline) {
			t.Fatalf("member holds %d partitions, %d moving; want all %d settled", st.Held, st.Moving, testParts)
		}
		time.Sleep(10 * time.Millisecond) // acquisitions go through etcd
	}
	var slept []time.Duration
	n.sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	for _, tt := range []struct {
		ahead   time.Duration
		refused bool
	}{
		{-time.Second, false},
		{600 * time.Millisecond, false},
		{3 * time.Second, true},
	} {
		slept = nil
		hw := n.Engine.Now().Add(tt.ahead).UnixMilli()
		if err := other.Write(ctx, &persistence.Batch{HighWater: hw, Accounts: []persistence.AccountWrite{{Account: "acct-x", Events: []persistence.Event{{Seq: uint64(hw), Kind: persistence.EventHold, At: 1}}}}}); err != nil {
			t.Fatal(err)
		}
		err := n.catchUp(ctx, p)
		switch {
		case tt.refused && err == nil:
			t.Errorf("a mark %v ahead: partition accepted, want it refused", tt.ahead)
		case !tt.refused && err != nil:
			t.Errorf("a mark %v ahead: %v", tt.ahead, err)
		case !tt.refused && tt.ahead > 0 && (len(slept) != 1 || slept[0] < tt.ahead-100*time.Millisecond || slept[0] > tt.ahead):
			t.Errorf("a mark %v ahead: waited %v, want about %v", tt.ahead, slept, tt.ahead)
		case tt.ahead <= 0 && len(slept) != 0:
			t.Errorf("a mark behind the clock: waited %v, want no wait", slept)
		}
	}
}

// checkOwnersCount fails the test if the owner of some account counts
// fewer pins than were made in its last window: an acknowledged pin
// forgotten.
func checkOwnersCount(t *testing.T, h *harness, l *ledger, accounts []string) {
	t.Helper()
	now := time.Now()
	for _, acct := range accounts {
		n := h.serving(acct)
		if n == nil {
			t.Fatalf("%s served by no node at the end", acct)
		}
		st, err := n.Engine.Status(context.Background(), acct)
		if err != nil {
			t.Fatalf("Status(%s): %v", acct, err)
		}
		recent := 0
		l.mu.Lock()
		for _, ts := range l.pins[acct] {
			if now.Sub(ts) < testWindow-200*time.Millisecond {
				recent++
			}
		}
		l.mu.Unlock()
		if st.Used < recent {
			t.Errorf("account %s: its owner counts %d, but %d pins were made in the last window", acct, st.Used, recent)
		}
	}
}

// TestEngineConfig: a member's engine writes DefaultJournalPipeline
// journal batches at once unless its configuration says how many, counts
// every pin for the window plus MaxSkew, and asks the node who owns an
// account.
func TestEngineConfig(t *testing.T) {
	n := &Node{}
	for _, tt := range []struct{ set, want int }{{0, DefaultJournalPipeline}, {1, 1}, {7, 7}} {
		ecfg := actors.DefaultConfig()
		ecfg.JournalPipeline = tt.set
		got := n.engineConfig(Config{Engine: ecfg, MaxSkew: time.Second})
		if got.JournalPipeline != tt.want {
			t.Errorf("Engine.JournalPipeline %d: the engine gets %d, want %d", tt.set, got.JournalPipeline, tt.want)
		}
		if got.Window != ecfg.Window+time.Second || got.Owner == nil || got.Recover {
			t.Errorf("engine's Window %v (want %v), Owner set %v, Recover %v", got.Window, ecfg.Window+time.Second, got.Owner != nil, got.Recover)
		}
	}
}
