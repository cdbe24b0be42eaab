package bot

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestSplitMessage(t *testing.T) {
	long := strings.Repeat("x", 4500)
	lines := strings.Repeat(strings.Repeat("y", 150)+"\n", 30)
	tests := []struct {
		name  string
		in    string
		parts int
	}{
		{"short", "hello", 1},
		{"empty", "", 1},
		{"exactly 2000", strings.Repeat("a", 2000), 1},
		{"one long line", long, 3},
		{"many lines", lines, 3},
		{"multibyte", strings.Repeat("é", 2001), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := splitMessage(tt.in, 2000)
			if len(parts) != tt.parts {
				t.Fatalf("%d parts, want %d", len(parts), tt.parts)
			}
			joined := 0
			for i, p := range parts {
				if n := utf8.RuneCountInString(p); n > 2000 {
					t.Fatalf("part %d has %d runes", i, n)
				}
				if strings.Contains(tt.in, "\n") && strings.HasPrefix(p, "\n") {
					t.Fatalf("part %d starts with a newline", i)
				}
				joined += utf8.RuneCountInString(strings.ReplaceAll(p, "\n", ""))
			}
			if want := utf8.RuneCountInString(strings.ReplaceAll(tt.in, "\n", "")); joined != want {
				t.Fatalf("parts hold %d runes of text, want %d", joined, want)
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{999 * time.Millisecond, "0s"},
		{time.Second, "1s"},
		{45 * time.Second, "45s"},
		{3*time.Minute + 5*time.Second, "3m 5s"},
		{5 * time.Minute, "5m"},
		{time.Hour + 7*time.Second, "1h 7s"},
		{90 * time.Minute, "1h 30m"},
		{12*time.Hour - 12*time.Second, "11h 59m 48s"},
		{(12*time.Hour - 12*time.Second).Truncate(time.Minute), "11h 59m"},
		{12 * time.Hour, "12h"},
		{72 * time.Hour, "72h"},
		{-42 * time.Second, "-42s"},
	}
	for i, tt := range tests {
		if got := FormatDuration(tt.d); got != tt.want {
			t.Errorf("step %d: FormatDuration(%v) = %q want %q", i, tt.d, got, tt.want)
		}
	}
}
