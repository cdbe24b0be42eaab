package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// MaxPostImages is the most images one posted message carries, as
// Discord allows at most 10 attachments on a message.
const MaxPostImages = 10

// post adds a message with n images, written by author in channel, to the
// Discord stand-in, as a user's Discord client posts one, and returns it.
// The stand-in gives it a new ID. Its images are served by the image
// server under a folder of their own, post-K for the Kth post of this run.
func (s *Sandbox) post(channel, author snowflake.ID, text string, n int) (discordtest.Message, error) {
	if n < 1 || n > MaxPostImages {
		return discordtest.Message{}, fmt.Errorf("sandbox: a posted message carries 1 to %d images, not %d", MaxPostImages, n)
	}
	s.postsMu.Lock()
	defer s.postsMu.Unlock()
	folder := postFolder(len(s.posted))
	msg := discordtest.Message{ChannelID: channel, AuthorID: author, Content: text}
	for i := range n {
		name := fmt.Sprintf("image-%d.png", i+1)
		msg.Attachments = append(msg.Attachments, imageAttachment(name, s.images.url(folder, name)))
	}
	m, err := s.discord.AddMessage(msg)
	if err != nil {
		return discordtest.Message{}, fmt.Errorf("sandbox: Discord stand-in: %w", err)
	}
	s.posted = append(s.posted, m.ID)
	return m, nil
}

// errNotPosted is the error of edit and delete on a message post did not
// add: a demo message, or one the bot sent.
var errNotPosted = errors.New("sandbox: only messages posted with /post can be edited or deleted")

// edit adds n images to a message post added, as its author's Discord
// client edits one: the stand-in keeps the images it has, gives the new
// ones IDs and sends the bot MESSAGE_UPDATE. The new images are served
// under the message's folder, numbered after those it has.
func (s *Sandbox) edit(m discordtest.Message, n int) (discordtest.Message, error) {
	if n < 1 || len(m.Attachments)+n > MaxPostImages {
		return discordtest.Message{}, fmt.Errorf("sandbox: a message of %d images takes 1 to %d more, not %d", len(m.Attachments), MaxPostImages-len(m.Attachments), n)
	}
	s.postsMu.Lock()
	defer s.postsMu.Unlock()
	i := slices.Index(s.posted, m.ID)
	if i < 0 {
		return discordtest.Message{}, errNotPosted
	}
	folder := postFolder(i)
	// An attachment with its ID is kept as it is; one without is new.
	atts := make([]discordtest.Attachment, 0, len(m.Attachments)+n)
	for _, a := range m.Attachments {
		atts = append(atts, discordtest.Attachment{ID: a.ID})
	}
	for k := range n {
		name := fmt.Sprintf("image-%d.png", len(m.Attachments)+k+1)
		atts = append(atts, imageAttachment(name, s.images.url(folder, name)))
	}
	edited, err := s.discord.EditMessage(m.ChannelID, m.ID, discordtest.MessageEdit{Attachments: &atts})
	if err != nil {
		return discordtest.Message{}, fmt.Errorf("sandbox: Discord stand-in: %w", err)
	}
	return edited, nil
}

// delete deletes a message post added, as its author's Discord client
// does: the stand-in sends the bot MESSAGE_DELETE.
func (s *Sandbox) delete(id snowflake.ID) error {
	s.postsMu.Lock()
	defer s.postsMu.Unlock()
	if !slices.Contains(s.posted, id) {
		return errNotPosted
	}
	if err := s.discord.DeleteMessage(id); err != nil {
		return fmt.Errorf("sandbox: Discord stand-in: %w", err)
	}
	return nil
}

// isPosted reports whether post added message id.
func (s *Sandbox) isPosted(id snowflake.ID) bool {
	s.postsMu.Lock()
	defer s.postsMu.Unlock()
	return slices.Contains(s.posted, id)
}

// postFolder is the image server's folder of the images of the ith
// posted message, from 0.
func postFolder(i int) string {
	return "post-" + strconv.Itoa(i+1)
}

// postedMessages returns the IDs of the messages post added, oldest
// first, those deleted since included.
func (s *Sandbox) postedMessages() []snowflake.ID {
	s.postsMu.Lock()
	defer s.postsMu.Unlock()
	return slices.Clone(s.posted)
}
