package dashboard

import (
	"embed"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

//go:embed templates/*.html
var templateFiles embed.FS

// templates are the pages: "admin" (the dashboard), "login" (the
// sign-in page that loads it) and "message" (errors). html/template
// escapes every value: account IDs and label values come from outside.
var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"count":    formatCount,
	"percent":  formatPercent,
	"seconds":  formatSeconds,
	"clock":    formatClock,
	"until":    formatUntil,
	"window":   formatWindow,
	"age":      formatAge,
	"rate":     formatRate,
	"title":    title,
	"plural":   plural,
	"users":    discordUsers,
	"nextFree": func(a Account, at time.Time) nextFree { return nextFree{a, at, a.Held} },
	"width":    func(share float64) string { return strconv.FormatFloat(math.Round(share*1000)/10, 'f', -1, 64) },
	"share": func(v, of float64) float64 {
		if of <= 0 {
			return 0
		}
		return v / of
	},
}).ParseFS(templateFiles, "templates/*.html"))

// The timeline chart's geometry, in SVG user units.
const (
	chartW, chartH         = 960, 210
	chartLeft, chartRight  = 44, 8
	chartTop, chartBottom  = 12, 26
	chartPlotW, chartPlotH = chartW - chartLeft - chartRight, chartH - chartTop - chartBottom
	chartLabels            = 5 // at most, along the time axis
	chartGap               = 2 // between bars, when they are wide enough
	chartMinBarForGap      = 6
	chartGridlines         = 2 // horizontal lines above the axis, at halves of the scale
	chartLabelOffset       = 18
)

// nextFree is what the "next free slot" cells show.
type nextFree struct {
	Account Account
	At      time.Time
	Held    bool
}

// view is Data with the geometry of its chart.
type view struct {
	*Data
	Chart chart
}

type chart struct {
	W, H, Left, Top, PlotW, PlotH, Bottom int
	Bars                                  []bar
	XLabels                               []axisLabel
	YLines                                []axisLabel
}

type bar struct {
	X, Y, W, H float64
	Title      string
}

type axisLabel struct {
	X, Y float64
	Text string
}

func newView(d *Data) view {
	return view{Data: d, Chart: newChart(d.Timeline, d.Window)}
}

// newChart lays out the timeline as bars, labels the time axis at round
// instants (UTC) and draws lines at fractions of the tallest bar.
func newChart(t Timeline, window time.Duration) chart {
	c := chart{W: chartW, H: chartH, Left: chartLeft, Top: chartTop, PlotW: chartPlotW, PlotH: chartPlotH, Bottom: chartTop + chartPlotH}
	n := len(t.Counts)
	if n == 0 || t.Bucket <= 0 {
		return c
	}
	bw := float64(chartPlotW) / float64(n)
	gap := 0.0
	if bw >= chartMinBarForGap {
		gap = chartGap
	}
	top := niceCeil(t.Max)
	for i, v := range t.Counts {
		from := t.Start.Add(time.Duration(i) * t.Bucket)
		h := float64(v) / float64(top) * chartPlotH
		c.Bars = append(c.Bars, bar{
			X: chartLeft + float64(i)*bw + gap/2, Y: float64(chartTop+chartPlotH) - h, W: bw - gap, H: h,
			Title: fmt.Sprintf("%s–%s UTC: %s", from.UTC().Format("15:04"), from.Add(t.Bucket).UTC().Format("15:04"), plural(v, "pin", "pins")),
		})
	}
	step := niceBuckets[len(niceBuckets)-1]
	for _, b := range niceBuckets {
		if b >= window/chartLabels && b >= t.Bucket {
			step = b
			break
		}
	}
	end := t.Start.Add(time.Duration(n) * t.Bucket)
	for at := t.Start.Truncate(step); !at.After(end); at = at.Add(step) {
		if at.Before(t.Start) {
			continue
		}
		x := chartLeft + float64(at.Sub(t.Start))/float64(t.Bucket)*bw
		c.XLabels = append(c.XLabels, axisLabel{X: x, Y: float64(chartTop + chartPlotH + chartLabelOffset), Text: at.UTC().Format("15:04")})
	}
	if t.Max > 0 {
		for k := chartGridlines; k >= 1; k-- {
			v := float64(top) * float64(k) / chartGridlines
			y := float64(chartTop+chartPlotH) - v/float64(top)*chartPlotH
			c.YLines = append(c.YLines, axisLabel{X: chartLeft - 6, Y: y, Text: strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)})
		}
	}
	return c
}

// niceCeil returns the smallest of 1, 2, 5, 10, 20, 50... at least n:
// the top of the chart's scale, so that its gridlines fall on round
// counts.
func niceCeil(n int) int {
	for p := 1; ; p *= 10 {
		for _, m := range []int{1, 2, 5} {
			if m*p >= n {
				return m * p
			}
		}
	}
}

// formatCount writes a whole count with thousands separators; metric
// values that are not whole keep one decimal.
func formatCount(v any) string {
	var f float64
	switch x := v.(type) {
	case int:
		f = float64(x)
	case float64:
		f = x
	case *float64:
		f = *x
	default:
		return fmt.Sprint(v)
	}
	if f != math.Trunc(f) {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	s := strconv.FormatInt(int64(math.Abs(f)), 10)
	var b strings.Builder
	if f < 0 {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// formatPercent writes a share as a percentage: one decimal under 10%.
func formatPercent(share float64) string {
	p := share * 100
	if p != 0 && p < 10 {
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(math.Round(p), 'f', 0, 64) + "%"
}

// formatRate writes a rate per minute: one decimal under 10.
func formatRate(perMinute float64) string {
	if perMinute < 10 {
		return strconv.FormatFloat(perMinute, 'f', 1, 64) + "/min"
	}
	return formatCount(math.Round(perMinute)) + "/min"
}

// formatSeconds writes a latency: milliseconds under a second.
func formatSeconds(s float64) string {
	switch {
	case s < 0.001:
		return strconv.FormatFloat(s*1e6, 'f', 0, 64) + " µs"
	case s < 1:
		return strconv.FormatFloat(s*1e3, 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(s, 'f', 2, 64) + " s"
}

// formatClock writes an instant in UTC, with the day when it is not
// that of ref.
func formatClock(t, ref time.Time) string {
	t, ref = t.UTC(), ref.UTC()
	if t.YearDay() == ref.YearDay() && t.Year() == ref.Year() {
		return t.Format("15:04:05") + " UTC"
	}
	return t.Format("Mon 15:04:05") + " UTC"
}

// formatUntil writes how long from ref to t, rounded to the minute above
// a few minutes.
func formatUntil(t, ref time.Time) string {
	d := t.Sub(ref)
	switch {
	case d <= 0:
		return "now"
	case d < time.Minute:
		return "in " + strconv.Itoa(int(math.Ceil(d.Seconds()))) + " s"
	case d < time.Hour:
		return "in " + strconv.Itoa(int(math.Ceil(d.Minutes()))) + " min"
	}
	m := int(math.Ceil(d.Minutes()))
	return fmt.Sprintf("in %dh %02dm", m/60, m%60)
}

// formatWindow writes a window as the settings do: 12h, 90m, 1h30m.
func formatWindow(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// title capitalizes a label value for a heading: "pinterest" is
// "Pinterest".
func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// discordUsers names the Discord users of the ids: "Discord user 801",
// "Discord users 801, 802".
func discordUsers(ids []string) string {
	if len(ids) == 1 {
		return "Discord user " + ids[0]
	}
	return "Discord users " + strings.Join(ids, ", ")
}

// plural writes n with the singular or plural noun.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return formatCount(n) + " " + many
}
