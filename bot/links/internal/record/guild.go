package record

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/pinbot/pinbot/bot/links"
)

// GuildKey is the key of the Guild of guildID: g/<guild id>. What a
// server keeps beside its settings (its channels' rules) goes under
// g/<guild id>/, so that one prefix read finds all of a server's records.
func GuildKey(guildID string) string { return GuildPrefix + guildID }

// Guild is stored under g/<guild id>: a server's settings (see
// links.Guilds). A Guild whose settings are all defaults is not stored.
type Guild struct {
	V        int    `json:"v"`
	PinEmoji string `json:"pin_emoji,omitempty"`
}

func (r *Guild) version() int { return r.V }

func (r *Guild) check() error { return checkEmoji(r.PinEmoji) }

// NewGuild returns the record of s.
func NewGuild(s links.GuildSettings) *Guild {
	return &Guild{V: Version, PinEmoji: s.PinEmoji}
}

// Settings returns the settings of guildID the record holds.
func (r *Guild) Settings(guildID string) links.GuildSettings {
	return links.GuildSettings{ID: guildID, PinEmoji: r.PinEmoji}
}

// Empty reports whether the record holds only defaults: nothing to
// store.
func (r *Guild) Empty() bool { return r.PinEmoji == "" }

// CheckPinEmoji checks the arguments of links.Guilds.SetPinEmoji.
func CheckPinEmoji(guildID, emoji string) error {
	if err := links.CheckID("guild id", guildID); err != nil {
		return err
	}
	return checkEmoji(emoji)
}

// checkEmoji reports a pin emoji longer than links.MaxEmojiLen, not
// valid UTF-8, or holding spaces or control characters; "" (the bot's
// default) is allowed.
func checkEmoji(emoji string) error {
	if len(emoji) > links.MaxEmojiLen {
		return fmt.Errorf("%w: pin emoji is %d bytes, more than %d", links.ErrInvalid, len(emoji), links.MaxEmojiLen)
	}
	if !utf8.ValidString(emoji) {
		return fmt.Errorf("%w: pin emoji is not valid UTF-8", links.ErrInvalid)
	}
	for _, r := range emoji {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return fmt.Errorf("%w: pin emoji %q has a space or a control character", links.ErrInvalid, emoji)
		}
	}
	return nil
}
