package persistencetest

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/pinbot/pinbot/persistence"
)

// FenceStore wraps a Store and fences its writes, for tests: it stands
// for a store shared by several processes, one of which owns the state at
// a time and writes under its own fencing token. Tokens are ordered as
// bytes.Compare orders them, the newest owner's sorting last. A Write
// whose Batch.Fence sorts before the newest token the store has seen is
// refused with an error wrapping persistence.ErrFenced, and nothing of it
// is written; any other Write passes to the inner store, and its token
// becomes the newest once the write succeeded. An empty Fence sorts first:
// it is refused once any token was seen. Everything else passes through.
//
// FenceStore is safe for simultaneous use by multiple goroutines.
type FenceStore struct {
	persistence.Store

	mu     sync.Mutex // held across a write, so that fences and writes agree
	newest []byte
}

var (
	_ persistence.Store      = (*FenceStore)(nil)
	_ persistence.RuleKeeper = (*FenceStore)(nil)
	_ interface{ Settle() }  = (*FenceStore)(nil)
)

// NewFenceStore returns a FenceStore passing calls to inner, having seen
// no token yet.
func NewFenceStore(inner persistence.Store) *FenceStore {
	return &FenceStore{Store: inner}
}

// Fence makes token the newest, as another process taking the state over
// would: writes under an older token are refused from then on.
func (f *FenceStore) Fence(token []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.newest = bytes.Clone(token)
}

// Write refuses b if its fence is stale, else passes it to the inner
// store.
func (f *FenceStore) Write(ctx context.Context, b *persistence.Batch) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b != nil && f.newest != nil && bytes.Compare(b.Fence, f.newest) < 0 {
		return fmt.Errorf("persistencetest: write under fence %q, owned under %q: %w", b.Fence, f.newest, persistence.ErrFenced)
	}
	if err := f.Store.Write(ctx, b); err != nil {
		return err
	}
	f.newest = bytes.Clone(b.Fence)
	if f.newest == nil {
		f.newest = []byte{}
	}
	return nil
}

// Settle passes the call to the inner store if it has a Settle method.
func (f *FenceStore) Settle() {
	if s, ok := f.Store.(interface{ Settle() }); ok {
		s.Settle()
	}
}

// Rules passes the call to the inner store.
func (f *FenceStore) Rules(ctx context.Context) (persistence.Rules, error) {
	rk, ok := f.Store.(persistence.RuleKeeper)
	if !ok {
		return persistence.Rules{}, errNoRuleKeeper
	}
	return rk.Rules(ctx)
}

// SetRules passes the call to the inner store.
func (f *FenceStore) SetRules(ctx context.Context, r persistence.Rules) error {
	rk, ok := f.Store.(persistence.RuleKeeper)
	if !ok {
		return errNoRuleKeeper
	}
	return rk.SetRules(ctx, r)
}
