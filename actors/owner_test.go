package actors

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
	"github.com/rs/zerolog"
)

// ownerStore records, per account, how often its state was loaded and the
// fence of every write of it.
type ownerStore struct {
	persistence.Store
	mu     sync.Mutex
	loads  map[string]int
	fences map[string][]string
	scans  int // JobAccounts calls
}

func (s *ownerStore) JobAccounts(ctx context.Context, fn func(string) error) error {
	s.mu.Lock()
	s.scans++
	s.mu.Unlock()
	return s.Store.JobAccounts(ctx, fn)
}

func newOwnerStore(inner persistence.Store) *ownerStore {
	return &ownerStore{Store: inner, loads: map[string]int{}, fences: map[string][]string{}}
}

func (s *ownerStore) Load(ctx context.Context, account string) (persistence.Loaded, error) {
	s.mu.Lock()
	s.loads[account]++
	s.mu.Unlock()
	return s.Store.Load(ctx, account)
}

func (s *ownerStore) Write(ctx context.Context, b *persistence.Batch) error {
	s.mu.Lock()
	for _, w := range b.Accounts {
		s.fences[w.Account] = append(s.fences[w.Account], string(w.Fence))
	}
	s.mu.Unlock()
	return s.Store.Write(ctx, b)
}

func (s *ownerStore) seen(account string) (loads int, fences []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loads[account], slices.Clone(s.fences[account])
}

// owners is a Config.Owner whose answers the test sets per account.
type owners struct {
	mu     sync.Mutex
	fences map[string]string // absent: not owned
	asked  map[string]int
}

var errElsewhere = errors.New("owned by another member")

func (o *owners) owner(account string) ([]byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.asked == nil {
		o.asked = map[string]int{}
	}
	o.asked[account]++
	f, ok := o.fences[account]
	if !ok {
		return nil, errElsewhere
	}
	return []byte(f), nil
}

func (o *owners) set(account, fence string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if fence == "" {
		delete(o.fences, account)
	} else {
		o.fences[account] = fence
	}
}

func startOwned(t *testing.T, clock *ManualClock, store persistence.Store, o *owners) *Engine {
	t.Helper()
	cfg := testConfig(clock)
	cfg.Owner = o.owner
	eng, err := New(cfg, store, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	return eng
}

// TestOwnerRefusesBeforeLoading: a request for an account the engine does
// not own fails with ErrNotOwner, wrapping the owner's reason, before any
// actor is spawned or any state read; the accounts it owns are served, and
// every write of theirs carries the account's own fence.
func TestOwnerRefusesBeforeLoading(t *testing.T) {
	ctx := context.Background()
	clock := NewManualClock(monday)
	store := newOwnerStore(persistencetest.NewMemStore(clock.Now))
	o := &owners{fences: map[string]string{"mine": "fence-7", "also": "fence-9"}}
	eng := startOwned(t, clock, store, o)

	g, err := eng.Reserve(ctx, "theirs", 1)
	if !errors.Is(err, ErrNotOwner) || !errors.Is(err, errElsewhere) || g.Granted != 0 {
		t.Fatalf("Reserve of an account not owned = %+v, %v; want ErrNotOwner wrapping the owner's error", g, err)
	}
	if _, err := eng.Status(ctx, "theirs"); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("Status of an account not owned: %v, want ErrNotOwner", err)
	}
	if loads, fences := store.seen("theirs"); loads != 0 || len(fences) != 0 {
		t.Fatalf("an account not owned was loaded %d times and written %q", loads, fences)
	}
	if n := eng.Resident(); n != 0 {
		t.Fatalf("%d actors resident after refusals, want 0", n)
	}
	o.mu.Lock()
	asked := o.asked["theirs"]
	o.mu.Unlock()
	if asked != 2 {
		// An actor spawned for it would have asked again at its load.
		t.Fatalf("owner asked %d times about 2 refused requests, want 2: an actor was spawned", asked)
	}

	for _, account := range []string{"mine", "also"} {
		if g, err := eng.Reserve(ctx, account, 2); err != nil || g.Granted != 2 {
			t.Fatalf("Reserve(%s) = %+v, %v", account, g, err)
		}
	}
	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for account, want := range map[string]string{"mine": "fence-7", "also": "fence-9"} {
		_, fences := store.seen(account)
		if len(fences) < 2 {
			t.Fatalf("%s: %d writes, want the grant's and the snapshot at close at least", account, len(fences))
		}
		for _, f := range fences {
			if f != want {
				t.Fatalf("%s written under fences %q, want every one %q", account, fences, want)
			}
		}
	}
}

