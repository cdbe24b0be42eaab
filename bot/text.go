package bot

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/internal/discordio"
)

// splitMessage cuts s into parts of at most max runes, at line ends where
// it can, inside a line only when the line alone is too long. An empty s
// gives one empty part.
func splitMessage(s string, max int) []string {
	if utf8.RuneCountInString(s) <= max {
		return []string{s}
	}
	var parts []string
	var cur strings.Builder
	curLen := 0
	flush := func() {
		if curLen > 0 {
			parts = append(parts, strings.TrimRight(cur.String(), "\n"))
			cur.Reset()
			curLen = 0
		}
	}
	for _, line := range strings.SplitAfter(s, "\n") {
		n := utf8.RuneCountInString(line)
		if curLen+n <= max {
			cur.WriteString(line)
			curLen += n
			continue
		}
		flush()
		for n > max {
			r := []rune(line)
			parts = append(parts, string(r[:max]))
			line = string(r[max:])
			n -= max
		}
		cur.WriteString(line)
		curLen = n
	}
	flush()
	if len(parts) == 0 {
		return []string{""}
	}
	return parts
}

// markdownEscaper escapes the characters Discord reads as formatting.
var markdownEscaper = strings.NewReplacer(
	`\`, `\\`, `*`, `\*`, `_`, `\_`, `~`, `\~`, "`", "\\`", `|`, `\|`, `>`, `\>`, `#`, `\#`, `[`, `\[`, `]`, `\]`,
)

// plain makes a name from Pinterest or a user safe to show as text.
func plain(s string) string { return markdownEscaper.Replace(s) }

// accountName is how an account is shown: its username, or its id.
func accountName(username, id string) string {
	return plain(accountLabel(username, id))
}

// accountLabel names an account in plain-text places (select-menu labels,
// which Discord shows without markdown, so nothing is escaped).
func accountLabel(username, id string) string {
	if username == "" {
		return "account " + id
	}
	return "@" + username
}

// FormatDuration writes d for people, as every duration pinbot shows is
// written: hours, minutes and seconds, largest first, the zero ones left
// out: "11h 59m 48s", "12h", "3m 5s", "45s", "0s" below a second. What is
// below a second is dropped: round d first to the precision wanted
// ("11h 59m" to the minute). A negative d starts with "-".
func FormatDuration(d time.Duration) string {
	if d < 0 {
		return "-" + FormatDuration(-d)
	}
	h, m, s := int64(d/time.Hour), int64(d%time.Hour/time.Minute), int64(d%time.Minute/time.Second)
	var parts []string
	if h > 0 {
		parts = append(parts, fmt.Sprintf("%dh", h))
	}
	if m > 0 {
		parts = append(parts, fmt.Sprintf("%dm", m))
	}
	if s > 0 || len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("%ds", s))
	}
	return strings.Join(parts, " ")
}

// timeText is how every reply shows an instant: the exact time, which
// Discord renders in each reader's time zone ("16:05:06"), beside the
// relative one ("in 12 hours"): "<t:1772370000:T> (<t:1772370000:R>)".
// Discord's timestamps count whole seconds: t is rounded up to the second,
// so that no time shown is before the instant it stands for.
func timeText(t time.Time) string {
	s := unixCeil(t)
	return fmt.Sprintf("<t:%d:T> (<t:%d:R>)", s, s)
}

// plainTimeText is timeText for the places Discord shows without markdown
// (select-menu labels and descriptions), where a timestamp would show as
// its code: the same instant, rounded up to the second, as a time of day
// in UTC, beside how long it is from now, to the second: "16:05:06 UTC
// (in 1m 17s)", "16:05:06 UTC (now)", "16:05:06 UTC (3m ago)".
func plainTimeText(t, now time.Time) string {
	at := time.Unix(unixCeil(t), 0).UTC()
	d := at.Sub(now)
	if r := d % time.Second; r != 0 { // up to the second, as at is
		d -= r
		if r > 0 {
			d += time.Second
		}
	}
	rel := "now"
	switch {
	case d >= time.Second:
		rel = "in " + FormatDuration(d)
	case d <= -time.Second:
		rel = FormatDuration(-d) + " ago"
	}
	return at.Format("15:04:05") + " UTC (" + rel + ")"
}

