package dashboard

import (
	"strconv"
	"time"
)

// SampleEvery is the spacing of the snapshots of the counters that the
// recent windows count from: a window reaches back at most this much
// past its start.
const SampleEvery = time.Minute

// Windows are the lengths of the recent windows, shortest first.
var Windows = []time.Duration{5 * time.Minute, time.Hour}

// Window is what the metrics counted over a recent window: the
// difference between the latest reading and the snapshot at or just
// before the window's start (see history).
type Window struct {
	// Length is the window asked for; From the instant its figures count
	// from and Span how long ago that is: at least Length, and up to
	// SampleEvery more, unless the process is younger (FromStart: From is
	// its start and Span its age).
	Length    time.Duration `json:"length_ns"`
	From      time.Time     `json:"from"`
	Span      time.Duration `json:"span_ns"`
	FromStart bool          `json:"from_start"`
	// UpstreamsPresent, Upstreams and Failures are as in Metrics, counted
	// over the window.
	UpstreamsPresent bool       `json:"upstreams_present"`
	Upstreams        []Upstream `json:"upstreams"`
	Failures         Counts     `json:"failures"`
}

// newWindow returns the window of length ending at now: cur since base.
func newWindow(length time.Duration, now time.Time, cur reading, base snapshot, fromStart bool) Window {
	w := Window{Length: length, From: base.at, Span: max(now.Sub(base.at), 0), FromStart: fromStart}
	d := cur.since(base.r)
	w.Upstreams, w.UpstreamsPresent = upstreams(d)
	w.Failures = countsOf(d.failures)
	return w
}

// Label names the window on the page: "last 5 min", "last hour"; "since
// start, 3 min" when the process is younger; the span itself when the
// snapshot at the window's start is missing (no sample was taken then),
// such as "last 47 min".
func (w Window) Label() string {
	switch {
	case w.FromStart:
		return "since start, " + formatAge(w.Span)
	case w.Span > w.Length+2*SampleEvery:
		return "last " + formatAge(w.Span)
	case w.Length == time.Hour:
		return "last hour"
	}
	return "last " + formatAge(w.Length)
}

// During is Label after a count: "in the last hour", "since start, 3
// min".
func (w Window) During() string {
	if w.FromStart {
		return w.Label()
	}
	return "in the " + w.Label()
}

// Upstream returns the window's figures of the upstream name, nil when
// it has none.
func (w Window) Upstream(name string) *Upstream {
	for i := range w.Upstreams {
		if w.Upstreams[i].Name == name {
			return &w.Upstreams[i]
		}
	}
	return nil
}

// PerMinute is a count over the window as a rate per minute, 0 over an
// empty span.
func (w Window) PerMinute(n float64) float64 {
	if w.Span <= 0 {
		return 0
	}
	return n / w.Span.Minutes()
}

// Window returns the window of length, nil when there is none (no
// gatherer).
func (m Metrics) Window(length time.Duration) *Window {
	for i := range m.Windows {
		if m.Windows[i].Length == length {
			return &m.Windows[i]
		}
	}
	return nil
}

// LastHour returns the window of the last hour, nil when there is none.
func (m Metrics) LastHour() *Window { return m.Window(time.Hour) }

// formatAge writes a duration to the second under a minute, to the
// minute under an hour, else in hours and minutes: "40 s", "3 min",
// "2h 05m". Parts are truncated: "3 min" is 3 to 4 minutes.
func formatAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + " s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min"
	}
	m := int(d / time.Minute)
	return strconv.Itoa(m/60) + "h " + twoDigits(m%60) + "m"
}

func twoDigits(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}
