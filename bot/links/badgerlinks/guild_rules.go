package badgerlinks

import (
	"context"
	"slices"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// AutopinRules returns the auto-pin rules of the server guildID, in the
// order they were added; nil when it has none.
func (s *Store) AutopinRules(ctx context.Context, guildID string) ([]links.AutopinRule, error) {
	if err := links.CheckID("guild id", guildID); err != nil {
		return nil, err
	}
	var rec record.AutopinRules
	if err := s.view(ctx, "auto-pin rules", func(txn *badger.Txn) error {
		_, err := getRecord(txn, record.AutopinKey(guildID), &rec)
		return err
	}); err != nil {
		return nil, err
	}
	return rec.List(), nil
}

// UpdateAutopinRules replaces the server's rules with what fn makes of
// them, in one transaction on their record (record.AutopinKey), retried
// with fn when it conflicts; the record is deleted when no rule is left.
func (s *Store) UpdateAutopinRules(ctx context.Context, guildID string, fn func([]links.AutopinRule) ([]links.AutopinRule, error)) error {
	if err := links.CheckID("guild id", guildID); err != nil {
		return err
	}
	key := record.AutopinKey(guildID)
	return s.update(ctx, "update auto-pin rules", func(txn *badger.Txn) error {
		var rec record.AutopinRules
		found, err := getRecord(txn, key, &rec)
		if err != nil {
			return err
		}
		before := rec.List()
		after, err := fn(slices.Clone(before))
		if err != nil {
			return err
		}
		if err := record.CheckAutopinRules(after); err != nil {
			return err
		}
		if slices.Equal(before, after) {
			return nil
		}
		if len(after) == 0 {
			if !found {
				return nil
			}
			return deleteKey(txn, key)
		}
		return setRecord(txn, key, record.NewAutopinRules(after))
	})
}