// TestOwnerLostAtLoad: an account whose owner changed between the
// registry's check and the actor's load is refused by the load, and
// served again once owned.
func TestOwnerLostAtLoad(t *testing.T) {
	ctx := context.Background()
	clock := NewManualClock(monday)
	o := &owners{fences: map[string]string{}}
	checks := 0
	cfg := testConfig(clock)
	cfg.Owner = func(account string) ([]byte, error) {
		checks++ // one goroutine: the test's requests run the actor's turns
		if checks == 1 {
			return []byte("f1"), nil // the registry's check passes ...
		}
		return o.owner(account) // ... the load's does not
	}
	eng, err := New(cfg, persistencetest.NewMemStore(clock.Now), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(ctx)
	if _, err := eng.Reserve(ctx, "a", 1); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("Reserve with the account lost before its load: %v, want ErrNotOwner", err)
	}
	o.set("a", "f2")
	if g, err := eng.Reserve(ctx, "a", 1); err != nil || g.Granted != 1 {
		t.Fatalf("Reserve once owned again: %+v, %v", g, err)
	}
}

// TestDropStopsWithoutWriting: Drop stops the matching accounts' actors
// without a snapshot or any other write, takes their due instants out of
// the job timer, and leaves the others alone; the accounts come back,
// loaded afresh, once owned again.
func TestDropStopsWithoutWriting(t *testing.T) {
	ctx := context.Background()
	clock := NewManualClock(monday)
	store := newOwnerStore(persistencetest.NewMemStore(clock.Now))
	o := &owners{fences: map[string]string{"lost": "f1", "kept": "f1"}}
	eng := startOwned(t, clock, store, o)
	if err := eng.ServeJobs(func(Job) {}); err != nil {
		t.Fatal(err)
	}
	for _, account := range []string{"lost", "kept"} {
		// Fill the window so that the queued job waits in the timer.
		for range eng.Config().Limit / 10 {
			if g, err := eng.Reserve(ctx, account, 10); err != nil || g.Granted != 10 {
				t.Fatalf("Reserve(%s): %+v, %v", account, g, err)
			}
		}
		if _, err := eng.Enqueue(ctx, account, [][]byte{[]byte("later")}); err != nil {
			t.Fatal(err)
		}
	}
	if n := eng.QueuedAccounts(); n != 2 {
		t.Fatalf("%d accounts in the job timer, want 2", n)
	}
	_, before := store.seen("lost")

	o.set("lost", "") // the cluster refuses it first, then drops it
	if n := eng.Drop(func(a string) bool { return a == "lost" }); n != 1 {
		t.Fatalf("Drop asked %d actors to stop, want 1", n)
	}
	if n := eng.QueuedAccounts(); n != 1 {
		t.Fatalf("%d accounts in the job timer after Drop, want 1 (kept)", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for eng.Resident() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d actors resident long after Drop, want 1", eng.Resident())
		}
		time.Sleep(time.Millisecond) // the actor stops on a goroutine of its own
	}
	if _, after := store.seen("lost"); len(after) != len(before) {
		t.Fatalf("the dropped account was written after Drop: %q then %q", before, after)
	}
	if _, err := eng.Status(ctx, "lost"); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("Status of the dropped account: %v, want ErrNotOwner", err)
	}
	if st, err := eng.Status(ctx, "kept"); err != nil || st.Used != eng.Config().Limit {
		t.Fatalf("the kept account: %+v, %v", st, err)
	}

	o.set("lost", "f2") // owned again, at a newer fence
	loads, _ := store.seen("lost")
	st, err := eng.Status(ctx, "lost")
	if err != nil || st.Used != eng.Config().Limit || st.Queued != 1 {
		t.Fatalf("the account owned again: %+v, %v; want its stored state", st, err)
	}
	if again, _ := store.seen("lost"); again != loads+1 {
		t.Fatalf("loads %d then %d: the account was not loaded afresh", loads, again)
	}
}

