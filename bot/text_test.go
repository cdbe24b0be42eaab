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

// TestTimeText: every reply shows an instant as Discord's exact time
// beside its relative time, rounded up to the second; select menus show
// the same second in plain text.
func TestTimeText(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) // 1772366400
	tests := []struct {
		t          time.Time
		now        time.Time
		text, flat string
	}{
		{at, at, "<t:1772366400:T> (<t:1772366400:R>)", "12:00:00 UTC (now)"},
		{at.Add(time.Nanosecond), at, "<t:1772366401:T> (<t:1772366401:R>)", "12:00:01 UTC (in 1s)"},
		{at.Add(77 * time.Second), at, "<t:1772366477:T> (<t:1772366477:R>)", "12:01:17 UTC (in 1m 17s)"},
		{at.Add(77*time.Second + 400*time.Millisecond), at.Add(600 * time.Millisecond), "<t:1772366478:T> (<t:1772366478:R>)", "12:01:18 UTC (in 1m 18s)"},
		{at.Add(12*time.Hour - 12*time.Second), at, "<t:1772409588:T> (<t:1772409588:R>)", "23:59:48 UTC (in 11h 59m 48s)"},
		{at.Add(500 * time.Millisecond), at.Add(700 * time.Millisecond), "<t:1772366401:T> (<t:1772366401:R>)", "12:00:01 UTC (in 1s)"},
		{at.Add(-3 * time.Minute), at, "<t:1772366220:T> (<t:1772366220:R>)", "11:57:00 UTC (3m ago)"},
		{at, at.Add(300 * time.Millisecond), "<t:1772366400:T> (<t:1772366400:R>)", "12:00:00 UTC (now)"},
		{at.In(time.FixedZone("CET", 3600)), at, "<t:1772366400:T> (<t:1772366400:R>)", "12:00:00 UTC (now)"},
	}
	for i, tt := range tests {
		if got := timeText(tt.t); got != tt.text {
			t.Errorf("step %d: timeText(%v) = %q want %q", i, tt.t, got, tt.text)
		}
		if got := plainTimeText(tt.t, tt.now); got != tt.flat {
			t.Errorf("step %d: plainTimeText(%v, %v) = %q want %q", i, tt.t, tt.now, got, tt.flat)
		}
	}
}

func TestCountText(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{{0, "0 queued pins"}, {1, "1 queued pin"}, {2, "2 queued pins"}, {1000, "1000 queued pins"}}
	for i, tt := range tests {
		if got := countText(tt.n, "queued pin", "queued pins"); got != tt.want {
			t.Errorf("step %d: countText(%d) = %q want %q", i, tt.n, got, tt.want)
		}
	}
}
