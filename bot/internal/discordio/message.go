package discordio

import (
	"path"
	"strings"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/snowflake/v2"
)

// Message is what the bot needs of a MESSAGE_CREATE: where it was posted,
// by whom, and what the event shows of its pictures. Without the message
// content intent Discord sends a guild message's content, attachments
// and embeds empty: Shown is then false, and Images says nothing.
type Message struct {
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
}

// MessageOf returns the message a MESSAGE_CREATE event's data holds; false
// for any other event.
func MessageOf(ev gateway.EventData) (Message, bool) {
	var m *discord.Message
	switch e := ev.(type) {
	case gateway.EventMessageCreate:
		m = &e.Message
	case *gateway.EventMessageCreate:
		if e == nil {
			return Message{}, false
		}
		m = &e.Message
	default:
		return Message{}, false
	}
	out := Message{
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

// imageExts are the file extensions taken as pictures when an attachment
// has no content type.
var imageExts = map[string]bool{".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".webp": true, ".avif": true}

func imageAttachment(a discord.Attachment) bool {
	if a.ContentType != nil && *a.ContentType != "" {
		return strings.HasPrefix(strings.ToLower(*a.ContentType), "image/")
	}
	return imageExts[strings.ToLower(path.Ext(a.Filename))]
}
