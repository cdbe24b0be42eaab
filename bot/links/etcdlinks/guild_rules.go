package etcdlinks

import (
	"context"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// AutopinRules returns the auto-pin rules of the server guildID, in the
// order they were added; nil when it has none. One request.
func (s *Store) AutopinRules(ctx context.Context, guildID string) ([]links.AutopinRule, error) {
	if err := links.CheckID("guild id", guildID); err != nil {
		return nil, err
	}
	key := record.AutopinKey(guildID)
	var rec record.AutopinRules
	if err := s.lookup(ctx, "auto-pin rules", []read{readKey(key)}, func(v *view) error {
		_, err := s.record(v, key, &rec)
		return err
	}); err != nil {
		return nil, err
	}
	return rec.List(), nil
}

// UpdateAutopinRules replaces the server's rules with what fn makes of
// them: one sealed record (record.AutopinKey) rewritten by a
// compare-and-swap on its revision, fn called again when another write
// won, and deleted when no rule is left.
func (s *Store) UpdateAutopinRules(ctx context.Context, guildID string, fn func([]links.AutopinRule) ([]links.AutopinRule, error)) error {
	if err := links.CheckID("guild id", guildID); err != nil {
		return err
	}
	key := record.AutopinKey(guildID)
	return s.update(ctx, "update auto-pin rules", []read{readKey(key)}, func(_ context.Context, v *view) ([]clientv3.Op, error) {
		var rec record.AutopinRules
		found, err := s.record(v, key, &rec)
		if err != nil {
			return nil, err
		}
		before := rec.List()
		after, err := fn(slices.Clone(before))
		if err != nil {
			return nil, err
		}
		if err := record.CheckAutopinRules(after); err != nil {
			return nil, err
		}
		if slices.Equal(before, after) {
			return nil, nil
		}
		if len(after) == 0 {
			if !found {
				return nil, nil
			}
			return []clientv3.Op{clientv3.OpDelete(s.key(key))}, nil
		}
		val, err := s.encode(key, record.NewAutopinRules(after))
		if err != nil {
			return nil, err
		}
		return []clientv3.Op{clientv3.OpPut(s.key(key), val)}, nil
	})
}