// unixCeil is t in Unix seconds, rounded up.
func unixCeil(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// countText writes a count with its noun agreeing: "1 pin", "2 pins",
// "0 pins".
func countText(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// truncateRunes cuts s to at most n runes.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

// errText is err's text with the secrets disgo's errors may quote (an
// interaction's token in a request URL, OAuth states and codes) cut out,
// for the bot's logs.
func errText(err error) string { return discordio.ErrText(err) }

// firstNonEmpty returns the first of ss that is not "", or "".
func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// What pin reactions tell the user (reactions.go); emoji is the pin emoji
// as a message shows it, link the message's.

// msgReactionReport opens the report of a pin reaction's batch.
func msgReactionReport(emoji, link, report string) string {
	return fmt.Sprintf("Your %s on <%s>:\n%s", emoji, link, report)
}

// msgReactionUnreadable says the reacted message could not be read; reason
// is fetchMessage's.
func msgReactionUnreadable(emoji, link, reason string) string {
	why := "Discord did not return it; add your reaction again later"
	switch reason {
	case failMessageGone:
		why = "it is gone"
	case failNoAccess:
		why = "Pinbot cannot read that channel"
	}
	return fmt.Sprintf("Your %s on <%s> pinned nothing: %s.", emoji, link, why)
}

// msgReactionCanceled says how many queued pins taking the reaction off
// canceled.
func msgReactionCanceled(emoji, link string, n int) string {
	return fmt.Sprintf("You took your %s off <%s>, so Pinbot canceled %s of it. Pins already made stay.",
		emoji, link, countText(n, "queued pin", "queued pins"))
}

// msgReactionCancelFailed says taking the reaction off canceled nothing,
// as the queue could not be read or changed.
func msgReactionCancelFailed(emoji, link string) string {
	return fmt.Sprintf("You took your %s off <%s>, but Pinbot cannot cancel its queued pins right now (its storage is unavailable). Use /queue to cancel them.",
		emoji, link)
}

// msgReactionNotLinked tells a user with no linked account how to pin with
// a reaction; sent once a day at most.
func msgReactionNotLinked(emoji string) string {
	return fmt.Sprintf("You reacted with %s, which pins a message's pictures to your Pinterest account, but you have not linked one yet. "+
		"Run /link in the server to connect it, then react again. (Pinbot sends this note once a day at most.)", emoji)
}

// msgReactionChannelPrefix opens the answer to a pin reaction posted in the
// channel, for a user whose DMs are closed; it mentions them without a
// ping (noMentions).
func msgReactionChannelPrefix(user snowflake.ID) string {
	return "<@" + user.String() + ">, Pinbot could not send you a direct message:\n"
}

// What /server tells a server's managers (server.go).

const (
	msgServerNotManager  = "Only members who may manage this server (Manage Server) can change Pinbot's settings for it."
	msgServerUnavailable = "Pinbot cannot read or store this server's settings right now. Please try again in a few minutes."
)

// msgServerSettings shows the server's settings: emoji is its pin emoji
// as a message shows it, custom whether the server chose it, def the
// bot's; off says that the bot has pin reactions turned off.
func msgServerSettings(emoji string, custom bool, def string, off bool) string {
	var sb strings.Builder
	sb.WriteString("**Pinbot's settings for this server**\n")
	if custom {
		fmt.Fprintf(&sb, "Pin reaction: %s (chosen for this server; Pinbot's default is %s)\n", emoji, def)
	} else {
		fmt.Fprintf(&sb, "Pin reaction: %s (Pinbot's default)\n", emoji)
	}
	sb.WriteString("A linked member who reacts to a message with it pins the message's pictures.\n")
	sb.WriteString("Change it with `/server pin_emoji:`, an emoji such as 🖼️ or one of this server's; `reset` goes back to the default.")
	if off {
		sb.WriteString("\n" + msgServerReactionsOff)
	}
	return sb.String()
}

// msgServerReactionsOff adds that reactions pin nothing on this bot.
const msgServerReactionsOff = "Pin reactions are turned off on this Pinbot, so reactions pin nothing for now."

// msgServerPinEmojiSet confirms the server's new pin emoji.
func msgServerPinEmojiSet(emoji string, off bool) string {
	s := fmt.Sprintf("Done: in this server, a linked member's %s on a message now pins its pictures; other emojis do not.", emoji)
	if off {
		s += "\n" + msgServerReactionsOff
	}
	return s
}

// msgServerPinEmojiReset confirms the server went back to the bot's pin
// emoji, def.
func msgServerPinEmojiReset(def string, off bool) string {
	s := fmt.Sprintf("Done: this server uses Pinbot's default pin reaction again, %s.", def)
	if off {
		s += "\n" + msgServerReactionsOff
	}
	return s
}

// msgServerBadEmoji refuses a pin_emoji that is not one emoji.
func msgServerBadEmoji(raw string) string {
	return fmt.Sprintf("`%s` cannot be this server's pin reaction: it is not one emoji. Give one emoji, such as 🖼️, or one of this server's emojis (pick it as you would in a message), or `reset` for Pinbot's default.",
		quoteInput(raw))
}

// Texts of /autopin (autopin_command.go).
const (
	msgAutopinNotManager  = "You need the Manage Channels permission in that channel to make it pin itself."
	msgAutopinNotAllowed  = "Only the member who set this channel to pin itself, or a member with the Manage Channels permission in it, may change it."
	msgAutopinNotText     = "Only a server's text or announcement channels can pin themselves."
	msgAutopinUnavailable = "Pinbot could not read or store this server's auto-pin channels just now. Please try again."
	msgAutopinNone        = "No channel of this server pins itself. `/autopin add` sets one (Manage Channels)."
	msgAutopinOff         = "Auto-pin is turned off on this Pinbot, so no channel pins itself for now."
)

// msgAutopinUnknown says the channel has no auto-pin rule.
func msgAutopinUnknown(channel snowflake.ID) string {
	return fmt.Sprintf("<#%s> does not pin itself: there is nothing to change. `/autopin list` shows the channels that do.", channel)
}

// msgAutopinExists refuses a second rule for one channel.
func msgAutopinExists(channel, owner snowflake.ID) string {
	return fmt.Sprintf("<#%s> already pins itself, for <@%s>. `/autopin remove` it first to change where its pictures go.", channel, owner)
}

// msgAutopinFull refuses a rule beyond the server's limit.
func msgAutopinFull(max int) string {
	return fmt.Sprintf("This server already has %d auto-pin channels, the most it may have. `/autopin remove` one first.", max)
}

// msgAutopinAdded confirms a new rule.
func msgAutopinAdded(channel snowflake.ID, name, board string, off bool) string {
	s := fmt.Sprintf("Done: the pictures posted in <#%s> from now on are queued for %s, board %s, in the order they come, within the account's pin limit. The results come in your direct messages; `/queue` shows and cancels them.",
		channel, name, quoteInput(board))
	if off {
		s += "\n" + msgAutopinOff
	}
	return s
}

// msgAutopinPaused confirms a pause (or that it was paused already).
func msgAutopinPaused(channel snowflake.ID, already bool) string {
	if already {
		return fmt.Sprintf("<#%s> was already paused. `/autopin resume` starts it again.", channel)
	}
	return fmt.Sprintf("Paused: pictures posted in <#%s> are not queued until `/autopin resume`. Pins already queued stay queued (`/queue`).", channel)
}

// msgAutopinResumed confirms a resume (or that it was not paused).
func msgAutopinResumed(channel snowflake.ID, already bool) string {
	if already {
		return fmt.Sprintf("<#%s> was not paused: its pictures are queued as they come.", channel)
	}
	return fmt.Sprintf("Resumed: the pictures posted in <#%s> from now on are queued again.", channel)
}

// msgAutopinRemoved confirms a removal.
func msgAutopinRemoved(channel snowflake.ID) string {
	return fmt.Sprintf("Done: <#%s> no longer pins itself. Pins already queued stay queued (`/queue`).", channel)
}
