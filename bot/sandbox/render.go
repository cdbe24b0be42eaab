package sandbox

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/disgoorg/disgo/discord"

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
// that drives a menu when there is one.
func renderComponents(cs []component) string {
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
			fmt.Fprintf(&sb, "[button %q]\n", c.Label)
		}
	}
	return strings.TrimRight(sb.String(), "\n")
}

// Custom IDs of the bot's /settings menus, as the bot sends them: the
// menus are how a user switches accounts and picks boards, so their IDs
// are part of what the bot shows Discord.
const (
	switchMenuID      = "/settings/switch"
	boardMenuIDPrefix = "/settings/board/"
)

// menuHint names the console command that picks from the menu.
func menuHint(customID string) string {
	switch {
	case customID == switchMenuID:
		return " — pick with /switch ACCOUNT"
	case strings.HasPrefix(customID, boardMenuIDPrefix):
		return " — pick with /board BOARD"
	}
	return ""
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
// dropped, <url> shown as url, and <t:UNIX[:STYLE]> timestamps written
// out, relative ones (style R) as seen at now. Single * and _ are kept:
// the bot escapes every name it shows, and URLs contain underscores.
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

// renderAngle renders the <…> construct at the start of s, a timestamp or
// a link, and returns its text and length; anything else is a plain "<".
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
	case strings.HasPrefix(inner, "http://"), strings.HasPrefix(inner, "https://"):
		if !strings.ContainsAny(inner, " \n<") {
			return inner, end + 1
		}
	}
	return "<", 1
}

// renderTimestamp writes out the UNIX[:STYLE] of a Discord timestamp.
func renderTimestamp(spec string, now time.Time) (string, bool) {
	secs, style, _ := strings.Cut(spec, ":")
	n, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return "", false
	}
	t := time.Unix(n, 0)
	if style == "R" {
		return relative(t, now), true
	}
	return t.Local().Format("2006-01-02 15:04:05 MST"), true
}

// relative says how far t is from now, as Discord's relative timestamps
// do, to the minute beyond a minute (bot.FormatDuration): "in 11h 59m",
// "3m ago", "now".
func relative(t, now time.Time) string {
	d := t.Sub(now)
	past := d < 0
	if past {
		d = -d
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
