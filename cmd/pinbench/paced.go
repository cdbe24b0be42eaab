package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"gonum.org/v1/plot/vg"
)

// Loads of a comparison.
const (
	loadClosed = "closed"
	loadPaced  = "paced"
)

const (
	// pacedDuration is a paced comparison's default length per system:
	// long enough for collections and the engine's minute checkpoint to
	// fall inside the timed part.
	pacedDuration = time.Minute
	// closedDuration is the default length of the closed-loop run that
	// measures the maximum a --rate fraction is taken of.
	closedDuration = 10 * time.Second
	// maxRate and maxFraction bound --rate.
	maxRate     = 1e9
	maxFraction = 10
)

// paceSpec is a parsed --rate: PerS decisions/s, or Fraction of the
// closed-loop maximum of system Of (PerS then 0 until it is measured).
type paceSpec struct {
	PerS     float64
	Fraction float64
	Of       string
}

// parseRate parses compare's --rate: a number of decisions/s ("20000") or
// a fraction of a system's measured maximum ("0.5xredis-always").
func parseRate(s string) (paceSpec, error) {
	num, of, isFraction := strings.Cut(strings.TrimSpace(s), "x")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return paceSpec{}, usagef("compare", "--rate %q: want decisions per second (20000) or a fraction of a system's "+
			"closed-loop maximum (0.5xredis-always)", s)
	}
	if !isFraction {
		if !(v > 0) || v > maxRate {
			return paceSpec{}, usagef("compare", "--rate %q: decisions per second must be above 0 and at most %g", s, float64(maxRate))
		}
		return paceSpec{PerS: v}, nil
	}
	if !slices.Contains(allSystems, of) {
		return paceSpec{}, usagef("compare", "--rate %q: unknown system %q (want one of %s)", s, of, strings.Join(allSystems, ", "))
	}
	if !(v > 0) || v > maxFraction {
		return paceSpec{}, usagef("compare", "--rate %q: the fraction must be above 0 and at most %d", s, maxFraction)
	}
	return paceSpec{Fraction: v, Of: of}, nil
}

// rateOf is the closed-loop run a paced comparison's rate is a fraction
// of.
type rateOf struct {
	System   string     `json:"system"`
	Fraction float64    `json:"fraction"`
	Closed   compareRow `json:"closed_loop"`
}

// latencyTarget is a goal of the paced comparison: pinbot durable's
// latency at a quantile below another system's, in the same run.
type latencyTarget struct {
	What     string `json:"what"`
	PinbotNS int64  `json:"pinbot_ns"`
	OtherNS  int64  `json:"other_ns"`
	Met      bool   `json:"met"`
}

// comparePaced runs the paced comparison: the maximum a fraction is taken
// of first, closed loop, then every system at the same offered rate.
func (o *compareOptions) comparePaced(ctx context.Context, rep compareReport, log zerolog.Logger, stdout, stderr io.Writer) error {
	rep.Load = loadPaced
	spec := o.spec
	if o.pace.Of != "" {
		row, err := o.measure(ctx, o.pace.Of, o.closedSpec, log, stderr)
		if err != nil {
			return fmt.Errorf("%s, closed loop: %w", systemNames[o.pace.Of], err)
		}
		rep.RateOf = &rateOf{System: o.pace.Of, Fraction: o.pace.Fraction, Closed: row}
		spec.Rate = o.pace.Fraction * row.DecisionsPerS
		if !(spec.Rate > 0) {
			return fmt.Errorf("--rate %s: %s made no decision closed loop", o.rate, systemNames[o.pace.Of])
		}
		if !o.quiet {
			fmt.Fprintf(stderr, "pinbench: %s closed loop: %s/s; pacing every system at %g × that = %s/s\n",
				systemNames[o.pace.Of], commas(int64(row.DecisionsPerS)), o.pace.Fraction, commas(int64(spec.Rate)))
		}
	}
	rep.OfferedPerS = spec.Rate
	return o.measureAll(ctx, rep, spec, ", paced", log, stdout, stderr, (*compareReport).addLatencyTargets, plotPaced, printPaced)
}

