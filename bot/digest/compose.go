package digest

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/disgoorg/snowflake/v2"
)

// fallbackNote opens every message of a digest sent to a fallback channel,
// after the user's mention: it tells whom the results are for, without
// pinging them (see noMentions).
const fallbackNote = ", Pinbot could not send you a direct message:\n"

// fallbackRoom is the most characters fallbackPrefix takes, for the
// largest user ID.
var fallbackRoom = utf8.RuneCountInString(fallbackPrefix(snowflake.ID(^uint64(0))))

// fallbackPrefix returns what opens a message of user's digest in a
// fallback channel.
func fallbackPrefix(user snowflake.ID) string {
	return "<@" + user.String() + ">" + fallbackNote
}

// cleanLine makes a result line fit on one line of at most maxRunes
// characters: line breaks become spaces, surrounding space goes, and a
// longer line is cut and ends with "…". It returns "" for a blank line.
func cleanLine(line string, maxRunes int) string {
	if strings.ContainsAny(line, "\r\n") {
		line = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(line)
	}
	line = strings.TrimSpace(line)
	if !utf8.ValidString(line) {
		line = strings.ToValidUTF8(line, "\uFFFD")
	}
	if utf8.RuneCountInString(line) <= maxRunes {
		return line
	}
	cut, n := 0, 0
	for i := range line {
		if n == maxRunes-1 {
			cut = i
			break
		}
		n++
	}
	return strings.TrimRightFunc(line[:cut], func(r rune) bool { return r == ' ' }) + "…"
}

// moreLine is the last line of a digest that dropped more lines.
func moreLine(more int) string {
	return "… and " + strconv.Itoa(more) + " more"
}

// chunk is one message of a digest: its text, how many of the digest's
// lines it lists, and whether it ends with the count of those not listed
// (moreLine).
type chunk struct {
	text  string
	lines int
	more  bool
}

// compose returns the messages of a digest: the header, then each line on
// a line of its own, then moreLine when more > 0, split into messages of
// at most limit characters between lines, never inside one. Each line,
// and the header, must fit within limit on its own.
func compose(header string, lines []string, more, limit int) []chunk {
	var (
		out []chunk
		cur chunk
		b   strings.Builder
		n   int // runes in b
	)
	add := func(line string) {
		r := utf8.RuneCountInString(line)
		if n > 0 && n+1+r > limit {
			cur.text = b.String()
			out = append(out, cur)
			cur = chunk{}
			b.Reset()
			n = 0
		}
		if n > 0 {
			b.WriteByte('\n')
			n++
		}
		b.WriteString(line)
		n += r
	}
	add(header)
	for _, l := range lines {
		add(l)
		cur.lines++
	}
	if more > 0 {
		add(moreLine(more))
		cur.more = true
	}
	cur.text = b.String()
	return append(out, cur)
}
