package main

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/pinbot/pinbot/cmd/pinbench/internal/hist"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Charts are written in both formats: PNG to look at, SVG to publish.
var chartFormats = []string{"png", "svg"}

// saveChart writes p as DIR/name.png and DIR/name.svg and returns the
// paths.
func saveChart(p *plot.Plot, dir, name string, w, h vg.Length) ([]string, error) {
	var files []string
	for _, ext := range chartFormats {
		path := filepath.Join(dir, name+"."+ext)
		if err := p.Save(w, h, path); err != nil {
			return files, fmt.Errorf("--plot: writing %s: %w", path, err)
		}
		files = append(files, path)
	}
	return files, nil
}

// series is one named latency histogram on a chart.
type series struct {
	name string
	h    *hist.Histogram
}

// latencyChart draws each series' percentile spectrum: the latency (log
// scale) at 0, 90, 99, 99.9 % … of decisions, up to the slowest one.
func latencyChart(title string, ss []series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "percentile of decisions"
	p.Y.Label.Text = "latency (ms, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	maxX := 1.0
	for i, s := range ss {
		if s.h == nil || s.h.Count() == 0 {
			continue
		}
		var xys plotter.XYs
		for _, pt := range s.h.Spectrum(8) {
			x := math.Log10(float64(s.h.Count())) // the slowest decision
			if pt.Quantile < 1 {
				x = -math.Log10(1 - pt.Quantile)
			}
			ms := max(float64(pt.Value)/1e6, 1e-6)
			xys = append(xys, plotter.XY{X: x, Y: ms})
			maxX = max(maxX, x)
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		line.Color = seriesColor(i)
		line.Dashes = plotutil.Dashes(i)
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(s.name, line)
	}
	var ticks plot.ConstantTicks
	for k := 0; float64(k) <= math.Ceil(maxX); k++ {
		ticks = append(ticks, plot.Tick{Value: float64(k), Label: percentileLabel(k)})
	}
	p.X.Tick.Marker = ticks
	p.X.Min = 0
	// The curves rise to the right: the bottom right corner is free.
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.YOffs = vg.Points(8)
	return p, nil
}

// percentileLabel names the percentile 1-10^-k: 0%, 90%, 99%, 99.9% …
func percentileLabel(k int) string {
	if k == 0 {
		return "0%"
	}
	return strconv.FormatFloat(100*(1-math.Pow(10, -float64(k))), 'f', max(k-2, 0), 64) + "%"
}

// throughputChart draws decisions/s against the number of callers.
func throughputChart(title string, callers []int, perS []float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "concurrent callers (log scale)"
	p.Y.Label.Text = "decisions/s"
	p.X.Scale = plot.LogScale{}
	var ticks plot.ConstantTicks
	xys := make(plotter.XYs, len(callers))
	for i, c := range callers {
		xys[i] = plotter.XY{X: float64(c), Y: perS[i]}
		ticks = append(ticks, plot.Tick{Value: float64(c), Label: strconv.Itoa(c)})
	}
	p.X.Tick.Marker = ticks
	p.Y.Min = 0
	p.Y.Tick.Marker = countTicks
	p.Add(plotter.NewGrid())
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return nil, err
	}
	line.Color, points.Color = seriesColor(0), seriesColor(0)
	p.Add(line, points)
	return p, nil
}

// barChart draws one bar per name.
func barChart(title, ylabel string, names []string, values []float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	bars, err := plotter.NewBarChart(plotter.Values(values), vg.Points(40))
	if err != nil {
		return nil, err
	}
	bars.Color = seriesColor(0)
	// The value over each bar: the slowest system stays readable beside
	// the fastest.
	labels := plotter.XYLabels{}
	for i, v := range values {
		labels.XYs = append(labels.XYs, plotter.XY{X: float64(i), Y: v})
		labels.Labels = append(labels.Labels, commas(int64(v)))
	}
	text, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	for i := range text.TextStyle {
		text.TextStyle[i].XAlign = draw.XCenter
		text.TextStyle[i].YAlign = draw.YBottom
	}
	p.Add(plotter.NewGrid(), bars, text)
	p.NominalX(names...)
	p.Y.Min = 0
	p.Y.Max = 1.1 * slices.Max(values) // room for the labels
	p.Y.Tick.Marker = countTicks
	return p, nil
}

// countTicks are the default ticks, labelled as whole numbers with
// thousands separators.
var countTicks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = commas(int64(math.Round(ticks[i].Value)))
		}
	}
	return ticks
})

// palette holds colors told apart easily, also in print.
var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, // brown
	color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}, // cyan
	color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, // grey
}

func seriesColor(i int) color.Color { return palette[i%len(palette)] }

// plotRun writes the charts of pinbench run: the latency spectrum of every
// run and, when several caller counts ran closed loop, throughput against
// callers.
func plotRun(dir string, rep runReport) ([]string, error) {
	mode := "durable"
	if !rep.Durable {
		mode = "relaxed"
	}
	var files []string
	var callers []int
	var perS []float64
	var ss []series
	for _, r := range rep.Runs {
		ss = append(ss, series{name: r.label(), h: r.hist})
		if r.Load == "closed" {
			callers = append(callers, r.Callers)
			perS = append(perS, r.DecisionsPerS)
		}
	}
	if len(callers) >= 2 {
		p, err := throughputChart(fmt.Sprintf("pinbot %s: throughput against concurrency", mode), callers, perS)
		if err != nil {
			return nil, err
		}
		f, err := saveChart(p, dir, "throughput", 6*vg.Inch, 4*vg.Inch)
		files = append(files, f...)
		if err != nil {
			return files, err
		}
	}
	p, err := latencyChart(fmt.Sprintf("pinbot %s: latency distribution", mode), ss)
	if err != nil {
		return files, err
	}
	f, err := saveChart(p, dir, "latency", 6*vg.Inch, 4*vg.Inch)
	return append(files, f...), err
}
