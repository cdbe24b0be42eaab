package persistencetest

import (
	"context"
	"errors"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

var (
	_ persistence.RuleKeeper = (*MemStore)(nil)
	_ persistence.RuleKeeper = (*FaultStore)(nil)
)

// Rules returns the stored rules, as badgerstore.Store.Rules does.
func (m *MemStore) Rules(context.Context) (persistence.Rules, error) {
	if !m.life.Enter() {
		return persistence.Rules{}, persistence.ErrClosed
	}
	defer m.life.Exit()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rules == nil {
		return persistence.Rules{}, nil
	}
	return codec.DecodeRules(m.rules)
}

// SetRules stores r.
func (m *MemStore) SetRules(_ context.Context, r persistence.Rules) error {
	if !m.life.Enter() {
		return persistence.ErrClosed
	}
	defer m.life.Exit()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rules = codec.AppendRules(nil, r)
	return nil
}

// errNoRuleKeeper is returned by a FaultStore whose inner store keeps no
// rules.
var errNoRuleKeeper = errors.New("persistencetest: the inner store is not a persistence.RuleKeeper")

// Rules passes the call to the inner store.
func (f *FaultStore) Rules(ctx context.Context) (persistence.Rules, error) {
	rk, ok := f.inner.(persistence.RuleKeeper)
	if !ok {
		return persistence.Rules{}, errNoRuleKeeper
	}
	return rk.Rules(ctx)
}

// SetRules passes r to the inner store unless a write fault is set; a
// fault after apply stores r and reports the failure.
func (f *FaultStore) SetRules(ctx context.Context, r persistence.Rules) error {
	rk, ok := f.inner.(persistence.RuleKeeper)
	if !ok {
		return errNoRuleKeeper
	}
	f.mu.Lock()
	before, after := f.writeErr, f.appliedErr
	f.mu.Unlock()
	if before != nil {
		return before
	}
	if err := rk.SetRules(ctx, r); err != nil {
		return err
	}
	return after
}
