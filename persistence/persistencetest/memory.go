package persistencetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/pinbot/pinbot/internal/badgerutil"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

// MemStore is a persistence.Store kept in memory, for tests: it is not
// durable and keeps every account in a map.
//
// Its semantics are those of badgerstore.Store: values are stored encoded
// by persistence/codec, so a caller changing its slices after Write does
// not change stored state; keys carry the same expiry, in whole seconds
// rounded up, and a key expires once the clock reaches that second. The clock is the function
// given to NewMemStore, so tests can check expiry at fixed instants.
//
// MemStore is safe for simultaneous use by multiple goroutines.
type MemStore struct {
	now  func() int64
	life badgerutil.Lifecycle

	mu        sync.Mutex
	accounts  map[string]*memAccount
	highWater int64
	anchor    persistence.ClockAnchor
	rules     []byte // encoded by codec.AppendRules; nil when none stored
}

var _ persistence.Store = (*MemStore)(nil)

// memValue is one stored value and the Unix second it expires at (0: never).
type memValue struct {
	value     []byte
	expiresAt uint64
}

type memAccount struct {
	snapshot *memValue
	journal  map[uint64]memValue
	jobs     map[uint64]memValue
}

// NewMemStore returns an empty MemStore whose expiry clock is now, in Unix
// milliseconds; a nil now reads the wall clock.
func NewMemStore(now func() int64) *MemStore {
	if now == nil {
		now = func() int64 { return time.Now().UnixMilli() }
	}
	return &MemStore{now: now, accounts: make(map[string]*memAccount)}
}

// expired reports whether v has expired at now (Unix ms), by the rule
// Badger applies: once the current Unix second reaches v.expiresAt.
func (v *memValue) expired(now int64) bool {
	return v.expiresAt != 0 && now >= 0 && v.expiresAt <= uint64(now/1000)
}

// Write applies b atomically, with badgerstore.Store's semantics (a MemStore
// batch is never split).
func (m *MemStore) Write(_ context.Context, b *persistence.Batch) error {
	if err := b.Validate(); err != nil {
		return err
	}
	if !m.life.Enter() {
		return persistence.ErrClosed
	}
	defer m.life.Exit()
	m.mu.Lock()
	defer m.mu.Unlock()

	now := m.now()
	for i := range b.Accounts {
		m.apply(&b.Accounts[i], now)
	}
	m.highWater = max(m.highWater, b.HighWater)
	return nil
}

func (m *MemStore) apply(aw *persistence.AccountWrite, now int64) {
	a := m.accounts[aw.Account]
	if a == nil {
		a = &memAccount{journal: make(map[uint64]memValue), jobs: make(map[uint64]memValue)}
		m.accounts[aw.Account] = a
	}
	// Forget what expired, as Badger's compaction eventually does.
	if a.snapshot != nil && a.snapshot.expired(now) {
		a.snapshot = nil
	}
	maps.DeleteFunc(a.journal, func(_ uint64, v memValue) bool { return v.expired(now) })
	maps.DeleteFunc(a.jobs, func(_ uint64, v memValue) bool { return v.expired(now) })
	for _, id := range aw.DropJobs {
		delete(a.jobs, id)
	}
	for i := range aw.Jobs {
		j := &aw.Jobs[i]
		a.jobs[j.ID] = memValue{value: codec.AppendJob(nil, j), expiresAt: persistence.JobExpirySecond(j)}
	}

	exp := aw.ExpirySecond()
	var covered uint64 // a snapshot supersedes the events up to here
	if aw.Snapshot != nil {
		covered = aw.Snapshot.Seq
	}
	for _, ev := range aw.Events {
		if ev.Seq <= covered {
			continue
		}
		a.journal[ev.Seq] = memValue{value: codec.AppendEvent(nil, ev), expiresAt: exp}
	}
	if aw.Snapshot != nil {
		a.snapshot = &memValue{value: codec.AppendSnapshot(nil, aw.Snapshot), expiresAt: exp}
		maps.DeleteFunc(a.journal, func(seq uint64, _ memValue) bool { return seq <= covered })
	}
}

