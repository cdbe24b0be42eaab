package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/internal/app/enginestore"
	"github.com/pinbot/pinbot/persistence"
	"github.com/rs/zerolog"
)

// Kinds of violation the soak looks for.
const (
	violLost    = "(a) acknowledged grant lost"
	violOver    = "(b) window over the limit"
	violStore   = "(c) data directory"
	violProcess = "engine process"
	violClock   = "(d) engine clock"
)

// violation is one broken invariant.
type violation struct {
	Kind   string `json:"kind"`
	Cycle  int    `json:"cycle"` // 0 for the final checks
	Detail string `json:"detail"`
}

func (v violation) String() string {
	where := "final check"
	if v.Cycle > 0 {
		where = fmt.Sprintf("cycle %d", v.Cycle)
	}
	return fmt.Sprintf("%s: %s: %s", where, v.Kind, v.Detail)
}

// slot is one acknowledged reservation, as the soak child reported it.
// Times are engine Unix ms; 0 means "not reported".
type slot struct {
	reserved  int64 // granted at
	commitAt  int64 // a Commit at this time was attempted
	releaseAt int64 // a Release was attempted at this time
}

// grant is one acknowledged Reserve.
type grant struct {
	at    int64
	first uint64
	n     int
}

// accountLedger is everything acknowledged about one account.
type accountLedger struct {
	slots  map[uint64]*slot
	grants []grant
}

// ackLedger holds every grant the soak children acknowledged, over all
// cycles, and what the checks derive from it.
type ackLedger struct {
	window   int64 // ms
	lease    int64 // ms
	accounts map[string]*accountLedger

	slots, commits, releases int64
	unparsed                 int
	anomalies                []string
}

func newAckLedger(window, lease int64) *ackLedger {
	return &ackLedger{window: window, lease: lease, accounts: map[string]*accountLedger{}}
}

func (l *ackLedger) account(name string) *accountLedger {
	a := l.accounts[name]
	if a == nil {
		a = &accountLedger{slots: map[uint64]*slot{}}
		l.accounts[name] = a
	}
	return a
}

// line parses one line of a soak child and records it. It reports
// whether the line was READY.
func (l *ackLedger) line(s string) (ready bool) {
	f := strings.Fields(s)
	num := func(i int) (int64, bool) {
		if i >= len(f) {
			return 0, false
		}
		n, err := strconv.ParseInt(f[i], 10, 64)
		return n, err == nil
	}
	switch {
	case len(f) == 2 && f[0] == "READY":
		return true
	case len(f) == 5 && f[0] == "G":
		first, ok1 := num(2)
		n, ok2 := num(3)
		at, ok3 := num(4)
		if !ok1 || !ok2 || !ok3 || n < 1 {
			break
		}
		a := l.account(f[1])
		a.grants = append(a.grants, grant{at: at, first: uint64(first), n: int(n)})
		for id := uint64(first); id < uint64(first+n); id++ {
			if a.slots[id] != nil {
				l.anomalies = append(l.anomalies, fmt.Sprintf("%s: reservation %d granted twice", f[1], id))
				continue
			}
			a.slots[id] = &slot{reserved: at}
			l.slots++
		}
		return false
	case len(f) == 4 && (f[0] == "C" || f[0] == "R"):
		id, ok1 := num(2)
		at, ok2 := num(3)
		if !ok1 || !ok2 {
			break
		}
		s := l.account(f[1]).slots[uint64(id)]
		if s == nil {
			l.anomalies = append(l.anomalies, fmt.Sprintf("%s: %s of reservation %d, never granted", f[1], f[0], id))
			return false
		}
		if f[0] == "C" {
			s.commitAt = at
			l.commits++
		} else {
			s.releaseAt = at
			l.releases++
		}
		return false
	}
	l.unparsed++
	return false
}

