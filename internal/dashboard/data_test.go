package dashboard

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/actors"
)

// TestAssemble: the page's data from a survey and metrics.
func TestAssemble(t *testing.T) {
	at := monday
	s := actors.Survey{
		At: at, Limit: 100, Window: 12 * time.Hour,
		Busiest: []actors.Status{
			{Account: "full", Used: 100, Limit: 100, NextFree: at.Add(time.Hour), At: at},
			{Account: "high", Used: 85, Limit: 100, NextFree: at, At: at},
			{Account: "held", Used: 10, Limit: 100, Queued: 2, NextFree: at.Add(time.Minute), At: at},
			{Account: "blocked", Used: 40, Blocked: 60, Limit: 100, NextFree: at.Add(time.Hour), At: at},
		},
		Timeline: []int{0, 3, 0, 7},
		Examined: 4, Resident: 3, Complete: true, Failed: 2,
	}
	s.Queue = s.Busiest[2:3]
	d := assemble(s, nil, Metrics{}, nil, at.Add(time.Second))
	if !d.At.Equal(at) || d.Limit != 100 || len(d.Busiest) != 4 || len(d.Queue) != 1 {
		t.Fatalf("data %+v", d)
	}
	for i, c := range []struct {
		level string
		free  int
		held  bool
		share float64
	}{
		{"full", 0, false, 1},
		{"high", 15, false, 0.85},
		{"ok", 90, true, 0.1},
		{"full", 0, false, 1},
	} {
		a := d.Busiest[i]
		if a.Level() != c.level || a.Free != c.free || a.Held != c.held || a.Share() != c.share {
			t.Errorf("step %d: %s: level %s free %d held %v share %v", i, a.Account, a.Level(), a.Free, a.Held, a.Share())
		}
	}
	if d.Timeline.Total != 10 || d.Timeline.Max != 7 {
		t.Errorf("timeline %+v", d.Timeline)
	}
	if len(d.Problems) != 1 || !strings.Contains(d.Problems[0], "2 accounts' state") {
		t.Errorf("problems %q", d.Problems)
	}

	d = assemble(actors.Survey{}, errors.New("engine closed"), Metrics{}, []string{"metrics"}, at)
	if !d.At.Equal(at) || len(d.Problems) != 2 || !strings.Contains(d.Problems[1], "engine closed") || d.Busiest != nil {
		t.Errorf("survey failed: %+v", d)
	}
}

// TestBucketFor: 48 bars at most, round widths.
func TestBucketFor(t *testing.T) {
	for w, want := range map[time.Duration]time.Duration{
		12 * time.Hour:   15 * time.Minute,
		90 * time.Minute: 2 * time.Minute,
		time.Hour:        2 * time.Minute,
		time.Second:      time.Second,
		24 * time.Hour:   30 * time.Minute,
		actors.MaxWindow: 24 * time.Hour,
	} {
		if got := bucketFor(w); got != want {
			t.Errorf("bucketFor(%v) = %v want %v", w, got, want)
		}
	}
}

// TestFormat steps through the page's formats.
func TestFormat(t *testing.T) {
	for i, c := range []struct{ got, want string }{
		{formatCount(1234567), "1,234,567"},
		{formatCount(12.5), "12.5"},
		{formatCount(0), "0"},
		{formatPercent(0.04), "4.0%"},
		{formatPercent(0.125), "13%"},
		{formatPercent(0), "0%"},
		{formatSeconds(0.0004), "400 µs"},
		{formatSeconds(0.05), "50 ms"},
		{formatSeconds(2.35), "2.35 s"},
		{formatUntil(monday.Add(90*time.Minute), monday), "in 1h 30m"},
		{formatUntil(monday.Add(40*time.Minute), monday), "in 40 min"},
		{formatUntil(monday.Add(-time.Second), monday), "now"},
		{formatWindow(12 * time.Hour), "12h"},
		{formatWindow(90 * time.Minute), "1h30m"},
		{formatWindow(15 * time.Minute), "15m"},
		{formatClock(monday, monday), "12:00:00 UTC"},
		{formatClock(monday.Add(13*time.Hour), monday), "Tue 01:00:00 UTC"},
	} {
		if c.got != c.want {
			t.Errorf("step %d: %q want %q", i, c.got, c.want)
		}
	}
	if niceCeil(49) != 50 || niceCeil(1) != 1 || niceCeil(0) != 1 || niceCeil(101) != 200 {
		t.Error("niceCeil")
	}
}
