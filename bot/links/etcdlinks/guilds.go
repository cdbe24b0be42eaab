package etcdlinks

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// GuildSettings returns the settings of the server guildID: the zero
// links.GuildSettings with ID set when it has chosen nothing. One
// request.
func (s *Store) GuildSettings(ctx context.Context, guildID string) (links.GuildSettings, error) {
	if err := links.CheckID("guild id", guildID); err != nil {
		return links.GuildSettings{}, err
	}
	key := record.GuildKey(guildID)
	var rec record.Guild
	if err := s.lookup(ctx, "guild settings", []read{readKey(key)}, func(v *view) error {
		_, err := s.record(v, key, &rec)
		return err
	}); err != nil {
		return links.GuildSettings{ID: guildID}, err
	}
	return rec.Settings(guildID), nil
}

// SetPinEmoji sets the emoji of the server's pin reactions; "" goes back
// to the bot's default. The server's settings are one sealed record,
// under record.GuildKey, rewritten by a compare-and-swap on its revision
// and deleted when they are all back to their defaults. Two requests
// when something changes and nothing races it, one when nothing changes.
func (s *Store) SetPinEmoji(ctx context.Context, guildID, emoji string) error {
	if err := record.CheckPinEmoji(guildID, emoji); err != nil {
		return err
	}
	key := record.GuildKey(guildID)
	return s.update(ctx, "set pin emoji", []read{readKey(key)}, func(_ context.Context, v *view) ([]clientv3.Op, error) {
		var rec record.Guild
		found, err := s.record(v, key, &rec)
		if err != nil {
			return nil, err
		}
		if found && rec.PinEmoji == emoji {
			return nil, nil
		}
		rec.V, rec.PinEmoji = record.Version, emoji
		if rec.Empty() {
			if !found {
				return nil, nil
			}
			return []clientv3.Op{clientv3.OpDelete(s.key(key))}, nil
		}
		val, err := s.encode(key, &rec)
		if err != nil {
			return nil, err
		}
		return []clientv3.Op{clientv3.OpPut(s.key(key), val)}, nil
	})
}
