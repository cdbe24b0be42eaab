package bot

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/disgoorg/snowflake/v2"
)

// MaxMessagesPerPin is how many message IDs or links one /pin accepts.
const MaxMessagesPerPin = 10

// messageRef is one message named in a /pin command.
type messageRef struct {
	GuildID   snowflake.ID
	ChannelID snowflake.ID
	MessageID snowflake.ID
	// Raw is the text the user typed for it.
	Raw string
}

// jumpURL is the message's link, as Discord writes it.
func (r messageRef) jumpURL() string {
	return fmt.Sprintf("https://discord.com/channels/%d/%d/%d", r.GuildID, r.ChannelID, r.MessageID)
}

// inputError is a mistake in what the user typed. Its text is shown to the
// user as it is.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

func inputErrorf(format string, args ...any) error {
	return &inputError{msg: fmt.Sprintf(format, args...)}
}

// messageLinkHosts are the hosts Discord's message links use.
var messageLinkHosts = map[string]bool{
	"discord.com":           true,
	"www.discord.com":       true,
	"canary.discord.com":    true,
	"ptb.discord.com":       true,
	"discordapp.com":        true,
	"www.discordapp.com":    true,
	"canary.discordapp.com": true,
	"ptb.discordapp.com":    true,
}

// parseMessageRefs reads the messages option of /pin: 1 to
// MaxMessagesPerPin message IDs or message links, separated by spaces,
// commas or newlines. A bare ID names a message in the invoking channel; a
// link (https://discord.com/channels/GUILD/CHANNEL/MESSAGE, also on the
// canary., ptb. and discordapp.com hosts, optionally in <angle brackets>)
// must point into guildID. A message named twice, by ID or by link, is an
// error that names it. Errors are *inputError, written for the user.
func parseMessageRefs(input string, guildID, channelID snowflake.ID) ([]messageRef, error) {
	fields := strings.FieldsFunc(input, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if len(fields) == 0 {
		return nil, inputErrorf("Give 1 to %d message IDs or message links, separated by spaces or commas.", MaxMessagesPerPin)
	}
	if len(fields) > MaxMessagesPerPin {
		return nil, inputErrorf("You gave %d messages; /pin takes at most %d at a time.", len(fields), MaxMessagesPerPin)
	}
	refs := make([]messageRef, 0, len(fields))
	seen := make(map[snowflake.ID]string, len(fields))
	for _, f := range fields {
		ref, err := parseMessageRef(f, guildID, channelID)
		if err != nil {
			return nil, err
		}
		if first, dup := seen[ref.MessageID]; dup {
			if first == ref.Raw {
				return nil, inputErrorf("Message %d is listed twice (`%s`). Name each message once.", ref.MessageID, quoteInput(ref.Raw))
			}
			return nil, inputErrorf("Message %d is listed twice (`%s` and `%s`). Name each message once.",
				ref.MessageID, quoteInput(first), quoteInput(ref.Raw))
		}
		seen[ref.MessageID] = ref.Raw
		refs = append(refs, ref)
	}
	return refs, nil
}

// parseMessageRef reads one message ID or link.
func parseMessageRef(f string, guildID, channelID snowflake.ID) (messageRef, error) {
	raw := f
	if id, ok := parseID(f); ok {
		return messageRef{GuildID: guildID, ChannelID: channelID, MessageID: id, Raw: raw}, nil
	}
	if why := idProblem(f); why != "" {
		return messageRef{}, inputErrorf("`%s` is not a Discord message ID: %s. Copy one with right click → Copy Message ID.", quoteInput(raw), why)
	}
	s := strings.TrimSuffix(strings.TrimPrefix(f, "<"), ">")
	if !strings.Contains(s, "/") {
		return messageRef{}, inputErrorf("`%s` is not a message ID or message link. Message IDs are numbers; copy one with right click → Copy Message ID.", quoteInput(raw))
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || !messageLinkHosts[strings.ToLower(u.Host)] || u.User != nil {
		return messageRef{}, inputErrorf("`%s` is not a Discord message link. Links look like https://discord.com/channels/SERVER/CHANNEL/MESSAGE.", quoteInput(raw))
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 4 || parts[0] != "channels" {
		return messageRef{}, inputErrorf("`%s` is not a link to a message. Links look like https://discord.com/channels/SERVER/CHANNEL/MESSAGE.", quoteInput(raw))
	}
	if parts[1] == "@me" {
		return messageRef{}, inputErrorf("`%s` points to a direct message; /pin works with messages in this server only.", quoteInput(raw))
	}
	g, okG := parseID(parts[1])
	c, okC := parseID(parts[2])
	m, okM := parseID(parts[3])
	if !okG || !okC || !okM {
		return messageRef{}, inputErrorf("`%s` is not a valid message link: the server, channel and message parts must be IDs.", quoteInput(raw))
	}
	if g != guildID {
		return messageRef{}, inputErrorf("`%s` points into another server; /pin works with messages in this server only.", quoteInput(raw))
	}
	return messageRef{GuildID: g, ChannelID: c, MessageID: m, Raw: raw}, nil
}

// parseID reads a snowflake written as a positive decimal number.
func parseID(s string) (snowflake.ID, bool) {
	if s == "" || len(s) > maxIDDigits {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return 0, false
	}
	return snowflake.ID(n), true
}

// maxIDDigits is the most digits of a Discord ID: a snowflake is an
// unsigned 64-bit number.
const maxIDDigits = 20

// idProblem says what is wrong with s, a number that parseID refused, as
// a Discord ID; it returns "" when s is not a number at all.
func idProblem(s string) string {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return ""
	}
	switch n, err := strconv.ParseUint(s, 10, 64); {
	case len(s) > maxIDDigits:
		return fmt.Sprintf("it has %d digits, and Discord IDs have at most %d", len(s), maxIDDigits)
	case err != nil:
		return "it is larger than any Discord ID"
	case n == 0:
		return "Discord IDs start at 1"
	}
	return ""
}

// maxQuoted bounds how much of the user's input an error message repeats.
const maxQuoted = 100

// quoteInput makes user input safe to show inside `code`: no backticks,
// at most maxQuoted runes.
func quoteInput(s string) string {
	s = strings.ReplaceAll(s, "`", "'")
	if r := []rune(s); len(r) > maxQuoted {
		s = string(r[:maxQuoted]) + "…"
	}
	return s
}
