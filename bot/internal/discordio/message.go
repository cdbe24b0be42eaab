package discordio

import (
	"path"
	"strings"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/snowflake/v2"
)

// Message is what the bot needs of a MESSAGE_CREATE or MESSAGE_UPDATE:
// where it was posted, by whom, and what the event shows of its
// pictures; of a MESSAGE_DELETE (or one message of a
// MESSAGE_DELETE_BULK), where it was. Without the message content intent
// Discord sends a guild message's content, attachments and embeds empty:
// Shown is then false, and Images says nothing. An update may be partial
// (Discord unfolding a link's embed): its author is then 0.
type Message struct {
	Kind                          MessageKind
	GuildID, ChannelID, MessageID snowflake.ID // GuildID is 0 outside a guild
	AuthorID                      snowflake.ID
	// Bot says the author is a bot (or a webhook).
	Bot bool
	// Shown says the event carries the message's content, attachments or
	// embeds: the bot may read them. Attachments counts the attachments
	// and Images says one of them or of the embeds is a picture.
	Shown       bool
	Attachments int
	Images      bool
	// Replayed says Discord sent the event again as it replayed a session
	// resumed from another process's checkpoint: that process may have
	// worked on it already.
	Replayed bool
}

// MessageKind says which event a Message comes from.
type MessageKind uint8

const (
	MessageCreated MessageKind = iota // MESSAGE_CREATE
	MessageUpdated                    // MESSAGE_UPDATE
	MessageDeleted                    // MESSAGE_DELETE, MESSAGE_DELETE_BULK
)

// MessageOf returns the message a MESSAGE_CREATE, MESSAGE_UPDATE or
// MESSAGE_DELETE event's data holds; false for any other event (a
// MESSAGE_DELETE_BULK gives several: see DeletedOf).
func MessageOf(ev gateway.EventData) (Message, bool) {
	var m *discord.Message
	kind := MessageCreated
	switch e := ev.(type) {
	case gateway.EventMessageCreate:
		m = &e.Message
	case *gateway.EventMessageCreate:
		if e == nil {
			return Message{}, false
		}
		m = &e.Message
	case gateway.EventMessageUpdate:
		m, kind = &e.Message, MessageUpdated
	case *gateway.EventMessageUpdate:
		if e == nil {
			return Message{}, false
		}
		m, kind = &e.Message, MessageUpdated
	case gateway.EventMessageDelete:
		return deleted(e.ChannelID, e.ID, e.GuildID), true
	case *gateway.EventMessageDelete:
		if e == nil {
			return Message{}, false
		}
		return deleted(e.ChannelID, e.ID, e.GuildID), true
	default:
		return Message{}, false
	}
	out := Message{
		Kind:      kind,
		ChannelID: m.ChannelID, MessageID: m.ID, AuthorID: m.Author.ID,
		Bot:         m.Author.Bot || m.WebhookID != nil,
		Shown:       m.Content != "" || len(m.Attachments) > 0 || len(m.Embeds) > 0,
		Attachments: len(m.Attachments),
	}
	if m.GuildID != nil {
		out.GuildID = *m.GuildID
	}
	for _, a := range m.Attachments {
		if imageAttachment(a) {
			out.Images = true
			break
		}
	}
	for _, e := range m.Embeds {
		if e.Image != nil || e.Thumbnail != nil {
			out.Images = true
			break
		}
	}
	return out, true
}

// DeletedOf returns the messages a MESSAGE_DELETE_BULK event's data
// holds, each as a MESSAGE_DELETE's; nil for any other event.
func DeletedOf(ev gateway.EventData) []Message {
	var e gateway.EventMessageDeleteBulk
	switch b := ev.(type) {
	case gateway.EventMessageDeleteBulk:
		e = b
	case *gateway.EventMessageDeleteBulk:
		if b == nil {
			return nil
		}
		e = *b
	default:
		return nil
	}
	out := make([]Message, len(e.IDs))
	for i, id := range e.IDs {
		out[i] = deleted(e.ChannelID, id, e.GuildID)
	}
	return out
}

func deleted(channel, id snowflake.ID, guild *snowflake.ID) Message {
	m := Message{Kind: MessageDeleted, ChannelID: channel, MessageID: id}
	if guild != nil {
		m.GuildID = *guild
	}
	return m
}

// imageExts are the file extensions taken as pictures when an attachment
// has no content type.
var imageExts = map[string]bool{".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".webp": true, ".avif": true}

func imageAttachment(a discord.Attachment) bool {
	if a.ContentType != nil && *a.ContentType != "" {
		return strings.HasPrefix(strings.ToLower(*a.ContentType), "image/")
	}
	return imageExts[strings.ToLower(path.Ext(a.Filename))]
}
