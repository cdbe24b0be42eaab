package digest

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/disgoorg/snowflake/v2"
)

func TestCompose(t *testing.T) {
	steps := []struct {
		lines []string
		more  int
		limit int
		want  []chunk
	}{
		{[]string{"aaaa", "bbbb", "cccc"}, 0, 100, []chunk{{"H\naaaa\nbbbb\ncccc", 3, false}}},                             // 0: one message
		{[]string{"aaaa", "bbbb", "cccc"}, 0, 10, []chunk{{"H\naaaa", 1, false}, {"bbbb\ncccc", 2, false}}},                // 1: split between lines
		{[]string{"aaaa", "bbbb", "cccc"}, 0, 11, []chunk{{"H\naaaa\nbbbb", 2, false}, {"cccc", 1, false}}},                // 2: exactly full
		{[]string{"xxxxxxxxxx"}, 0, 10, []chunk{{"H", 0, false}, {"xxxxxxxxxx", 1, false}}},                                // 3: a line of the limit alone
		{[]string{"a"}, 3, 100, []chunk{{"H\na\n… and 3 more", 1, true}}},                                                  // 4: dropped lines counted
		{[]string{"éééé", "ßßßß"}, 0, 11, []chunk{{"H\néééé\nßßßß", 2, false}}},                                            // 5: characters, not bytes
		{[]string{"éééé", "ßßßß"}, 0, 10, []chunk{{"H\néééé", 1, false}, {"ßßßß", 1, false}}},                              // 6
		{nil, 2, 100, []chunk{{"H\n… and 2 more", 0, true}}},                                                               // 7
		{[]string{"aaaa", "bbbb"}, 12, 10, []chunk{{"H\naaaa", 1, false}, {"bbbb", 1, false}, {"… and 12 more", 0, true}}}, // 8
	}
	for i, st := range steps {
		if got := compose("H", st.lines, st.more, st.limit); !slices.Equal(got, st.want) {
			t.Errorf("step %d: compose(%q, %d, %d) = %+v want %+v", i, st.lines, st.more, st.limit, got, st.want)
		}
	}
}

// texts returns the text of each chunk.
func texts(cs []chunk) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.text
	}
	return out
}

// TestComposeDiscordLimit: a digest of many lines splits into messages
// that each leave room for a fallback's mention within 2000 characters,
// and keep every line whole and in order.
func TestComposeDiscordLimit(t *testing.T) {
	var lines []string
	for i := range 300 {
		lines = append(lines, strings.Repeat(string(rune('a'+i%26)), 1+i%DefaultMaxLineRunes))
	}
	msgs := texts(compose(DefaultHeader, lines, 7, maxContent-fallbackRoom))
	for i, m := range msgs {
		full := fallbackPrefix(snowflake.ID(^uint64(0))) + m
		if n := utf8.RuneCountInString(full); n > maxContent {
			t.Errorf("message %d with a fallback's mention has %d characters", i, n)
		}
	}
	got := strings.Split(strings.Join(msgs, "\n"), "\n")
	want := append(append([]string{DefaultHeader}, lines...), moreLine(7))
	if !slices.Equal(got, want) {
		t.Errorf("the %d messages do not hold the header, the lines in order and the count", len(msgs))
	}
}

func TestCleanLine(t *testing.T) {
	steps := []struct {
		in   string
		max  int
		want string
	}{
		{"pinned", 10, "pinned"},
		{"  two\nlines\r\nhere\r ", 100, "two lines here"},
		{"0123456789", 10, "0123456789"},
		{"0123456789x", 10, "012345678…"},
		{"0123 56789x", 6, "0123…"}, // no space left before the ellipsis
		{"ééééééé", 5, "éééé…"},
		{"   ", 10, ""},
		{"bad \xff byte", 20, "bad \uFFFD byte"},
	}
	for i, st := range steps {
		got := cleanLine(st.in, st.max)
		if got != st.want || utf8.RuneCountInString(got) > st.max {
			t.Errorf("step %d: cleanLine(%q, %d) = %q want %q", i, st.in, st.max, got, st.want)
		}
	}
}
