package persistencetest

import (
	"context"
	"fmt"
	"sync"
	"syscall"

	"github.com/pinbot/pinbot/persistence"
)

// FaultStore wraps a Store and makes chosen calls fail, for tests only:
// tests of the code above the store use it to check what happens when the
// disk fills up, a write's outcome is unknown, or one account's state
// cannot be read. Without faults it passes every call through.
//
// FaultStore is safe for simultaneous use by multiple goroutines; faults
// may be set and cleared while other goroutines use the store.
type FaultStore struct {
	inner persistence.Store

	mu         sync.Mutex
	writeErr   error // returned by Write instead of writing
	appliedErr error // returned by Write after writing
	loadErrs   map[string]error
	counts     FaultCounts
}

var (
	_ persistence.Store     = (*FaultStore)(nil)
	_ interface{ Settle() } = (*FaultStore)(nil)
)

// ErrDiskFull is a ready-made fault for FailWrites: a write refused as
// by a full disk; errors.Is(err, syscall.ENOSPC) holds.
var ErrDiskFull = fmt.Errorf("persistencetest: disk full: %w", syscall.ENOSPC)

// FaultCounts counts the calls a FaultStore saw.
type FaultCounts struct {
	Writes       int // calls of Write, failed ones included
	FailedWrites int // Writes that returned an injected error
	Loads        int // calls of Load, failed ones included
	FailedLoads  int // Loads that returned an injected error
}

// NewFaultStore returns a FaultStore passing calls to inner, with no
// faults set.
func NewFaultStore(inner persistence.Store) *FaultStore {
	return &FaultStore{inner: inner, loadErrs: make(map[string]error)}
}

// FailWrites makes every later Write return err without writing anything,
// as a full disk would (see ErrDiskFull). A nil err stops the fault.
func (f *FaultStore) FailWrites(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writeErr = err
}

// FailWritesAfterApply makes every later Write apply its batch to the
// inner store and then return err, as when a commit's acknowledgement is
// lost: the caller sees a failure although the batch landed. A nil err
// stops the fault.
func (f *FaultStore) FailWritesAfterApply(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.appliedErr = err
}

// FailLoad makes every later Load of account return err. A nil err stops
// the fault for that account.
func (f *FaultStore) FailLoad(account string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.loadErrs, account)
		return
	}
	f.loadErrs[account] = err
}

// ClearFaults stops every fault. The counts are kept.
func (f *FaultStore) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writeErr, f.appliedErr = nil, nil
	clear(f.loadErrs)
}

// Counts returns the calls seen so far.
func (f *FaultStore) Counts() FaultCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts
}

// Write passes b to the inner store unless a write fault is set.
func (f *FaultStore) Write(ctx context.Context, b *persistence.Batch) error {
	f.mu.Lock()
	f.counts.Writes++
	before, after := f.writeErr, f.appliedErr
	if before != nil {
		f.counts.FailedWrites++
	}
	f.mu.Unlock()

	if before != nil {
		return before
	}
	if err := f.inner.Write(ctx, b); err != nil {
		return err
	}
	if after != nil {
		f.mu.Lock()
		f.counts.FailedWrites++
		f.mu.Unlock()
		return after
	}
	return nil
}

// Settle passes the call to the inner store if it has a Settle method
// (as the Badger store has: see persistence.Journal), so that a FaultStore
// around a store that settles keeps the timing the journal gives it.
func (f *FaultStore) Settle() {
	if s, ok := f.inner.(interface{ Settle() }); ok {
		s.Settle()
	}
}

// Load passes the call to the inner store unless a fault is set for
// account.
func (f *FaultStore) Load(ctx context.Context, account string) (persistence.Loaded, error) {
	f.mu.Lock()
	f.counts.Loads++
	err := f.loadErrs[account]
	if err != nil {
		f.counts.FailedLoads++
	}
	f.mu.Unlock()

	if err != nil {
		return persistence.Loaded{}, err
	}
	return f.inner.Load(ctx, account)
}

// Jobs passes the call to the inner store unless a load fault is set for
// account (FailLoad covers an account's jobs too).
func (f *FaultStore) Jobs(ctx context.Context, account string) ([]persistence.Job, error) {
	f.mu.Lock()
	err := f.loadErrs[account]
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return f.inner.Jobs(ctx, account)
}

// JobAccounts passes the call to the inner store.
func (f *FaultStore) JobAccounts(ctx context.Context, fn func(account string) error) error {
	return f.inner.JobAccounts(ctx, fn)
}

// Accounts passes the call to the inner store.
func (f *FaultStore) Accounts(ctx context.Context, fn func(account string) error) error {
	return f.inner.Accounts(ctx, fn)
}

// Journaled passes the call to the inner store.
func (f *FaultStore) Journaled(ctx context.Context, fn func(account string) error) error {
	return f.inner.Journaled(ctx, fn)
}

// HighWater passes the call to the inner store.
func (f *FaultStore) HighWater(ctx context.Context) (int64, error) {
	return f.inner.HighWater(ctx)
}

// Anchor passes the call to the inner store.
func (f *FaultStore) Anchor(ctx context.Context) (persistence.ClockAnchor, error) {
	return f.inner.Anchor(ctx)
}

// SetAnchor passes a to the inner store unless a write fault is set; a
// fault after apply stores it and reports the failure.
func (f *FaultStore) SetAnchor(ctx context.Context, a persistence.ClockAnchor) error {
	f.mu.Lock()
	before, after := f.writeErr, f.appliedErr
	f.mu.Unlock()
	if before != nil {
		return before
	}
	if err := f.inner.SetAnchor(ctx, a); err != nil {
		return err
	}
	return after
}

// Close closes the inner store.
func (f *FaultStore) Close() error {
	return f.inner.Close()
}
