package actors

import (
	"errors"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// parkingConfig makes accounts park after an hour without a request (by
// the engine clock) and leave memory after thirty days: the background
// sweeps, paced by the wall clock, never come in a test's way, and the
// tests run the sweeps themselves.
func parkingConfig(c *Config) {
	c.ParkAfter = time.Hour
	c.IdleTimeout = 30 * 24 * time.Hour
}

// park runs idle sweeps until account parks: the first sweep after a use
// asks nobody, the next snapshots the state (or parks when it is stored),
// the one after parks it.
func (f *engineFixture) park(account string) {
	f.t.Helper()
	if f.eng.reg.peekParked(account) != nil {
		return
	}
	for range 3 {
		f.eng.reg.sweepIdle()
		if err := f.eng.journal.Flush(f.ctx); err != nil {
			f.t.Fatal(err)
		}
	}
	// Other idle accounts park too.
	for got := ""; got != account; {
		select {
		case got = <-f.parked:
		case <-time.After(10 * time.Second):
			f.t.Fatalf("%s did not park", account)
		}
	}
	if f.eng.reg.peekParked(account) == nil {
		f.t.Fatalf("%s parked but not in the slab", account)
	}
}

// sweeps runs n idle sweeps, each followed by a flush of the journal,
// whose errors the caller looks at otherwise.
func (f *engineFixture) sweeps(n int) {
	for range n {
		f.eng.reg.sweepIdle()
		_ = f.eng.journal.Flush(f.ctx)
	}
}

// noneParked fails if an account parked.
func (f *engineFixture) noneParked() {
	f.t.Helper()
	select {
	case got := <-f.parked:
		f.t.Fatalf("%s parked", got)
	default:
	}
}

func TestParkSlabRoundTrip(t *testing.T) {
	var s slab
	s.init()
	mk := func(n int, fence []byte) *parked {
		p := &parked{slot: parkSlot{winBase: 1 << 40, winLimit: uint32(max(n, 1)), seq: uint64(n) + 7, snapSeq: uint64(n) + 7, nextID: 99, hold: 5, lastUsed: int64(n)}, fence: fence}
		for i := range n {
			p.ring = append(p.ring, uint32(i*1000+1))
		}
		if fence != nil {
			p.slot.hasFence = true
		}
		return p
	}
	sizes := []int{0, 3, 4, 5, 8, 9, 16, 17, 100, 129}
	want := map[string]*parked{}
	for i, n := range sizes {
		var fence []byte
		if i%2 == 1 {
			fence = []byte{byte(i), 1, 2}
		}
		account := "acct-" + string(rune('a'+i))
		p := mk(n, fence)
		// Every account hashes alike: the chain tells them apart.
		s.put(account, 42, p)
		want[account] = p
	}
	if s.n != len(sizes) {
		t.Fatalf("n = %d", s.n)
	}
	check := func(account string, p *parked) {
		t.Helper()
		i := s.find(account, 42)
		if i < 0 {
			t.Fatalf("%s not found", account)
		}
		got := s.get(i)
		if len(got.ring) != len(p.ring) || (len(p.ring) > 0 && !reflect.DeepEqual(got.ring, p.ring)) {
			t.Fatalf("%s ring %v, want %v", account, got.ring, p.ring)
		}
		if string(got.fence) != string(p.fence) || (got.fence == nil) != (p.fence == nil) {
			t.Fatalf("%s fence %q, want %q", account, got.fence, p.fence)
		}
		g, w := got.slot, p.slot
		for _, sl := range []*parkSlot{&g, &w} {
			sl.hash, sl.next, sl.nameOff, sl.nameLen, sl.fenceLen, sl.live = 0, 0, 0, 0, 0, false
			sl.ringN, sl.ringAt, sl.class, sl.inline = 0, 0, 0, [smallRing]uint32{}
		}
		if g != w {
			t.Fatalf("%s slot %+v, want %+v", account, g, w)
		}
	}
	for account, p := range want {
		check(account, p)
	}
	// Take every other one back; the rest are unchanged, and freed slots
	// and chunks are reused.
	for i := 0; i < len(sizes); i += 2 {
		account := "acct-" + string(rune('a'+i))
		if p := s.take(account, 42); p == nil {
			t.Fatalf("take %s: nothing", account)
		}
		delete(want, account)
	}
	if s.find("acct-a", 42) >= 0 {
		t.Fatal("acct-a still parked after take")
	}
	for account, p := range want {
		check(account, p)
	}
	slots := len(s.slots)
	s.put("again", 42, mk(100, nil))
	if len(s.slots) != slots {
		t.Fatalf("slots %d after reuse, want %d", len(s.slots), slots)
	}
	check("again", mk(100, nil))
	for account := range want {
		s.take(account, 42)
	}
	s.take("again", 42)
	if s.n != 0 || len(s.index) != 0 || len(s.arena) != 0 {
		t.Fatalf("emptied slab keeps n %d, index %d, arena %d", s.n, len(s.index), len(s.arena))
	}
}

// placed returns p without where its slab put it (slot, chunk, arena).
func placed(p *parked) parked {
	q := *p
	q.slot.hash, q.slot.next, q.slot.nameOff, q.slot.nameLen, q.slot.fenceLen = 0, 0, 0, 0, 0
	q.slot.ringN, q.slot.ringAt, q.slot.class, q.slot.inline, q.slot.live = 0, 0, 0, [smallRing]uint32{}, false
	return q
}

// TestParkRoundTrip: an account at its limit, then with pins on both
// sides of the window's edge, parks and comes back with the same state,
// from the slab, not the store, and frees its slots at exactly the same
// instants.
func TestParkRoundTrip(t *testing.T) {
	f := newFixture(t, parkingConfig)
	start := time.UnixMilli(f.clock.Now())
	f.fill("a", 60)
	f.clock.Advance(3 * time.Hour)
	f.fill("a", 40)
	if g := f.reserve("a", 1); g.Granted != 0 {
		t.Fatalf("granted %d at the limit", g.Granted)
	}
	f.clock.Advance(time.Hour)
	loads := f.store.Counts().Loads
	survey := func() Status {
		t.Helper()
		now := f.clock.Now()
		st, err := f.eng.surveyOne(f.ctx, "a", now, newTimeline(now, DefaultWindow.Milliseconds(), time.Hour.Milliseconds()))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// roundTrip parks "a", brings it back with a request that is no use
	// of the account (lastUsed and served unchanged) and parks it again:
	// the same state, the same status parked and live.
	roundTrip := func() {
		t.Helper()
		f.park("a")
		p1 := placed(f.eng.reg.peekParked("a"))
		parked := survey()
		r, err := f.eng.call(f.ctx, "a", request{op: opSurvey})
		if err != nil {
			t.Fatal(err)
		}
		if f.eng.reg.peekParked("a") != nil {
			t.Fatal("parked and live at once")
		}
		if r.status != parked {
			t.Fatalf("status live %+v, parked %+v", r.status, parked)
		}
		f.park("a")
		if p2 := placed(f.eng.reg.peekParked("a")); !reflect.DeepEqual(p1, p2) {
			t.Fatalf("after a round trip\n%+v\nwant\n%+v", p2, p1)
		}
		if got := f.store.Counts().Loads; got != loads {
			t.Fatalf("%d loads from the store to unpark", got-loads)
		}
	}
	roundTrip()
	if p := f.eng.reg.peekParked("a"); len(p.ring) != 100 || p.slot.winLimit != 100 {
		t.Fatalf("parked ring holds %d of %d", len(p.ring), p.slot.winLimit)
	}
	// The first 60 pins count until exactly 12h after start.
	edge := start.Add(DefaultWindow)
	f.clock.Set(edge.Add(-time.Millisecond))
	roundTrip()
	if st := survey(); st.Used != 100 || st.Free() != 0 || !st.NextFree.Equal(edge) {
		t.Fatalf("a millisecond before the edge: %+v", st)
	}
	f.clock.Set(edge)
	if st := survey(); st.Used != 40 || st.Free() != 60 {
		t.Fatalf("at the edge: %+v", st)
	}
	f.fill("a", MaxBatch) // unparks it
	if got := f.store.Counts().Loads; got != loads {
		t.Fatalf("%d loads from the store to unpark", got-loads)
	}
	// The ring now holds pins that no longer count next to those that do.
	f.clock.Advance(time.Hour)
	roundTrip()
	if st := survey(); st.Used != 50 {
		t.Fatalf("after the edge: %+v", st)
	}
	if g := f.reserve("a", MaxBatch); g.Granted != MaxBatch || g.Used != 60 {
		t.Fatalf("after the edge: %+v", g)
	}
}

// TestParkSnapshotsFirst: an account whose state is not stored whole
// snapshots it first, and parks only once that snapshot is durable.
func TestParkSnapshotsFirst(t *testing.T) {
	f := newFixture(t, parkingConfig)
	f.fill("a", 3)
	f.clock.Advance(time.Hour)
	f.eng.reg.sweepIdle() // used this epoch: not asked
	f.store.FailWrites(persistencetest.ErrDiskFull)
	f.eng.reg.sweepIdle() // asked: snapshots, which fails
	_ = f.eng.journal.Flush(f.ctx)
	f.sweeps(3)
	f.noneParked()
	if f.eng.reg.peekParked("a") != nil {
		t.Fatal("parked without its state stored")
	}
	// A later sweep snapshots again, and that one lands.
	f.store.ClearFaults()
	f.park("a")
	l, err := f.mem.Load(f.ctx, "a")
	if err != nil || len(l.Events) != 0 || len(l.Snapshot.Committed) != 3 {
		t.Fatalf("stored when parked: %+v, %v", l, err)
	}
}

// TestParkNotWithPending: a reservation not yet resolved keeps the actor.
func TestParkNotWithPending(t *testing.T) {
	f := newFixture(t, parkingConfig)
	g := f.reserve("a", 1)
	f.clock.Advance(time.Hour)
	f.sweeps(4)
	f.noneParked()
	if _, err := f.eng.Commit(f.ctx, g.Reservations()[0], f.eng.Now()); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Hour)
	f.park("a")
}

// TestParkRaceServedBeforeStop: a request served after the actor decided
// to park but before it stopped changes the state: the actor stops as
// after its idle timeout (the state stored), and the account does not
// park; the next request loads it.
func TestParkRaceServedBeforeStop(t *testing.T) {
	f := newFixture(t, parkingConfig)
	f.fill("a", 2)
	f.clock.Advance(time.Hour)
	f.park("a")
	f.status("a") // unparked
	f.clock.Advance(time.Hour)
	// Hold the actor's user messages back, queue the idle check and a
	// Reserve behind it, and let both be served in one turn.
	sh := f.eng.reg.shard("a")
	sh.mu.RLock()
	e := sh.m["a"]
	sh.mu.RUnlock()
	f.eng.reg.epoch.Add(2) // the sweep below asks "a"
	e.mailbox.PostSystemMessage(&actor.SuspendMailbox{})
	f.eng.reg.sweepIdle()
	reply := make(chan response, 1)
	if err := f.eng.reg.send(f.ctx, "a", &request{op: opReserve, n: 1, reply: reply}); err != nil {
		t.Fatal(err)
	}
	e.mailbox.PostSystemMessage(&actor.ResumeMailbox{})
	r := <-reply
	if r.err != nil || r.granted != 1 {
		t.Fatalf("reserve: %+v", r)
	}
	if got := <-f.stops; got != "a" {
		t.Fatalf("stopped %q", got)
	}
	f.noneParked()
	if f.eng.reg.peekParked("a") != nil || f.eng.Resident() != 0 {
		t.Fatalf("parked with a reservation pending; resident %d", f.eng.Resident())
	}
	st := f.status("a")
	if st.Used != 3 || st.Pending != 1 {
		t.Fatalf("reloaded: %+v", st)
	}
	if _, err := f.eng.Commit(f.ctx, Reservation{Account: "a", ID: r.first}, f.eng.Now()); err != nil {
		t.Fatal(err)
	}
}

// TestParkRaceLimit: callers reserving and committing on one account
// while it parks and unparks over and over are never granted more than
// the limit, and every pin granted is counted, live and after a restart.
// Each round the engine clock moves on by ParkAfter and a sweep runs
// while the callers send their next requests.
func TestParkRaceLimit(t *testing.T) {
	const limit, callers, rounds = 40, 4, 300
	f := newFixture(t, parkingConfig, func(c *Config) { c.Limit = limit; c.ParkAfter = time.Millisecond })
	var granted atomic.Int64
	var wg sync.WaitGroup
	tokens := make(chan struct{}, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range tokens {
				g, err := f.eng.Reserve(f.ctx, "a", 1)
				if err != nil {
					t.Error(err)
					return
				}
				for _, r := range g.Reservations() {
					granted.Add(1)
					if _, err := f.eng.Commit(f.ctx, r, f.eng.Now()); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	parks := 0
	for round := range rounds {
		f.clock.Advance(time.Millisecond)
		if round%3 == 0 {
			// Requests race with the sweep; in the rounds between, the
			// account goes idle and parks.
			for range callers {
				tokens <- struct{}{}
			}
		}
		f.eng.reg.sweepIdle()
		_ = f.eng.journal.Flush(f.ctx)
		for drained := false; !drained; {
			select {
			case <-f.parked:
				parks++
			default:
				drained = true
			}
		}
	}
	close(tokens)
	wg.Wait()
	if got := granted.Load(); got != limit {
		t.Fatalf("granted %d, limit %d", got, limit)
	}
	if st := f.status("a"); st.Used != limit {
		t.Fatalf("used %d, want %d", st.Used, limit)
	}
	if parks == 0 {
		t.Fatal("never parked")
	}
	f.restart(parkingConfig, func(c *Config) { c.Limit = limit })
	if st := f.status("a"); st.Used != limit {
		t.Fatalf("used %d after a restart, want %d", st.Used, limit)
	}
	t.Logf("parked %d times in %d rounds", parks, rounds)
}

// TestParkEviction: a parked account unused for IdleTimeout leaves
// memory; its state is in the store.
func TestParkEviction(t *testing.T) {
	f := newFixture(t, parkingConfig)
	f.fill("a", 5)
	f.fill("b", 2)
	f.clock.Advance(time.Hour)
	f.park("a")
	f.park("b")
	if f.eng.Resident() != 2 {
		t.Fatalf("resident %d", f.eng.Resident())
	}
	f.clock.Advance(30*24*time.Hour - 2*time.Hour)
	f.status("b")
	f.clock.Advance(time.Hour)
	f.eng.reg.sweepIdle()
	if f.eng.reg.peekParked("a") != nil || f.eng.Resident() != 1 {
		t.Fatalf("a still parked after its idle timeout; resident %d", f.eng.Resident())
	}
	loads := f.store.Counts().Loads
	if st := f.status("a"); st.Used != 0 {
		// Pins a month old no longer count; the state came from the store.
		t.Fatalf("a: %+v", st)
	}
	if f.store.Counts().Loads != loads+1 {
		t.Fatal("evicted account not loaded from the store")
	}
}

// TestParkEvictionKeepsCount: the same, within the window.
func TestParkEvictionKeepsCount(t *testing.T) {
	f := newFixture(t, parkingConfig, func(c *Config) { c.IdleTimeout = 2 * time.Hour })
	f.fill("a", 5)
	f.clock.Advance(time.Hour)
	f.park("a")
	f.clock.Advance(time.Hour)
	f.eng.reg.sweepIdle()
	if f.eng.Resident() != 0 {
		t.Fatalf("resident %d after the idle timeout", f.eng.Resident())
	}
	if st := f.status("a"); st.Used != 5 {
		t.Fatalf("reloaded used %d, want 5", st.Used)
	}
}

// TestParkClose: Close with parked accounts loses nothing.
func TestParkClose(t *testing.T) {
	f := newFixture(t, parkingConfig)
	f.fill("a", 7)
	f.fill("b", 1)
	f.clock.Advance(time.Hour)
	f.park("a")
	f.fill("b", 1) // b is live, a parked
	f.restart(parkingConfig)
	if st := f.status("a"); st.Used != 7 {
		t.Fatalf("a after close: %+v", st)
	}
	if st := f.status("b"); st.Used != 2 {
		t.Fatalf("b after close: %+v", st)
	}
}

// TestParkDrop: a cluster member dropping accounts drops the parked ones
// too, without writing; Passivate likewise.
func TestParkDrop(t *testing.T) {
	f := newFixture(t, parkingConfig)
	for _, a := range []string{"a", "b", "c"} {
		f.fill(a, 1)
	}
	f.clock.Advance(time.Hour)
	f.park("a")
	f.park("b")
	f.status("c")
	writes := f.store.Counts().Writes
	if n := f.eng.Drop(func(a string) bool { return a == "a" || a == "c" }); n != 2 {
		t.Fatalf("Drop asked %d, want 2", n)
	}
	if f.eng.reg.peekParked("a") != nil {
		t.Fatal("a still parked after Drop")
	}
	if got := <-f.stops; got != "c" {
		t.Fatalf("stopped %q", got)
	}
	if w := f.store.Counts().Writes; w != writes {
		t.Fatalf("Drop wrote %d times", w-writes)
	}
	if f.eng.Resident() != 1 {
		t.Fatalf("resident %d, want 1 (b parked)", f.eng.Resident())
	}
	if err := f.eng.Passivate(f.ctx, func(a string) bool { return a == "b" }); err != nil {
		t.Fatal(err)
	}
	if f.eng.Resident() != 0 || f.eng.reg.peekParked("b") != nil {
		t.Fatalf("resident %d after Passivate", f.eng.Resident())
	}
	if st := f.status("b"); st.Used != 1 {
		t.Fatalf("b reloaded: %+v", st)
	}
}

// TestParkDropWhileParking: an actor stopping to park after its account
// was dropped (or handed over: Passivate) does not park.
func TestParkDropWhileParking(t *testing.T) {
	f := newFixture(t, parkingConfig)
	f.fill("b", 1)
	f.clock.Advance(time.Hour)
	for range 2 {
		f.eng.reg.sweepIdle() // the second snapshots it
		_ = f.eng.journal.Flush(f.ctx)
	}
	// As Drop and Passivate leave it (forget), before the actor's stop
	// reaches the registry.
	sh := f.eng.reg.shard("b")
	sh.mu.Lock()
	sh.m["b"].noPark = true
	sh.mu.Unlock()
	f.eng.reg.epoch.Add(2)
	f.eng.reg.sweepIdle() // decides to park
	select {
	case got := <-f.stops:
		if got != "b" {
			t.Fatalf("stopped %q", got)
		}
	case got := <-f.parked:
		t.Fatalf("%s parked after being dropped", got)
	}
	if f.eng.Resident() != 0 {
		t.Fatalf("resident %d", f.eng.Resident())
	}
	if st := f.status("b"); st.Used != 1 {
		t.Fatalf("b reloaded: %+v", st)
	}
}

// TestParkSurvey: a survey sees parked accounts without unparking them.
func TestParkSurvey(t *testing.T) {
	f := newFixture(t, parkingConfig)
	f.fill("a", 4)
	f.clock.Advance(time.Hour)
	f.park("a")
	names, all := f.eng.reg.names(10)
	if !all || len(names) != 1 || names[0] != "a" {
		t.Fatalf("names %v %v", names, all)
	}
	tl := newTimeline(f.clock.Now(), DefaultWindow.Milliseconds(), time.Hour.Milliseconds())
	st, err := f.eng.surveyOne(f.ctx, "a", f.clock.Now(), tl)
	if err != nil || st.Used != 4 {
		t.Fatalf("survey: %+v, %v", st, err)
	}
	if f.eng.reg.peekParked("a") == nil {
		t.Fatal("survey unparked the account")
	}
	if got := f.eng.reg.residentWhere(func(string) bool { return true }); len(got) != 1 {
		t.Fatalf("residentWhere %v", got)
	}
}

// TestParkFence: an account served under a fencing token parks with it
// and takes it back when it unparks, without asking Config.Owner again.
func TestParkFence(t *testing.T) {
	var token atomic.Value
	token.Store("tok-1")
	var asked atomic.Int64
	f := newFixture(t, parkingConfig, func(c *Config) {
		c.Owner = func(string) ([]byte, error) {
			asked.Add(1)
			return []byte(token.Load().(string)), nil
		}
	})
	f.fill("a", 1)
	f.clock.Advance(time.Hour)
	f.park("a")
	if p := f.eng.reg.peekParked("a"); string(p.fence) != "tok-1" || !p.slot.hasFence {
		t.Fatalf("parked fence %q", p.fence)
	}
	token.Store("tok-2")
	n := asked.Load()
	if _, err := f.eng.call(f.ctx, "a", request{op: opSurvey}); err != nil {
		t.Fatal(err)
	}
	if asked.Load() != n+1 {
		// Asked once, by the registry before unparking, as before a spawn.
		t.Fatalf("Owner asked %d times to unpark", asked.Load()-n)
	}
	f.park("a")
	if p := f.eng.reg.peekParked("a"); string(p.fence) != "tok-1" {
		t.Fatalf("fence after a round trip %q", p.fence)
	}
}

// TestRegistryShrinks: a shard's map, emptied by parking below a quarter
// of its peak, is made again at its size by the next sweep, keeping its
// entries.
func TestRegistryShrinks(t *testing.T) {
	f := newFixture(t, parkingConfig)
	f.fill("a", 1)
	f.fill("b", 1)
	sh := f.eng.reg.shard("a")
	sh.mu.Lock()
	sh.peak = 4 * shrinkFrom
	before := sh.m
	sh.mu.Unlock()
	f.eng.reg.sweepIdle()
	sh.mu.RLock()
	peak, after := sh.peak, sh.m
	sh.mu.RUnlock()
	if peak != len(after) || reflect.ValueOf(after).UnsafePointer() == reflect.ValueOf(before).UnsafePointer() {
		t.Fatalf("peak %d with %d entries: not remade", peak, len(after))
	}
	if f.status("a").Used != 1 || f.status("b").Used != 1 {
		t.Fatal("entries lost")
	}
	if f.eng.Resident() != 2 {
		t.Fatalf("resident %d", f.eng.Resident())
	}
}

// TestParkCheckpointSkips: a checkpoint leaves parked accounts parked:
// their state is stored whole.
func TestParkCheckpointSkips(t *testing.T) {
	f := newFixture(t, parkingConfig)
	f.fill("a", 2)
	f.fill("b", 2)
	f.clock.Advance(time.Hour)
	f.park("a")
	f.status("b") // unparked (or never parked)
	n, err := f.eng.Checkpoint(f.ctx, staleList{"a", "b"})
	if err != nil || n != 1 {
		t.Fatalf("checkpoint: %d, %v", n, err)
	}
	if f.eng.reg.peekParked("a") == nil {
		t.Fatal("checkpoint unparked a")
	}
}

// TestParkWithDoneJobs: an account whose queued jobs are all done parks;
// brought back, it lists its done jobs from the store (one read, when a
// listing asks, not at every request), keeps at most KeepDone of them as
// more finish, and a failed read fails the listing without losing them.
// An incarnation whose job write failed does not park.
func TestParkWithDoneJobs(t *testing.T) {
	f := newFixture(t, parkingConfig, func(c *Config) { c.KeepDone = 2 })
	handed := make(chan Job, 8)
	if err := f.eng.ServeJobs(func(j Job) { handed <- j }); err != nil {
		t.Fatal(err)
	}
	runOne := func(payload string) uint64 {
		t.Helper()
		if _, err := f.eng.Enqueue(f.ctx, "a", [][]byte{[]byte(payload)}); err != nil {
			t.Fatal(err)
		}
		j := <-handed
		if _, err := f.eng.Finish(f.ctx, j, Outcome{Done: true, At: f.eng.Now(), Result: []byte("ok " + payload)}); err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	doneIDs := func() []uint64 {
		t.Helper()
		jobs, _, err := f.eng.Jobs(f.ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		var ids []uint64
		for _, j := range jobs {
			if j.State != JobDone {
				t.Fatalf("job %d is %v, want done", j.ID, j.State)
			}
			ids = append(ids, j.ID)
		}
		return ids
	}
	first := runOne("1")
	f.clock.Advance(time.Second)
	second := runOne("2")
	f.clock.Advance(time.Hour)
	f.park("a")
	if p := f.eng.reg.peekParked("a"); !p.slot.hasDone {
		t.Fatal("parked without noting its stored done jobs")
	}
	if r, p := f.eng.Resident(), f.eng.Parked(); r != 1 || p != 1 {
		t.Fatalf("%d resident, %d parked; want 1 and 1", r, p)
	}

	// Back by a request that needs no job: the store is not read.
	loads := f.store.Counts().Loads
	if _, err := f.eng.Status(f.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if r, p := f.eng.Resident(), f.eng.Parked(); r != 1 || p != 0 {
		t.Fatalf("%d resident, %d parked after a request; want 1 and 0", r, p)
	}
	f.store.FailLoad("a", persistencetest.ErrDiskFull)
	if _, _, err := f.eng.Jobs(f.ctx, "a"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Jobs with the store unreadable: %v, want ErrUnavailable", err)
	}
	f.store.FailLoad("a", nil)
	if got := doneIDs(); !slices.Equal(got, []uint64{first, second}) {
		t.Fatalf("done jobs after parking %v, want %v", got, []uint64{first, second})
	}
	if got := f.store.Counts().Loads; got != loads {
		t.Fatalf("%d loads of the account to unpark it", got-loads)
	}

	// Parked again, a third job's end drops the oldest stored one.
	f.clock.Advance(time.Hour)
	f.park("a")
	f.clock.Advance(time.Second)
	third := runOne("3")
	if got := doneIDs(); !slices.Equal(got, []uint64{second, third}) {
		t.Fatalf("done jobs %v, want %v (KeepDone 2)", got, []uint64{second, third})
	}
	stored, err := f.mem.Jobs(f.ctx, "a")
	if err != nil || len(stored) != 2 || stored[0].ID != second {
		t.Fatalf("stored jobs %+v, %v; want the last two", stored, err)
	}

	// A job whose end could not be written keeps the account live.
	f.clock.Advance(time.Second)
	if _, err := f.eng.Enqueue(f.ctx, "a", [][]byte{[]byte("4")}); err != nil {
		t.Fatal(err)
	}
	j := <-handed
	f.store.FailWrites(persistencetest.ErrDiskFull)
	if _, err := f.eng.Finish(f.ctx, j, Outcome{Done: true, At: f.eng.Now()}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Finish with the disk full: %v", err)
	}
	f.store.ClearFaults()
	f.clock.Advance(time.Hour)
	f.sweeps(4)
	f.noneParked()
	if f.eng.reg.peekParked("a") != nil {
		t.Fatal("parked after a job's write failed")
	}
}