// addLatencyTargets checks pinbot durable's p99 and p99.9 against Redis
// appendfsync always's, when both ran.
func (rep *compareReport) addLatencyTargets() {
	var pinbot, other *compareRow
	for i := range rep.Systems {
		switch rep.Systems[i].ID {
		case sysDurable:
			pinbot = &rep.Systems[i]
		case sysRedisAlways:
			other = &rep.Systems[i]
		}
	}
	if pinbot == nil || other == nil {
		return
	}
	for _, q := range []struct {
		name      string
		mine, its int64
	}{
		{"p99", pinbot.Latency.P99, other.Latency.P99},
		{"p99.9", pinbot.Latency.P999, other.Latency.P999},
	} {
		rep.LatencyTargets = append(rep.LatencyTargets, latencyTarget{
			What:     fmt.Sprintf("%s %s below %s's", pinbot.Name, q.name, other.Name),
			PinbotNS: q.mine,
			OtherNS:  q.its,
			Met:      q.mine < q.its,
		})
	}
}

// printPaced prints a paced comparison as a table.
func printPaced(w io.Writer, rep compareReport) {
	fmt.Fprintf(w, "pinbench compare, paced: %s decisions/s offered to every system, %d callers, same workload\n",
		commas(int64(rep.OfferedPerS)), rep.Callers)
	if r := rep.RateOf; r != nil {
		fmt.Fprintf(w, "rate:     %g × %s's closed-loop maximum in this run, %s/s over %s\n",
			r.Fraction, r.Closed.Name, commas(int64(r.Closed.DecisionsPerS)), fmtDur(time.Duration(r.Closed.ElapsedS*float64(time.Second))))
	}
	fmt.Fprintf(w, "workload: %s\n", rep.Workload)
	fmt.Fprintf(w, "machine:  %s\n", rep.Machine)
	fmt.Fprintf(w, "latency from each decision's scheduled instant; late: decisions no caller was free to start at their instant\n\n")
	width := len("system")
	for _, r := range rep.Systems {
		width = max(width, len(r.Name))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tdecisions/s\tgranted\tp50\tp99\tp99.9\tmax\tlate\t\n", width, "system")
	for _, r := range rep.Systems {
		granted, late := "-", "-"
		if r.Decisions > 0 {
			granted = fmt.Sprintf("%.0f%%", 100*float64(r.Granted)/float64(r.Decisions))
			late = fmt.Sprintf("%s (%.1f%%)", commas(r.Late), 100*float64(r.Late)/float64(r.Decisions))
		}
		fmt.Fprintf(tw, "%-*s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", width, r.Name, commas(int64(r.DecisionsPerS)), granted,
			fmtDur(time.Duration(r.Latency.P50)), fmtDur(time.Duration(r.Latency.P99)),
			fmtDur(time.Duration(r.Latency.P999)), fmtDur(time.Duration(r.Latency.Max)), late)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, r := range rep.Systems {
		fmt.Fprintf(w, "  %-32s %s\n", r.Name+":", r.Notes)
	}
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(w, "  not measured: %s\n", strings.Join(rep.Skipped, ", "))
	}
	for _, r := range rep.Systems {
		if mostlyRefused(r.Granted, r.Denied) {
			fmt.Fprintf(w, "  note: %s refused most decisions (accounts at their limit); "+
				"use more accounts or a shorter run to measure grants\n", r.Name)
		}
	}
	if len(rep.LatencyTargets) > 0 {
		fmt.Fprintln(w, "\ntargets:")
		for _, t := range rep.LatencyTargets {
			verdict, cmp := "met", "<"
			if !t.Met {
				verdict, cmp = "MISSED", "≥"
			}
			fmt.Fprintf(w, "  %-62s %8s %s %-8s %s\n", t.What, fmtDur(time.Duration(t.PinbotNS)), cmp, fmtDur(time.Duration(t.OtherNS)), verdict)
		}
	}
	for _, f := range rep.PlotFiles {
		fmt.Fprintf(w, "chart: %s\n", f)
	}
}

// plotPaced writes the paced comparison's chart: every system's latency
// spectrum, named apart from the closed-loop charts so both can share a
// directory.
func plotPaced(dir string, rep compareReport) ([]string, error) {
	var ss []series
	for _, r := range rep.Systems {
		ss = append(ss, series{name: shortNames[r.ID], h: r.res.Latency})
	}
	title := fmt.Sprintf("latency from the scheduled instant, paced at %s/s, %d callers", commas(int64(rep.OfferedPerS)), rep.Callers)
	p, err := latencyChart(title, ss)
	if err != nil {
		return nil, err
	}
	return saveChart(p, dir, "compare_paced_latency", 7*vg.Inch, 4.5*vg.Inch)
}
