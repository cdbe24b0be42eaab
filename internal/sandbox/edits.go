package sandbox

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// The console's edits and deletes: /edit adds images to a message posted
// with /post, /delete deletes one, as its author does in Discord. The
// Discord stand-in then sends the bot MESSAGE_UPDATE or MESSAGE_DELETE:
// in an auto-pin channel the bot queues an edit's new pictures only, and
// a delete cancels the message's waiting pins that auto-pin or a pin
// reaction queued. The bot works in its own time: the console does not
// wait for it; /queue and /dms show what it did.

// editUsage is /edit's usage line.
const editUsage = "usage: /edit MESSAGE [+N], MESSAGE a message ID of the current channel or a message link, N the images to add (1 to 10, 1 when left out)"

// editMessage adds images to a message the user posted: "/edit MESSAGE
// [+N]", N images (1 by default; the + may be left out).
func (c *Console) editMessage(ctx context.Context, arg string) {
	fields := strings.Fields(arg)
	if len(fields) == 0 || len(fields) > 2 {
		c.errorf("%s", editUsage)
		return
	}
	n := 1
	if len(fields) == 2 {
		num := strings.TrimPrefix(fields[1], "+")
		v, err := strconv.ParseUint(num, 10, 8)
		switch {
		case err != nil && !errors.Is(err, strconv.ErrRange):
			c.errorf("%.40q is not a number of images to add; %s", fields[1], editUsage)
			return
		case err != nil || v < 1 || v > MaxPostImages:
			c.errorf("an edit adds 1 to %d images, not %.40s", MaxPostImages, num)
			return
		}
		n = int(v)
	}
	m, ok := c.ownPost(fields[0], "edit")
	if !ok {
		return
	}
	switch room := MaxPostImages - len(m.Attachments); {
	case room <= 0:
		c.errorf("message %d has %d images, the most Discord allows on a message", m.ID, len(m.Attachments))
		return
	case n > room:
		c.errorf("message %d has %s, and Discord allows %d on a message: it takes %s more at most",
			m.ID, plural(len(m.Attachments), "image"), MaxPostImages, plural(room, "image"))
		return
	}
	edited, err := c.sb.edit(m, n)
	if err != nil {
		c.errorf("%v", err)
		return
	}
	ch, _ := channelByID(m.ChannelID)
	c.printf("%s edited message %d in #%s: %s added, %d now: %s\n",
		c.user.Name, m.ID, ch.Name, plural(n, "image"), len(edited.Attachments), messageURL(edited))
	if r, owner, ok := c.activeRule(ctx, m.ChannelID); ok {
		c.printf("#%s pins itself: Pinbot queues the new pictures only, for %s, as %s; %s's /queue shows them, /dms the results.\n",
			ch.Name, c.accountLabel(r.Account), owner, owner)
	} else if c.sb.links != nil {
		c.printf("#%s does not pin itself, so Pinbot leaves the edit alone: /react or /pin pins the new pictures.\n", ch.Name)
	}
}

// deleteMessage deletes a message the user posted: "/delete MESSAGE".
func (c *Console) deleteMessage(arg string) {
	fields := strings.Fields(arg)
	if len(fields) != 1 {
		c.errorf("usage: /delete MESSAGE, MESSAGE a message ID of the current channel or a message link")
		return
	}
	m, ok := c.ownPost(fields[0], "delete")
	if !ok {
		return
	}
	if err := c.sb.delete(m.ID); err != nil {
		c.errorf("%v", err)
		return
	}
	ch, _ := channelByID(m.ChannelID)
	c.printf("%s deleted message %d in #%s.\n", c.user.Name, m.ID, ch.Name)
	c.printf("Pinbot cancels its pins still waiting that auto-pin or a pin reaction queued, and tells whose they were by direct message (/dms); pins already made stay.\n")
}

// ownPost finds the message arg names, as reactTarget does, for verb
// (edit or delete): one posted with /post by the current user, as
// Discord lets only a message's author edit it (and, here, where nobody
// has Manage Messages, delete it). Otherwise it prints why and returns
// false.
func (c *Console) ownPost(arg, verb string) (discordtest.Message, bool) {
	m, err := c.reactTarget(arg)
	if err != nil {
		c.errorf("%v", err)
		return discordtest.Message{}, false
	}
	if !c.sb.isPosted(m.ID) {
		c.errorf("message %d was not posted with /post: only those can be edited or deleted in the sandbox", m.ID)
		return discordtest.Message{}, false
	}
	if m.AuthorID != c.user.ID {
		author := userName(m.AuthorID)
		c.errorf("message %d was posted by %s: only its author can %s it (/as %s first)", m.ID, author, verb, author)
		return discordtest.Message{}, false
	}
	return m, true
}