// surelyCounts reports whether s must count at instant t (engine ms),
// whatever happened to the calls in flight when the process died:
//   - no Commit or Release attempted: it stays pending until its deadline,
//     then is a pin made at the deadline, so it counts until
//     deadline+window;
//   - a Commit at c attempted: either it landed (a pin at c) or it did
//     not (a pin at the deadline); both count until min(c, deadline)+window;
//   - a Release attempted: it may have landed, so nothing is sure.
func (l *ackLedger) surelyCounts(s *slot, t int64) bool {
	deadline := s.reserved + l.lease
	switch {
	case s.releaseAt != 0:
		return false
	case s.commitAt != 0:
		return t < min(s.commitAt, deadline)+l.window
	}
	return t < deadline+l.window
}

// occupiedUntil is the end of the interval [reserved, end) during which s
// surely held a slot: as surelyCounts, and for a released slot until the
// release was attempted (or its deadline, if that came first).
func (l *ackLedger) occupiedUntil(s *slot) int64 {
	deadline := s.reserved + l.lease
	switch {
	case s.releaseAt != 0:
		return min(s.releaseAt, deadline)
	case s.commitAt != 0:
		return min(s.commitAt, deadline) + l.window
	}
	return deadline + l.window
}

// mustCount returns how many of account's acknowledged slots surely count
// at t.
func (l *ackLedger) mustCount(account string, t int64) int {
	a := l.accounts[account]
	if a == nil {
		return 0
	}
	n := 0
	for _, s := range a.slots {
		if l.surelyCounts(s, t) {
			n++
		}
	}
	return n
}

