package badgerlinks

import (
	"context"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// GuildSettings returns the settings of the server guildID: the zero
// links.GuildSettings with ID set when it has chosen nothing.
func (s *Store) GuildSettings(ctx context.Context, guildID string) (links.GuildSettings, error) {
	if err := links.CheckID("guild id", guildID); err != nil {
		return links.GuildSettings{}, err
	}
	var rec record.Guild
	if err := s.view(ctx, "guild settings", func(txn *badger.Txn) error {
		_, err := getRecord(txn, record.GuildKey(guildID), &rec)
		return err
	}); err != nil {
		return links.GuildSettings{ID: guildID}, err
	}
	return rec.Settings(guildID), nil
}

// SetPinEmoji sets the emoji of the server's pin reactions; "" goes back
// to the bot's default. The server's settings are one record, under
// record.GuildKey, read and rewritten in one transaction, and deleted
// when they are all back to their defaults.
func (s *Store) SetPinEmoji(ctx context.Context, guildID, emoji string) error {
	if err := record.CheckPinEmoji(guildID, emoji); err != nil {
		return err
	}
	key := record.GuildKey(guildID)
	return s.update(ctx, "set pin emoji", func(txn *badger.Txn) error {
		var rec record.Guild
		found, err := getRecord(txn, key, &rec)
		if err != nil {
			return err
		}
		rec.V, rec.PinEmoji = record.Version, emoji
		if rec.Empty() {
			if !found {
				return nil
			}
			return deleteKey(txn, key)
		}
		return setRecord(txn, key, &rec)
	})
}
