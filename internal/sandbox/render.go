package sandbox

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot"
)

// component is a select menu or a button of a message, as the console
// lists it.
type component struct {
	Type        discord.ComponentType
	CustomID    string
	Placeholder string
	Label       string
	URL         string
	Options     []menuOption
}

// menuOption is one choice of a select menu.
type menuOption struct {
	Label       string `json:"label"`
	Value       string `json:"value"`
	Description string `json:"description"`
	Default     bool   `json:"default"`
}

// wireComponent is a component as the bot sent it.
type wireComponent struct {
	Type        discord.ComponentType `json:"type"`
	CustomID    string                `json:"custom_id"`
	Placeholder string                `json:"placeholder"`
	Label       string                `json:"label"`
	URL         string                `json:"url"`
	Options     []menuOption          `json:"options"`
	Components  []wireComponent       `json:"components"`
}

// parseComponents returns the interactive components of a message's raw
// components, action rows flattened, in order.
func parseComponents(raw json.RawMessage) ([]component, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var rows []wireComponent
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("sandbox: message components: %w", err)
	}
	var out []component
	var walk func([]wireComponent)
	walk = func(cs []wireComponent) {
		for _, c := range cs {
			if len(c.Components) > 0 {
				walk(c.Components)
				continue
			}
			if c.Type == discord.ComponentTypeActionRow {
				continue
			}
			out = append(out, component{
				Type: c.Type, CustomID: c.CustomID, Placeholder: c.Placeholder,
				Label: c.Label, URL: c.URL, Options: c.Options,
			})
		}
	}
	walk(rows)
	return out, nil
}

// renderComponents lists components as text, with the console command
// that drives a menu or presses a button when there is one.
func renderComponents(cs []component) string {
	cancelAlls := 0
	for _, c := range cs {
		if strings.HasPrefix(c.CustomID, cancelAllIDPrefix) {
			cancelAlls++
		}
	}
	var sb strings.Builder
	for _, c := range cs {
		switch {
		case c.URL != "":
			fmt.Fprintf(&sb, "[button %q] %s\n", c.Label, c.URL)
		case len(c.Options) > 0:
			title := c.Placeholder
			if title == "" {
				title = "menu"
			}
			fmt.Fprintf(&sb, "[menu %q]%s\n", title, menuHint(c.CustomID))
			for _, o := range c.Options {
				mark := "  "
				if o.Default {
					mark = "* "
				}
				// Discord shows labels and descriptions as plain text.
				line := "  " + mark + o.Label
				if o.Description != "" {
					line += " — " + o.Description
				}
				sb.WriteString(line + "\n")
			}
		case c.Label != "":
			fmt.Fprintf(&sb, "[button %q]%s\n", c.Label, buttonHint(c.CustomID, cancelAlls > 1))
		}
	}
	return strings.TrimRight(sb.String(), "\n")
}

// Custom IDs of the bot's /settings and /queue components, read from the
// bot's command table (bot.ConsoleCommands): the menus and buttons are how
// a user switches accounts, picks boards, chooses what /pin does at the
// limit and cancels queued pins.
var (
	switchMenuID      = consoleID("switch")
	boardMenuIDPrefix = consoleID("board") + "/"
	whenFullMenuID    = consoleID("whenfull")
	// cancelMenuID is /queue's menu of the messages with waiting pins.
	cancelMenuID = consoleID("cancel")
	// cancelAllIDPrefix starts the ID of a "Cancel all" button of
	// /queue, which ends with the account.
	cancelAllIDPrefix = consoleID("cancel all") + "/"
)

// consoleID is the custom ID of the component the console presses with
// verb; a table without it is a programming error.
func consoleID(verb string) string {
	for _, c := range bot.ConsoleCommands() {
		if c.Verb == verb && c.CustomID != "" {
			return c.CustomID
		}
	}
	panic("sandbox: the bot's command table has no component for the console's " + strconv.Quote(verb))
}

// menuHint names the console command that picks from the menu.
func menuHint(customID string) string {
	switch {
	case customID == switchMenuID:
		return " — pick with /switch ACCOUNT"
	case strings.HasPrefix(customID, boardMenuIDPrefix):
		return " — pick with /board BOARD"
	case customID == whenFullMenuID:
		return " — pick with /whenfull queue or /whenfull skip"
	case customID == cancelMenuID:
		return " — pick with /cancel N (N the message's number)"
	}
	return ""
}

// buttonHint names the console command that presses the button; named
// says that it must name the account (several accounts have one).
func buttonHint(customID string, named bool) string {
	id, ok := strings.CutPrefix(customID, cancelAllIDPrefix)
	switch {
	case !ok:
		return ""
	case !named:
		return " — press with /cancel all"
	}
	if a, ok := accountByID(id); ok {
		id = a.Username
	}
	return " — press with /cancel all " + id
}