// historyCheck is (b) over the acknowledged grants of the whole soak: at
// the instant of each grant, the slots surely held (this grant's, and
// those of every earlier grant still held) must not exceed limit. Grants
// of one account are ordered by their reservation IDs, which the engine
// hands out in increasing order: two grants in the same millisecond are
// not both held when the first is made. It returns how many grants it
// checked, how many filled the account, and the violations.
func (l *ackLedger) historyCheck(limit int) (checked, full int, viols []violation) {
	span := l.lease + l.window // no slot is surely held longer
	for name, a := range l.accounts {
		type held struct {
			from, until int64
			id          uint64
		}
		hs := make([]held, 0, len(a.slots))
		for id, s := range a.slots {
			hs = append(hs, held{from: s.reserved, until: l.occupiedUntil(s), id: id})
		}
		slices.SortFunc(hs, func(x, y held) int { return cmpInt64(x.from, y.from) })
		for _, g := range a.grants {
			used := g.n
			// Only slots granted in (g.at-span, g.at] can still be held.
			hi, _ := slices.BinarySearchFunc(hs, g.at+1, func(h held, t int64) int { return cmpInt64(h.from, t) })
			for i := hi - 1; i >= 0 && hs[i].from > g.at-span; i-- {
				if hs[i].id < g.first && g.at < hs[i].until {
					used++
				}
			}
			checked++
			if used == limit {
				full++
			}
			if used > limit {
				viols = append(viols, violation{Kind: violOver, Detail: fmt.Sprintf(
					"%s: the grant of %d slot(s) at %d (IDs from %d) made %d slots surely held, limit %d",
					name, g.n, g.at, g.first, used, limit)})
			}
		}
	}
	return checked, full, viols
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// storeCheck is what checking a data directory found.
type storeCheck struct {
	accounts      int // accounts stored
	journaled     int // accounts with journal events a restarted engine replays
	events        int // journal events replayed
	grantsChecked int // reserve events checked against the limit
	full          int // of which filled the account to its limit
	maxUsed       int
	viols         []violation
}

// checkStore checks the data directory dir left by a killed child, as
// checkCopy does, on a copy of it made in a temporary directory and
// removed on return. dir itself is not opened: the next engine process
// restarts over exactly what the kill left, and must recover it on its
// own. It fails only when the copy cannot be made; what the checks found
// is in the storeCheck.
func checkStore(ctx context.Context, dir string, cycle int, cfg actors.Config, acked *ackLedger, log zerolog.Logger) (storeCheck, error) {
	scratch, err := os.MkdirTemp("", "pinbench-soak-check-")
	if err != nil {
		return storeCheck{}, fmt.Errorf("creating a directory to check a copy of %s in: %w", dir, err)
	}
	defer os.RemoveAll(scratch)
	if err := copyDir(scratch, dir); err != nil {
		return storeCheck{}, fmt.Errorf("copying the data directory %s to check it: %w", dir, err)
	}
	return checkCopy(ctx, scratch, cycle, cfg, acked, log), nil
}

// checkCopy opens the data directory dir, a copy of what a killed child
// left, and counts the accounts whose journal a restarted engine must
// replay. It checks (c) that the store opens and every account's state
// loads, and (b) by a brute-force replay of each account's snapshot and
// journal that no window held more than limit pins and pending
// reservations. It then opens an engine on it and checks (a): every
// acknowledged slot that must still count is counted. Closing the engine
// snapshots every account it loaded, so dir no longer holds what the kill
// left on return; the store is closed.
func checkCopy(ctx context.Context, dir string, cycle int, cfg actors.Config, acked *ackLedger, log zerolog.Logger) storeCheck {
	var c storeCheck
	fail := func(kind, format string, args ...any) {
		c.viols = append(c.viols, violation{Kind: kind, Cycle: cycle, Detail: fmt.Sprintf(format, args...)})
	}
	store, err := enginestore.Open(dir, soakStoreOptions, log)
	if err != nil {
		fail(violStore, "does not open: %v", err)
		return c
	}
	defer func() {
		if err := store.Close(); err != nil {
			fail(violStore, "close: %v", err)
		}
	}()
	if _, err := store.HighWater(ctx); err != nil {
		fail(violStore, "high-water mark unreadable: %v", err)
	}
	if err := store.Journaled(ctx, func(string) error { c.journaled++; return nil }); err != nil {
		fail(violStore, "listing the accounts left to replay: %v", err)
	}
	var stored []string
	if err := store.Accounts(ctx, func(a string) error { stored = append(stored, a); return nil }); err != nil {
		fail(violStore, "listing accounts: %v", err)
	}
	c.accounts = len(stored)
	window := cfg.Window.Milliseconds()
	for _, a := range stored {
		ld, err := store.Load(ctx, a)
		if err != nil {
			fail(violStore, "account %s does not load: %v", a, err)
			continue
		}
		r := replay(a, ld, cfg.Limit, window)
		c.events += r.events
		c.grantsChecked += r.grants
		c.full += r.full
		c.maxUsed = max(c.maxUsed, r.maxUsed)
		for _, v := range r.over {
			fail(violOver, "%s", v)
		}
		for _, v := range r.broken {
			fail(violStore, "%s", v)
		}
	}
	if ctx.Err() != nil {
		return c
	}

	cfg.Recover = false
	eng, err := actors.New(cfg, store, log)
	if err != nil {
		fail(violStore, "engine does not start on it: %v", err)
		return c
	}
	defer func() {
		if err := eng.Close(ctx); err != nil {
			fail(violStore, "engine close: %v", err)
		}
	}()
	names := make([]string, 0, len(acked.accounts))
	for a := range acked.accounts {
		names = append(names, a)
	}
	for _, a := range stored {
		if acked.accounts[a] == nil {
			names = append(names, a)
		}
	}
	slices.Sort(names)
	sts, err := eng.StatusMany(ctx, names)
	if err != nil {
		fail(violStore, "status: %v", err)
	}
	for _, st := range sts {
		if st.At.IsZero() {
			continue // its error is in err
		}
		c.maxUsed = max(c.maxUsed, st.Used)
		if st.Used > st.Limit {
			fail(violOver, "%s: the engine counts %d slots, limit %d", st.Account, st.Used, st.Limit)
		}
		if must := acked.mustCount(st.Account, st.At.UnixMilli()); st.Used < must {
			fail(violLost, "%s: the engine counts %d slots at %d, but %d acknowledged slots must still count then",
				st.Account, st.Used, st.At.UnixMilli(), must)
		}
	}
	return c
}

// replayResult is what replaying one account's stored state found.
type replayResult struct {
	events, grants, full, maxUsed int
	over, broken                  []string
}

// replay re-derives an account's window from its snapshot and journal by
// brute force, independently of the engine's code: pins are kept as a
// plain list and counted in full at each reserve event, the only moments
// usage rises. At each, pins in (t-window, t] plus unresolved reservations
// plus the slots granted must not exceed limit. A pending reservation
// whose deadline passed becomes a pin at its deadline, as the engine
// counts it. The snapshot itself must be within the limit, and no window
// over the known pin times may hold more than limit pins.
func replay(account string, ld persistence.Loaded, limit int, window int64) replayResult {
	var r replayResult
	snap := ld.Snapshot
	pins := slices.Clone(snap.Committed)
	type pend struct{ at, deadline int64 }
	pending := map[uint64]pend{}
	for _, p := range snap.Pending {
		pending[p.ID] = pend{p.ReservedAt, p.Deadline}
	}
	if n := len(snap.Committed) + len(snap.Pending); n > limit {
		r.over = append(r.over, fmt.Sprintf("%s: snapshot (seq %d) holds %d pins and %d pending, limit %d",
			account, snap.Seq, len(snap.Committed), len(snap.Pending), limit))
	}
	r.maxUsed = len(snap.Committed) + len(snap.Pending)
	seq := snap.Seq
	for _, e := range ld.Events {
		r.events++
		if e.Seq <= seq {
			r.broken = append(r.broken, fmt.Sprintf("%s: journal event seq %d after seq %d", account, e.Seq, seq))
		}
		seq = e.Seq
		switch e.Kind {
		case persistence.EventReserve:
			t := e.At
			for id, p := range pending {
				if p.deadline <= t {
					pins = append(pins, p.deadline)
					delete(pending, id)
				}
			}
			used := len(pending) + int(e.Count)
			for _, p := range pins {
				if p > t-window {
					used++
				}
			}
			r.grants++
			r.maxUsed = max(r.maxUsed, used)
			if used == limit {
				r.full++
			}
			if used > limit {
				r.over = append(r.over, fmt.Sprintf("%s: journal seq %d grants %d slot(s) at %d with %d in use after it, limit %d",
					account, e.Seq, e.Count, t, used, limit))
			}
			for i := range uint64(e.Count) {
				pending[e.ID+i] = pend{t, e.Deadline}
			}
		case persistence.EventCommit:
			if _, ok := pending[e.ID]; !ok {
				r.broken = append(r.broken, fmt.Sprintf("%s: journal seq %d commits reservation %d, not pending", account, e.Seq, e.ID))
				continue
			}
			delete(pending, e.ID)
			pins = append(pins, e.At)
		case persistence.EventRelease:
			if _, ok := pending[e.ID]; !ok {
				r.broken = append(r.broken, fmt.Sprintf("%s: journal seq %d releases reservation %d, not pending", account, e.Seq, e.ID))
				continue
			}
			delete(pending, e.ID)
		default:
			r.broken = append(r.broken, fmt.Sprintf("%s: journal seq %d has unknown kind %d", account, e.Seq, e.Kind))
		}
	}
	slices.Sort(pins)
	for i, p := range pins {
		n := 0
		for j := i; j >= 0 && pins[j] > p-window; j-- {
			n++
		}
		if n > limit {
			r.over = append(r.over, fmt.Sprintf("%s: %d pins in the window ending at %d, limit %d", account, n, p, limit))
			break
		}
	}
	return r
}
