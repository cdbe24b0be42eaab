package discordtest

import (
	"fmt"
	"slices"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

// MessageEdit is a change to a message, as its author makes it or as
// Discord makes it when a link's embed unfolds. A nil field is left as
// it was.
type MessageEdit struct {
	// Content replaces the text.
	Content *string
	// Attachments replace the attachments: those with the ID of one the
	// message has keep it as it is, those without an ID are new files
	// (filled in as AddMessage fills them), an empty slice removes all.
	Attachments *[]Attachment
	// Embeds replace the embeds.
	Embeds *[]discord.Embed
}

// EditMessage edits a message of a guild channel. A change of content or
// attachments, an author's edit, stamps EditedAt with the server's clock;
// one of embeds alone, Discord unfolding a link, does not. The shard owning the guild receives MESSAGE_UPDATE
// with the whole message if it identified with GUILD_MESSAGES, the
// content emptied without MESSAGE_CONTENT as in MESSAGE_CREATE. An edit
// that changes nothing, or leaves the message empty, is ErrInvalid.
func (s *Server) EditMessage(channelID, messageID snowflake.ID, edit MessageEdit) (Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[channelID]; !ok {
		return Message{}, fmt.Errorf("%w %d", ErrUnknownChannel, channelID)
	}
	m, ok := s.messages[messageID]
	if !ok || m.ChannelID != channelID || m.Flags.Has(discord.MessageFlagEphemeral) {
		return Message{}, fmt.Errorf("%w %d in channel %d", ErrUnknownMessage, messageID, channelID)
	}
	if edit.Content == nil && edit.Attachments == nil && edit.Embeds == nil {
		return Message{}, fmt.Errorf("%w: an edit of message %d with no field", ErrInvalid, messageID)
	}
	now := s.cfg.clock()
	edited := cloneMessage(m)
	if edit.Content != nil {
		edited.Content = *edit.Content
	}
	if edit.Attachments != nil {
		var kept, added []Attachment
		for _, a := range *edit.Attachments {
			if a.ID == 0 {
				added = append(added, a)
				continue
			}
			i := slices.IndexFunc(m.Attachments, func(old Attachment) bool { return old.ID == a.ID })
			if i < 0 {
				return Message{}, fmt.Errorf("%w: message %d has no attachment %d", ErrInvalid, messageID, a.ID)
			}
			kept = append(kept, m.Attachments[i])
		}
		edited.Attachments = append(kept, s.fillAttachmentsLocked(channelID, added, now)...)
	}
	if edit.Embeds != nil {
		edited.Embeds = slices.Clone(*edit.Embeds)
	}
	if rs := checkMessage(&edited, false); rs != nil {
		return Message{}, fmt.Errorf("%w: the edit leaves message %d empty or too long", ErrInvalid, messageID)
	}
	if edit.Content != nil || edit.Attachments != nil {
		edited.EditedAt = now
	}
	*m = edited
	s.dispatchMessageLocked(m, "MESSAGE_UPDATE")
	s.notifyLocked()
	return cloneMessage(m), nil
}