// Load returns the stored state of account, as badgerstore.Store.Load does.
func (m *MemStore) Load(_ context.Context, account string) (persistence.Loaded, error) {
	if err := persistence.CheckAccount(account); err != nil {
		return persistence.Loaded{}, err
	}
	if !m.life.Enter() {
		return persistence.Loaded{}, persistence.ErrClosed
	}
	defer m.life.Exit()
	m.mu.Lock()
	defer m.mu.Unlock()

	var l persistence.Loaded
	a := m.accounts[account]
	if a == nil {
		return l, nil
	}
	now := m.now()
	if a.snapshot != nil && !a.snapshot.expired(now) {
		s, err := codec.DecodeSnapshot(a.snapshot.value)
		if err != nil {
			return persistence.Loaded{}, fmt.Errorf("persistence: account %q: snapshot: %w", account, err)
		}
		l.Snapshot = s
	}
	var seqs []uint64
	for seq, v := range a.journal {
		if seq > l.Snapshot.Seq && !v.expired(now) {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		ev, err := codec.DecodeEvent(a.journal[seq].value)
		if err != nil {
			return persistence.Loaded{}, fmt.Errorf("persistence: account %q: journal seq %d: %w", account, seq, err)
		}
		l.Events = append(l.Events, ev)
	}
	return l, nil
}

// Accounts calls fn with each account that has unexpired state, once, in
// byte order. Like badgerstore.Store's, the scan sees the accounts stored when it
// started; fn may call Load and Write but not Close.
func (m *MemStore) Accounts(_ context.Context, fn func(account string) error) error {
	return m.each(fn, (*memAccount).live)
}

// Journaled calls fn with each account that has unexpired journal events
// not superseded by a snapshot, in byte order, as badgerstore.Store.Journaled.
func (m *MemStore) Journaled(_ context.Context, fn func(account string) error) error {
	return m.each(fn, (*memAccount).journaled)
}

// each calls fn, in byte order, with the accounts for which keep holds
// when the call starts.
func (m *MemStore) each(fn func(account string) error, keep func(a *memAccount, now int64) bool) error {
	if !m.life.Enter() {
		return persistence.ErrClosed
	}
	defer m.life.Exit()

	m.mu.Lock()
	now := m.now()
	var names []string
	for name, a := range m.accounts {
		if keep(a, now) {
			names = append(names, name)
		}
	}
	m.mu.Unlock()

	slices.Sort(names)
	for _, name := range names {
		if err := fn(name); err != nil {
			return err
		}
	}
	return nil
}

func (a *memAccount) journaled(now int64) bool {
	for _, v := range a.journal {
		if !v.expired(now) {
			return true
		}
	}
	return false
}

func (a *memAccount) live(now int64) bool {
	return (a.snapshot != nil && !a.snapshot.expired(now)) || a.journaled(now)
}

// Jobs returns account's unexpired jobs, ascending by ID, as
// badgerstore.Store.Jobs.
func (m *MemStore) Jobs(_ context.Context, account string) ([]persistence.Job, error) {
	if err := persistence.CheckAccount(account); err != nil {
		return nil, err
	}
	if !m.life.Enter() {
		return nil, persistence.ErrClosed
	}
	defer m.life.Exit()
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.accounts[account]
	if a == nil {
		return nil, nil
	}
	now := m.now()
	var ids []uint64
	for id, v := range a.jobs {
		if !v.expired(now) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	jobs := make([]persistence.Job, 0, len(ids))
	for _, id := range ids {
		j, err := codec.DecodeJob(a.jobs[id].value)
		if err != nil {
			return nil, fmt.Errorf("persistence: account %q: job %d: %w", account, id, err)
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	return jobs, nil
}

// JobAccounts calls fn with each account that has unexpired jobs, once, in
// byte order, as badgerstore.Store.JobAccounts.
func (m *MemStore) JobAccounts(_ context.Context, fn func(account string) error) error {
	return m.each(fn, (*memAccount).hasJobs)
}

func (a *memAccount) hasJobs(now int64) bool {
	for _, v := range a.jobs {
		if !v.expired(now) {
			return true
		}
	}
	return false
}

// HighWater returns the largest high-water mark written (0 if none).
func (m *MemStore) HighWater(context.Context) (int64, error) {
	if !m.life.Enter() {
		return 0, persistence.ErrClosed
	}
	defer m.life.Exit()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.highWater, nil
}

// Anchor returns the stored clock anchor.
func (m *MemStore) Anchor(context.Context) (persistence.ClockAnchor, error) {
	if !m.life.Enter() {
		return persistence.ClockAnchor{}, persistence.ErrClosed
	}
	defer m.life.Exit()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.anchor, nil
}

// SetAnchor stores a.
func (m *MemStore) SetAnchor(_ context.Context, a persistence.ClockAnchor) error {
	if !m.life.Enter() {
		return persistence.ErrClosed
	}
	defer m.life.Exit()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.anchor = a
	return nil
}

// Close waits for the calls in progress and empties the store. Later
// calls, including Close, return ErrClosed.
func (m *MemStore) Close() error {
	if !m.life.Close() {
		return persistence.ErrClosed
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.accounts = nil
	return nil
}