// TestAdoptHandsOutRecovered: an engine serving only the accounts it owns
// does not scan the store's queues at ServeJobs; Adopt makes an acquired
// account due, and the job its previous owner left running comes back
// Recovered, once; an adopted account owned elsewhere is not served: its
// running job stays its owner's.
func TestAdoptHandsOutRecovered(t *testing.T) {
	ctx := context.Background()
	clock := NewManualClock(monday)
	mem := persistencetest.NewMemStore(clock.Now)

	// The previous owner starts a job and dies before finishing it.
	started := make(chan Job, 1)
	prev, err := New(testConfig(clock), mem, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := prev.ServeJobs(func(j Job) { started <- j }); err != nil {
		t.Fatal(err)
	}
	for _, account := range []string{"a", "elsewhere"} {
		if _, err := prev.Enqueue(ctx, account, [][]byte{[]byte("pin")}); err != nil {
			t.Fatal(err)
		}
		<-started
	}
	if err := prev.Close(ctx); err != nil {
		t.Fatal(err)
	}

	o := &owners{fences: map[string]string{"a": "f2"}}
	store := newOwnerStore(mem)
	eng := startOwned(t, clock, store, o)
	handed := make(chan Job, 4)
	if err := eng.ServeJobs(func(j Job) { handed <- j }); err != nil {
		t.Fatal(err)
	}
	if n := eng.QueuedAccounts(); n != 0 {
		t.Fatalf("%d accounts in the timer before Adopt, want 0", n)
	}
	n, err := eng.Adopt(func(fn func(string) error) error {
		for _, account := range []string{"a", "elsewhere"} {
			if err := fn(account); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || n != 2 {
		t.Fatalf("Adopt = %d, %v; want 2, nil", n, err)
	}
	select {
	case j := <-handed:
		if j.Account != "a" || !j.Recovered {
			t.Fatalf("handed out %+v, want a's job, recovered", j)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the adopted account's running job was not handed out")
	}
	deadline := time.Now().Add(10 * time.Second)
	for eng.QueuedAccounts() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d accounts left in the timer, want 0", eng.QueuedAccounts())
		}
		time.Sleep(time.Millisecond) // the timer wakes the actors on goroutines of their own
	}
	select {
	case j := <-handed:
		t.Fatalf("a second job handed out: %+v", j)
	default:
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if store.scans != 0 {
		t.Fatalf("the store's every queue was scanned %d times, want none: Adopt names the accounts", store.scans)
	}
}

// TestPassivateHandsOver: Passivate stops the matching accounts' actors
// with their snapshots durable (the next owner loads everything), takes
// them out of the job timer, and leaves the others resident.
func TestPassivateHandsOver(t *testing.T) {
	ctx := context.Background()
	clock := NewManualClock(monday)
	mem := persistencetest.NewMemStore(clock.Now)
	store := newOwnerStore(mem)
	o := &owners{fences: map[string]string{"moving": "f1", "staying": "f1"}}
	eng := startOwned(t, clock, store, o)
	for _, account := range []string{"moving", "staying"} {
		if g, err := eng.Reserve(ctx, account, 3); err != nil || g.Granted != 3 {
			t.Fatalf("Reserve(%s): %+v, %v", account, g, err)
		}
	}
	_, before := store.seen("moving")
	o.set("moving", "")
	if err := eng.Passivate(ctx, func(a string) bool { return a == "moving" }); err != nil {
		t.Fatal(err)
	}
	if n := eng.Resident(); n != 1 {
		t.Fatalf("%d actors resident after Passivate, want 1 (staying)", n)
	}
	if _, after := store.seen("moving"); len(after) != len(before)+1 {
		t.Fatalf("writes of the handed-over account: %q then %q, want one more (its snapshot)", before, after)
	}
	got, err := mem.Load(ctx, "moving")
	if err != nil || got.Snapshot.Seq == 0 || len(got.Events) != 0 || len(got.Snapshot.Pending) != 3 {
		t.Fatalf("stored state of the handed-over account: %+v, %v; want a snapshot of its 3 reservations", got, err)
	}
}

// TestFinishNotOwnerHandsOutAgain: a job whose account stopped being
// served while it ran, and whose Finish is refused with ErrNotOwner, is
// no longer its caller's: once the engine serves the account again, the
// job comes back recovered, once, with its slot (before, the engine kept
// it as held by the caller that gave up, and it stayed running forever).
func TestFinishNotOwnerHandsOutAgain(t *testing.T) {
	ctx := context.Background()
	clock := NewManualClock(monday)
	o := &owners{fences: map[string]string{"a": "f1"}}
	eng := startOwned(t, clock, persistencetest.NewMemStore(clock.Now), o)
	handed := make(chan Job, 4)
	if err := eng.ServeJobs(func(j Job) { handed <- j }); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Enqueue(ctx, "a", [][]byte{[]byte("pin")}); err != nil {
		t.Fatal(err)
	}
	first := <-handed
	if first.Recovered {
		t.Fatalf("first start %+v is recovered", first)
	}

	o.set("a", "") // the partition is lost while the job runs
	eng.Drop(func(a string) bool { return a == "a" })
	deadline := time.Now().Add(10 * time.Second)
	for eng.Resident() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the dropped account stays resident")
		}
		time.Sleep(time.Millisecond) // the actor stops on a goroutine of its own
	}
	if _, err := eng.Finish(ctx, first, Outcome{Retry: true}); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("Finish of a job whose account is not served: %v, want ErrNotOwner", err)
	}

	o.set("a", "f2") // acquired again
	if _, err := eng.Adopt(func(fn func(string) error) error { return fn("a") }); err != nil {
		t.Fatal(err)
	}
	select {
	case j := <-handed:
		if !j.Recovered || j.ID != first.ID || j.Slot.ID != first.Slot.ID {
			t.Fatalf("handed out %+v, want job %d with slot %d, recovered", j, first.ID, first.Slot.ID)
		}
		if _, err := eng.Finish(ctx, j, Outcome{Absent: true, Retry: true}); err != nil {
			t.Fatalf("Finish of the recovered job: %v", err)
		}
		clock.Advance(time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("the job given up on was not handed out again")
	}
	select {
	case j := <-handed:
		// Proven absent, it goes back to the queue and starts anew.
		if j.Recovered || j.ID != first.ID {
			t.Fatalf("handed out %+v, want job %d started anew", j, first.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the job proven absent did not start again")
	}
}
