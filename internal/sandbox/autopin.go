package sandbox

import (
	"context"
	"fmt"
	"strings"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/links"
)

// The console's server commands: /autopin (add, list, pause, resume,
// remove) and /server, run as the current user in the current channel,
// as the slash commands a person types in Discord. A channel option is
// sent as Discord sends one: the channel's ID, with the channel resolved
// and the user's permissions in it, which /autopin checks (the mods role
// has Manage Channels and Manage Server; see world.go).

var (
	cmdAutopin = botCommand("autopin").Name
	cmdServer  = botCommand("server").Name
)

// autopinUsage is /autopin's usage line.
const autopinUsage = "usage: /autopin add CHANNEL BOARD, /autopin list, /autopin pause|resume|remove CHANNEL (CHANNEL such as art or #art, BOARD a board's name or id)"

// autopin runs "/autopin SUB [CHANNEL] [BOARD]".
func (c *Console) autopin(ctx context.Context, arg string) {
	sub, rest, _ := strings.Cut(strings.TrimSpace(arg), " ")
	sub, rest = strings.ToLower(sub), strings.TrimSpace(rest)
	var opts []discordtest.CommandOption
	switch sub {
	case "list":
		if rest != "" {
			c.errorf("%s", autopinUsage)
			return
		}
	case "add", "pause", "resume", "remove":
		name, board, _ := strings.Cut(rest, " ")
		name = strings.TrimPrefix(name, "channel:")
		board = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(board), "board:"))
		if name == "" || (sub == "add") != (board != "") {
			c.errorf("%s", autopinUsage)
			return
		}
		ch, ok := c.findChannel(name)
		if !ok {
			return
		}
		opts = append(opts, discordtest.CommandOption{Name: "channel", Type: discord.ApplicationCommandOptionTypeChannel, Value: ch.ID})
		if board != "" {
			opts = append(opts, discordtest.CommandOption{Name: "board", Value: board})
		}
	default:
		c.errorf("%s", autopinUsage)
		return
	}
	c.run(ctx, discordtest.ChatInput{Name: cmdAutopin, Options: []discordtest.CommandOption{
		{Name: sub, Type: discord.ApplicationCommandOptionTypeSubCommand, Options: opts},
	}}, c.channel.ID)
}

// findChannel finds the demo channel arg names ("art", "#art" or its ID)
// among those the user can view, as Discord's channel picker offers
// them; otherwise it prints why and returns false.
func (c *Console) findChannel(arg string) (demoChannel, bool) {
	want := strings.ToLower(strings.TrimPrefix(arg, "#"))
	for _, ch := range channels {
		if ch.Name == want || ch.ID.String() == want {
			if !c.user.canView(ch) {
				c.errorf("%s cannot view #%s", c.user.Name, ch.Name)
				return demoChannel{}, false
			}
			return ch, true
		}
	}
	c.errorf("no channel %q; there are %s", arg, channelList())
	return demoChannel{}, false
}

// channelList names the demo channels: "#general, #art, #staff".
func channelList() string {
	names := make([]string, len(channels))
	for i, ch := range channels {
		names[i] = "#" + ch.Name
	}
	return strings.Join(names, ", ")
}

// server runs "/server [pin_emoji:EMOJI|reset]"; the option's name may be
// left out.
func (c *Console) server(ctx context.Context, arg string) {
	var opts []discordtest.CommandOption
	if arg != "" {
		v := strings.TrimSpace(strings.TrimPrefix(arg, "pin_emoji:"))
		if v == "" || strings.Contains(v, " ") {
			c.errorf("usage: /server [pin_emoji:EMOJI|reset], one emoji such as 🖼️, or reset for Pinbot's default")
			return
		}
		opts = append(opts, discordtest.CommandOption{Name: "pin_emoji", Value: v})
	}
	c.run(ctx, discordtest.ChatInput{Name: cmdServer, Options: opts}, c.channel.ID)
}

// serverPinEmoji is the emoji pin reactions use in the demo server: the
// one /server chose, else the bot's.
func (c *Console) serverPinEmoji(ctx context.Context) string {
	if c.sb.links == nil {
		return pinEmoji // a console over the Discord stand-in alone, in tests
	}
	gs, err := c.sb.links.GuildSettings(ctx, GuildID.String())
	if err != nil || gs.PinEmoji == "" {
		return pinEmoji
	}
	e, err := bot.ParsePinEmoji(gs.PinEmoji)
	if err != nil {
		return pinEmoji
	}
	return e
}

// sameEmoji reports whether two emojis are one, with or without the
// variation selector Discord's clients add to some.
func sameEmoji(a, b string) bool {
	return strings.ReplaceAll(a, "\ufe0f", "") == strings.ReplaceAll(b, "\ufe0f", "")
}

// describeAutopin is a line for the banner: the demo server's auto-pin
// rules, or "" when it has none.
func (c *Console) describeAutopin(ctx context.Context) string {
	rs, err := c.sb.links.AutopinRules(ctx, GuildID.String())
	if err != nil || len(rs) == 0 {
		return ""
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		name := r.Channel
		for _, ch := range channels {
			if ch.ID.String() == r.Channel {
				name = "#" + ch.Name
			}
		}
		board := r.BoardName
		if board == "" {
			board = r.Board
		}
		owner := r.Owner
		for _, u := range users {
			if u.ID.String() == r.Owner {
				owner = u.Name
			}
		}
		parts[i] = fmt.Sprintf("%s → %s, board %s (%s)", name, c.accountLabel(r.Account), board, owner)
		if r.Paused {
			parts[i] += ", paused"
		}
	}
	return "Auto-pin: " + strings.Join(parts, "; ")
}

// autopinNote says, after /post, that the current channel pins itself,
// for whom: "" when it has no active rule.
func (c *Console) autopinNote(ctx context.Context) string {
	r, owner, ok := c.activeRule(ctx, c.channel.ID)
	if !ok {
		return ""
	}
	return fmt.Sprintf("#%s pins itself (/autopin list): Pinbot queues its pictures for %s, as %s; %s's /queue shows them, /dms the results.",
		c.channel.Name, c.accountLabel(r.Account), owner, owner)
}

// activeRule returns channel's auto-pin rule, and its owner's name, when
// it has one that is not paused.
func (c *Console) activeRule(ctx context.Context, channel snowflake.ID) (r links.AutopinRule, owner string, ok bool) {
	if c.sb.links == nil {
		return links.AutopinRule{}, "", false // a console over the Discord stand-in alone, in tests
	}
	rs, err := c.sb.links.AutopinRules(ctx, GuildID.String())
	if err != nil {
		return links.AutopinRule{}, "", false
	}
	for _, r := range rs {
		if r.Channel != channel.String() || r.Paused {
			continue
		}
		owner := r.Owner
		if id, err := snowflake.Parse(r.Owner); err == nil {
			owner = userName(id)
		}
		return r, owner, true
	}
	return links.AutopinRule{}, "", false
}
