package sandbox

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/discordtest"
)

// The console's reactions and posts: /post adds a message with images to
// the current channel as the current user; /react and /unreact add and
// take off the user's reaction on a message, as a click in Discord does.
// The Discord stand-in then sends the bot MESSAGE_REACTION_ADD or
// MESSAGE_REACTION_REMOVE, and the bot answers by DM, in its own time:
// the console does not wait for it, and /dms shows it.

// pinEmoji is the sandbox's bot's pin emoji, which a server uses unless
// /server chose another: the bot runs with bot.Config.PinEmoji unset.
const pinEmoji = bot.DefaultPinEmoji

// messageLink matches a Discord message link, as the bot reads them: on
// discord.com or discordapp.com (www., ptb., canary.), in <angle
// brackets> or not.
var messageLink = regexp.MustCompile(`^<?https?://(?:(?:www|ptb|canary)\.)?discord(?:app)?\.com/channels/([0-9]+)/([0-9]+)/([0-9]+)/?>?$`)

// post posts a message with images in the current channel as the current
// user: "/post [N] [TEXT]", N images (1 by default), then the text.
func (c *Console) post(ctx context.Context, arg string) {
	n, text := 1, arg
	if first, rest, _ := strings.Cut(arg, " "); first != "" {
		if v, err := strconv.Atoi(first); err == nil {
			n, text = v, strings.TrimSpace(rest)
		}
	}
	if n < 1 || n > MaxPostImages {
		c.errorf("usage: /post [N] [TEXT], N images from 1 to %d (1 when left out); a text that starts with a number goes after N", MaxPostImages)
		return
	}
	m, err := c.sb.post(c.channel.ID, c.user.ID, text, n)
	if err != nil {
		c.errorf("%v", err)
		return
	}
	c.printf("%s posted message %d in #%s with %s: %s\n", c.user.Name, m.ID, c.channel.Name, plural(n, "image"), messageURL(m))
	c.printf("React with /react %d (%s pins its images), or pin it with /pin %d or /pinmsg %d.\n", m.ID, emojiText(c.serverPinEmoji(ctx)), m.ID, m.ID)
	c.println(c.autopinNote(ctx))
}

// react adds the current user's reaction to a message ("/react MESSAGE
// [EMOJI]") when add is set, and takes it off ("/unreact MESSAGE
// [EMOJI]") otherwise.
func (c *Console) react(ctx context.Context, arg string, add bool) {
	verb := "unreact"
	if add {
		verb = "react"
	}
	fields := strings.Fields(arg)
	if len(fields) == 0 || len(fields) > 2 {
		c.errorf("usage: /%s MESSAGE [EMOJI], MESSAGE a message ID of the current channel or a message link, EMOJI the server's pin emoji unless given", verb)
		return
	}
	pin := c.serverPinEmoji(ctx)
	m, err := c.reactTarget(fields[0])
	if err != nil {
		c.errorf("%v", err)
		return
	}
	emoji := pin
	if len(fields) == 2 {
		if emoji, err = bot.ParsePinEmoji(fields[1]); err != nil {
			c.errorf("%v", err)
			return
		}
	}
	ch, _ := channelByID(m.ChannelID)
	shown := emojiText(emoji)
	had := hasReacted(m, c.user.ID, emoji)
	switch {
	case add && had:
		c.printf("(%s has reacted with %s to message %d already: Discord sends Pinbot nothing again. /unreact %d takes it off.)\n",
			c.user.Name, shown, m.ID, m.ID)
		return
	case !add && !had:
		c.printf("(%s has no %s reaction on message %d: there is nothing to take off.)\n", c.user.Name, shown, m.ID)
		return
	}
	if add {
		err = c.sb.discord.AddReaction(m.ChannelID, m.ID, c.user.ID, emoji)
	} else {
		err = c.sb.discord.RemoveReaction(m.ChannelID, m.ID, c.user.ID, emoji)
	}
	if err != nil {
		c.errorf("sandbox: Discord stand-in: %v", err)
		return
	}
	isPin := sameEmoji(emoji, pin)
	switch {
	case add && isPin:
		c.printf("%s reacted with %s to message %d in #%s.\n", c.user.Name, shown, m.ID, ch.Name)
		c.printf("Pinbot pins its images and answers by direct message: /dms shows it, /queue what it queued.\n")
	case add:
		c.printf("%s reacted with %s to message %d in #%s.\n", c.user.Name, shown, m.ID, ch.Name)
		c.printf("Pinbot pins on %s reactions only in this server: it leaves this one alone.\n", emojiText(pin))
	case isPin:
		c.printf("%s took the %s off message %d in #%s.\n", c.user.Name, shown, m.ID, ch.Name)
		c.printf("Pinbot cancels the pins of that message still waiting in %s's queue and says so by direct message (/dms); pins already made stay.\n", c.user.Name)
	default:
		c.printf("%s took the %s off message %d in #%s.\n", c.user.Name, shown, m.ID, ch.Name)
		c.printf("Pinbot pins on %s reactions only in this server: it leaves this one alone.\n", emojiText(pin))
	}
}

