package discordtest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

// Reaction is one emoji's reactions on a message.
type Reaction struct {
	// Emoji is a unicode emoji ("📌"), or a custom emoji as Discord's
	// reaction routes name it, "name:id".
	Emoji string
	// UserIDs are the users who reacted with it, in order; the count is
	// their number.
	UserIDs []snowflake.ID
}

// wireEmoji is a partial emoji as reactions carry it: a unicode emoji has
// a null id.
type wireEmoji struct {
	ID       *snowflake.ID `json:"id"`
	Name     string        `json:"name"`
	Animated bool          `json:"animated,omitempty"`
}

type wireReactionCountDetails struct {
	Burst  int `json:"burst"`
	Normal int `json:"normal"`
}

// wireReaction is an entry of a message's reactions.
type wireReaction struct {
	Count        int                      `json:"count"`
	CountDetails wireReactionCountDetails `json:"count_details"`
	Me           bool                     `json:"me"`
	MeBurst      bool                     `json:"me_burst"`
	Emoji        wireEmoji                `json:"emoji"`
	BurstColors  []string                 `json:"burst_colors"`
}

// wireReactionAdd is the MESSAGE_REACTION_ADD payload.
type wireReactionAdd struct {
	UserID          snowflake.ID  `json:"user_id"`
	ChannelID       snowflake.ID  `json:"channel_id"`
	MessageID       snowflake.ID  `json:"message_id"`
	GuildID         *snowflake.ID `json:"guild_id,omitempty"`
	Member          *wireMember   `json:"member,omitempty"`
	Emoji           wireEmoji     `json:"emoji"`
	MessageAuthorID *snowflake.ID `json:"message_author_id,omitempty"`
	Burst           bool          `json:"burst"`
	Type            int           `json:"type"`
}

// wireReactionRemove is the MESSAGE_REACTION_REMOVE payload.
type wireReactionRemove struct {
	UserID    snowflake.ID  `json:"user_id"`
	ChannelID snowflake.ID  `json:"channel_id"`
	MessageID snowflake.ID  `json:"message_id"`
	GuildID   *snowflake.ID `json:"guild_id,omitempty"`
	Emoji     wireEmoji     `json:"emoji"`
	Burst     bool          `json:"burst"`
	Type      int           `json:"type"`
}

// parseEmoji reads an emoji as Reaction.Emoji spells it.
func parseEmoji(e string) (wireEmoji, error) {
	if e == "" {
		return wireEmoji{}, fmt.Errorf("%w: empty emoji", ErrInvalid)
	}
	name, rawID, custom := strings.Cut(e, ":")
	if !custom {
		return wireEmoji{Name: e}, nil
	}
	id, err := snowflake.Parse(rawID)
	if name == "" || err != nil {
		return wireEmoji{}, fmt.Errorf("%w: emoji %q is neither unicode nor name:id", ErrInvalid, e)
	}
	return wireEmoji{ID: &id, Name: name}, nil
}

// wire returns the reaction's entry in a message's JSON; me tells whether
// the bot is among the users.
func (r Reaction) wire(botID snowflake.ID) wireReaction {
	emoji, _ := parseEmoji(r.Emoji)
	return wireReaction{
		Count:        len(r.UserIDs),
		CountDetails: wireReactionCountDetails{Normal: len(r.UserIDs)},
		Me:           slices.Contains(r.UserIDs, botID),
		Emoji:        emoji,
		BurstColors:  []string{},
	}
}

// cloneReactions deep-copies reactions, dropping those nobody made.
func cloneReactions(in []Reaction) []Reaction {
	var out []Reaction
	for _, r := range in {
		if len(r.UserIDs) > 0 {
			out = append(out, Reaction{Emoji: r.Emoji, UserIDs: slices.Clone(r.UserIDs)})
		}
	}
	return out
}