// renderEmbeds flattens embeds into text: title, description, fields,
// image and footer, each embed introduced by "[embed]".
func renderEmbeds(es []discord.Embed, now time.Time) string {
	var sb strings.Builder
	for _, e := range es {
		sb.WriteString("[embed]")
		if e.Title != "" {
			sb.WriteString(" " + renderMarkdown(e.Title, now))
		}
		sb.WriteString("\n")
		if e.Author != nil && e.Author.Name != "" {
			sb.WriteString(renderMarkdown(e.Author.Name, now) + "\n")
		}
		if e.Description != "" {
			sb.WriteString(renderMarkdown(e.Description, now) + "\n")
		}
		for _, f := range e.Fields {
			fmt.Fprintf(&sb, "%s: %s\n", renderMarkdown(f.Name, now), renderMarkdown(f.Value, now))
		}
		switch {
		case e.Image != nil && e.Image.URL != "":
			sb.WriteString("image: " + e.Image.URL + "\n")
		case e.Thumbnail != nil && e.Thumbnail.URL != "":
			sb.WriteString("image: " + e.Thumbnail.URL + "\n")
		}
		if e.URL != "" {
			sb.WriteString(e.URL + "\n")
		}
		if e.Footer != nil && e.Footer.Text != "" {
			sb.WriteString(renderMarkdown(e.Footer.Text, now) + "\n")
		}
	}
	return strings.TrimRight(sb.String(), "\n")
}

// renderMarkdown turns Discord message text into what a reader sees:
// backslash escapes resolved, ** and __ (bold, underline) and backticks
// dropped, <url> shown as url, mentions of the demo users and channels
// shown by name, and <t:UNIX[:STYLE]> timestamps written out as a reader
// in now's zone reads them, relative ones (style R) as seen at now.
// Single * and _ are kept: the bot escapes every name it shows, and URLs
// contain underscores.
func renderMarkdown(s string, now time.Time) string {
	var sb strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]):
			sb.WriteByte(s[i+1])
			i += 2
		case strings.HasPrefix(s[i:], "**"), strings.HasPrefix(s[i:], "__"):
			i += 2
		case c == '`':
			i++
		case c == '<':
			text, n := renderAngle(s[i:], now)
			sb.WriteString(text)
			i += n
		default:
			sb.WriteByte(c)
			i++
		}
	}
	return sb.String()
}

// renderAngle renders the <…> construct at the start of s, a timestamp, a
// mention or a link, and returns its text and length; anything else is a
// plain "<".
func renderAngle(s string, now time.Time) (string, int) {
	end := strings.IndexByte(s, '>')
	if end < 0 {
		return "<", 1
	}
	inner := s[1:end]
	switch {
	case strings.HasPrefix(inner, "t:"):
		if text, ok := renderTimestamp(inner[2:], now); ok {
			return text, end + 1
		}
	case strings.HasPrefix(inner, "@"), strings.HasPrefix(inner, "#"):
		if text, ok := renderMention(inner); ok {
			return text, end + 1
		}
	case strings.HasPrefix(inner, "http://"), strings.HasPrefix(inner, "https://"):
		if !strings.ContainsAny(inner, " \n<") {
			return inner, end + 1
		}
	}
	return "<", 1
}

// renderMention writes out the inside of a user mention (@ID or @!ID), a
// role mention (@&ID) or a channel mention (#ID) by name, as Discord
// shows it; one the demo world does not hold reads as Discord shows one
// it cannot resolve.
func renderMention(inner string) (string, bool) {
	kind, id := inner[:1], inner[1:]
	switch {
	case kind == "@" && strings.HasPrefix(id, "&"):
		kind, id = "&", id[1:]
	case kind == "@":
		id = strings.TrimPrefix(id, "!")
	}
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return "", false
	}
	switch kind {
	case "#":
		if c, ok := channelByID(snowflake.ID(n)); ok {
			return "#" + c.Name, true
		}
		return "#unknown", true
	case "&":
		if snowflake.ID(n) == ModsRoleID {
			return "@mods", true
		}
		return "@deleted-role", true
	}
	for _, u := range users {
		if u.ID == snowflake.ID(n) {
			return "@" + u.Name, true
		}
	}
	return "@unknown-user", true
}

// timestampLayouts are how a timestamp of each style Discord defines
// reads (its English forms, on a 24-hour clock), but R, which is
// relative.
var timestampLayouts = map[string]string{
	"t": "15:04",                        // short time
	"T": "15:04:05",                     // long time
	"d": "2006-01-02",                   // short date
	"D": "2 January 2006",               // long date
	"f": "2 January 2006 15:04",         // short date and time, the default
	"F": "Monday, 2 January 2006 15:04", // long date and time
}

// renderTimestamp writes out the UNIX[:STYLE] of a Discord timestamp as
// a reader in now's zone reads it: without a style as style f, style R
// relative to now. A style Discord does not define makes it no
// timestamp: Discord shows such text as it is.
func renderTimestamp(spec string, now time.Time) (string, bool) {
	secs, style, styled := strings.Cut(spec, ":")
	n, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return "", false
	}
	t := time.Unix(n, 0).In(now.Location())
	if !styled {
		style = "f"
	}
	if style == "R" {
		return relative(t, now), true
	}
	layout, ok := timestampLayouts[style]
	if !ok {
		return "", false
	}
	return t.Format(layout), true
}

// relative says how far t is from now, as Discord's relative timestamps
// do, to the minute beyond a minute (bot.FormatDuration): "in 11h 59m",
// "3m ago", "now".
func relative(t, now time.Time) string {
	d := t.Sub(now)
	past := d < 0
	if past {
		d = -d
	} else if r := d % time.Second; r != 0 && d > time.Second {
		// Up to the second, as the bot writes the same wait in the
		// places that show no timestamps (the cancel menu).
		d += time.Second - r
	}
	var amount string
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		amount = bot.FormatDuration(d)
	default:
		amount = bot.FormatDuration(d.Truncate(time.Minute))
	}
	if past {
		return amount + " ago"
	}
	return "in " + amount
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}