// reactTarget finds the message arg names for /react and /unreact: a
// message ID of the current channel, or a link to a message of the demo
// server in a channel the user can view, as opening the link in Discord
// shows it.
func (c *Console) reactTarget(arg string) (discordtest.Message, error) {
	var channel, id snowflake.ID
	if l := messageLink.FindStringSubmatch(arg); l != nil {
		guild, _ := snowflake.Parse(l[1])
		channel, _ = snowflake.Parse(l[2])
		id, _ = snowflake.Parse(l[3])
		if guild != GuildID {
			return discordtest.Message{}, fmt.Errorf("the link points into server %s; the demo server is %d", l[1], GuildID)
		}
		ch, ok := channelByID(channel)
		if !ok {
			return discordtest.Message{}, fmt.Errorf("the demo server has no channel %s", l[2])
		}
		if !c.user.canView(ch) {
			return discordtest.Message{}, fmt.Errorf("%s cannot view #%s", c.user.Name, ch.Name)
		}
	} else {
		n, err := strconv.ParseUint(arg, 10, 64)
		if err != nil || n == 0 {
			return discordtest.Message{}, fmt.Errorf("%.40q is neither a message ID nor a message link; /messages lists them", arg)
		}
		id, channel = snowflake.ID(n), c.channel.ID
	}
	m, ok := c.sb.discord.Message(id)
	if !ok {
		return discordtest.Message{}, fmt.Errorf("there is no message %d; /messages lists them", id)
	}
	if m.ChannelID != channel {
		ch, ok := channelByID(m.ChannelID)
		switch {
		case !ok:
			return discordtest.Message{}, fmt.Errorf("message %d is in no channel of the demo server", id)
		case !c.user.canView(ch):
			return discordtest.Message{}, fmt.Errorf("there is no message %d in #%s", id, c.channel.Name)
		}
		return discordtest.Message{}, fmt.Errorf("message %d is in #%s, not #%s: /channel %s first, or give its link", id, ch.Name, c.channel.Name, ch.Name)
	}
	return m, nil
}

// hasReacted reports whether user reacted to m with emoji.
func hasReacted(m discordtest.Message, user snowflake.ID, emoji string) bool {
	for _, r := range m.Reactions {
		if r.Emoji == emoji && slices.Contains(r.UserIDs, user) {
			return true
		}
	}
	return false
}

// emojiText is an emoji as a message shows it: a custom one, name:id, as
// :name:.
func emojiText(emoji string) string {
	if name, _, custom := strings.Cut(emoji, ":"); custom {
		return ":" + name + ":"
	}
	return emoji
}

// reactionsText lists a message's reactions and who made them: "📌 alice,
// bob · 👍 carol".
func reactionsText(m discordtest.Message) string {
	var parts []string
	for _, r := range m.Reactions {
		names := make([]string, len(r.UserIDs))
		for i, id := range r.UserIDs {
			names[i] = userName(id)
		}
		parts = append(parts, emojiText(r.Emoji)+" "+strings.Join(names, ", "))
	}
	return strings.Join(parts, " · ")
}

// userName is a demo user's name, else the user's ID.
func userName(id snowflake.ID) string {
	for _, u := range users {
		if u.ID == id {
			return u.Name
		}
	}
	return id.String()
}

// messageURL is a message's link.
func messageURL(m discordtest.Message) string {
	return fmt.Sprintf("https://discord.com/channels/%d/%d/%d", m.GuildID, m.ChannelID, m.ID)
}