// AddReaction makes a user react to a message with an emoji, a unicode
// emoji or a custom one as "name:id". The user must be a member of the
// message's guild. The shard owning the guild receives
// MESSAGE_REACTION_ADD if it identified with GUILD_MESSAGE_REACTIONS.
// Reacting again with the same emoji changes nothing and sends nothing,
// as on Discord.
func (s *Server) AddReaction(channelID, messageID, userID snowflake.ID, emoji string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, e, err := s.reactionTargetLocked(channelID, messageID, userID, emoji)
	if err != nil {
		return err
	}
	gs := s.guilds[m.GuildID]
	mem, ok := gs.members[userID]
	if !ok {
		return fmt.Errorf("%w %d in guild %d", ErrUnknownMember, userID, m.GuildID)
	}
	i := slices.IndexFunc(m.Reactions, func(r Reaction) bool { return r.Emoji == emoji })
	switch {
	case i < 0:
		m.Reactions = append(m.Reactions, Reaction{Emoji: emoji, UserIDs: []snowflake.ID{userID}})
	case slices.Contains(m.Reactions[i].UserIDs, userID):
		return nil
	default:
		m.Reactions[i].UserIDs = append(m.Reactions[i].UserIDs, userID)
	}
	if sess := s.sessionForGuildLocked(m.GuildID); sess != nil && sess.intents.Has(IntentGuildMessageReactions) {
		wm := s.wireMemberLocked(mem, true)
		s.dispatchLocked(sess, "MESSAGE_REACTION_ADD", wireReactionAdd{
			UserID:          userID,
			ChannelID:       m.ChannelID,
			MessageID:       m.ID,
			GuildID:         ptr(m.GuildID),
			Member:          &wm,
			Emoji:           e,
			MessageAuthorID: ptr(m.AuthorID),
		})
	}
	s.notifyLocked()
	return nil
}

// RemoveReaction takes a user's reaction with an emoji off a message, as
// when the user clicks it again. The shard owning the guild receives
// MESSAGE_REACTION_REMOVE if it identified with GUILD_MESSAGE_REACTIONS.
// Removing a reaction that is not there changes nothing and sends nothing.
func (s *Server) RemoveReaction(channelID, messageID, userID snowflake.ID, emoji string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, e, err := s.reactionTargetLocked(channelID, messageID, userID, emoji)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(m.Reactions, func(r Reaction) bool { return r.Emoji == emoji })
	if i < 0 || !slices.Contains(m.Reactions[i].UserIDs, userID) {
		return nil
	}
	m.Reactions[i].UserIDs = slices.DeleteFunc(m.Reactions[i].UserIDs, func(id snowflake.ID) bool { return id == userID })
	if len(m.Reactions[i].UserIDs) == 0 {
		m.Reactions = slices.Delete(m.Reactions, i, i+1)
	}
	if sess := s.sessionForGuildLocked(m.GuildID); sess != nil && sess.intents.Has(IntentGuildMessageReactions) {
		s.dispatchLocked(sess, "MESSAGE_REACTION_REMOVE", wireReactionRemove{
			UserID:    userID,
			ChannelID: m.ChannelID,
			MessageID: m.ID,
			GuildID:   ptr(m.GuildID),
			Emoji:     e,
		})
	}
	s.notifyLocked()
	return nil
}

// reactionTargetLocked finds the guild message a reaction goes on and
// checks the user and the emoji. Ephemeral messages take no reactions.
// The caller holds s.mu.
func (s *Server) reactionTargetLocked(channelID, messageID, userID snowflake.ID, emoji string) (*Message, wireEmoji, error) {
	if _, ok := s.channels[channelID]; !ok {
		return nil, wireEmoji{}, fmt.Errorf("%w %d", ErrUnknownChannel, channelID)
	}
	m, ok := s.messages[messageID]
	if !ok || m.ChannelID != channelID || m.Flags.Has(discord.MessageFlagEphemeral) {
		return nil, wireEmoji{}, fmt.Errorf("%w %d in channel %d", ErrUnknownMessage, messageID, channelID)
	}
	if _, ok := s.users[userID]; !ok {
		return nil, wireEmoji{}, fmt.Errorf("%w %d", ErrUnknownUser, userID)
	}
	e, err := parseEmoji(emoji)
	return m, e, err
}
