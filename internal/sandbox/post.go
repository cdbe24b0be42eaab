package sandbox

import (
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
	folder := "post-" + strconv.Itoa(len(s.posted)+1)
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

// postedMessages returns the IDs of the messages post added, oldest
// first.
func (s *Sandbox) postedMessages() []snowflake.ID {
	s.postsMu.Lock()
	defer s.postsMu.Unlock()
	return slices.Clone(s.posted)
}
