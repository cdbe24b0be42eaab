package badgerstore

import (
	"context"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

// rulesKey is the key of the engine's rules (persistence.Rules).
var rulesKey = []byte("m/rules")

var _ persistence.RuleKeeper = (*Store)(nil)

// Rules returns the stored rules (zero if none).
func (s *Store) Rules(context.Context) (persistence.Rules, error) {
	var r persistence.Rules
	err := s.getMeta(rulesKey, "rules", func(v []byte) (err error) {
		r, err = codec.DecodeRules(v)
		return err
	})
	return r, err
}

// SetRules stores r in a transaction of its own, durable when the store
// is.
func (s *Store) SetRules(_ context.Context, r persistence.Rules) error {
	return s.putMeta(rulesKey, codec.AppendRules(nil, r), "rules")
}
