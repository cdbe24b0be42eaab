package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/pinbot/pinbot/cmd/pinbench/internal/hist"
	"github.com/pinbot/pinbot/cmd/pinbench/internal/workload"
	"github.com/rs/zerolog"
)

// rateHalf is the --rate value that measures the maximum first.
const rateHalf = "half"

// runOptions are the flags of pinbench run.
type runOptions struct {
	commonFlags
	rate    string
	durable bool
	warm    bool
	restart bool
	dataDir string

	callers []int
	spec    workload.Spec
	paced   float64 // --rate as a number, 0 for closed loop or half
}

// parseRunFlags parses and checks the flags of pinbench run.
func parseRunFlags(args []string, stdout io.Writer) (*runOptions, error) {
	o := &runOptions{}
	fs := newFlagSet("run")
	o.bind(fs)
	fs.StringVar(&o.rate, "rate", "", "")
	fs.BoolVar(&o.durable, "durable", true, "")
	fs.BoolVar(&o.warm, "warm", true, "")
	fs.BoolVar(&o.restart, "restart", false, "")
	fs.StringVar(&o.dataDir, "data-dir", "", "")
	if err := parseFlags(fs, "run", args, stdout); err != nil {
		return nil, err
	}
	var err error
	if o.callers, o.spec, err = o.validate("run"); err != nil {
		return nil, err
	}
	if o.rate != "" && o.rate != rateHalf {
		r, err := strconv.ParseFloat(o.rate, 64)
		if err != nil || !(r > 0) || r > 1e9 {
			return nil, usagef("run", "--rate %q: want a positive number of decisions per second, or %q", o.rate, rateHalf)
		}
		o.paced = r
	}
	return o, nil
}

// runPoint is one measured run.
type runPoint struct {
	Callers       int            `json:"callers"`
	Load          string         `json:"load"` // "closed" or "paced"
	OfferedPerS   float64        `json:"offered_per_s,omitempty"`
	Decisions     int64          `json:"decisions"`
	Granted       int64          `json:"granted"`
	Denied        int64          `json:"denied"`
	ElapsedS      float64        `json:"elapsed_s"`
	DecisionsPerS float64        `json:"decisions_per_s"`
	Latency       latency        `json:"latency"`
	Late          int64          `json:"late_starts"` // paced: no caller free at the instant
	WarmS         float64        `json:"warm_s,omitempty"`
	Memory        memoryResult   `json:"memory"`
	Restart       *restartResult `json:"restart,omitempty"`

	hist *hist.Histogram
}

// label names the point in tables and charts.
func (p runPoint) label() string {
	if p.Load == "paced" {
		return fmt.Sprintf("c=%d paced %s/s", p.Callers, commas(int64(p.OfferedPerS)))
	}
	return fmt.Sprintf("c=%d", p.Callers)
}

// memoryResult is the heap the engine's resident accounts hold.
type memoryResult struct {
	Resident         int     `json:"resident_accounts"`
	HeapDelta        int64   `json:"heap_delta_bytes"`
	BytesPerResident float64 `json:"bytes_per_resident_account"`
}

// runReport is pinbench run's output.
type runReport struct {
	Command    string       `json:"command"`
	Machine    machine      `json:"machine"`
	Durable    bool         `json:"durable"`
	Workload   workloadJSON `json:"workload"`
	Runs       []runPoint   `json:"runs"`
	PlotFiles  []string     `json:"plot_files,omitempty"`
	StartedAt  time.Time    `json:"started_at"`
	FinishedAt time.Time    `json:"finished_at"`
}

// runCommand is pinbench run.
func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseRunFlags(args, stdout)
	if err != nil {
		return err
	}
	log := newLogger(stderr, o.logLevel)
	if o.plotDir != "" {
		if err := os.MkdirAll(o.plotDir, 0o755); err != nil {
			return fmt.Errorf("--plot %s: %w", o.plotDir, err)
		}
	}
	rep := runReport{
		Command:   "run",
		Machine:   thisMachine(),
		Durable:   o.durable,
		Workload:  describeWorkload(o.spec, &o.commonFlags),
		StartedAt: time.Now(),
	}
	if o.restart {
		dir, cleanup, err := o.restartDir()
		if err != nil {
			return err
		}
		defer cleanup()
		o.dataDir = dir
	}
	populated := -1
	for _, c := range o.callers {
		switch {
		case o.rate == rateHalf:
			top, err := o.measure(ctx, c, 0, &populated, log, stderr)
			if err != nil {
				return err
			}
			rep.Runs = append(rep.Runs, top)
			half, err := o.measure(ctx, c, top.DecisionsPerS/2, &populated, log, stderr)
			if err != nil {
				return err
			}
			rep.Runs = append(rep.Runs, half)
		default:
			p, err := o.measure(ctx, c, o.paced, &populated, log, stderr)
			if err != nil {
				return err
			}
			rep.Runs = append(rep.Runs, p)
		}
	}
	rep.FinishedAt = time.Now()
	if o.plotDir != "" {
		files, err := plotRun(o.plotDir, rep)
		if err != nil {
			return err
		}
		rep.PlotFiles = files
	}
	if o.jsonOut {
		return writeJSON(stdout, rep)
	}
	printRun(stdout, rep)
	return nil
}

// restartDir returns the store directory for --restart: --data-dir, or a
// temporary directory removed by cleanup.
func (o *runOptions) restartDir() (dir string, cleanup func(), err error) {
	if o.dataDir != "" {
		if err := os.MkdirAll(o.dataDir, 0o755); err != nil {
			return "", nil, fmt.Errorf("--data-dir %s: %w", o.dataDir, err)
		}
		return o.dataDir, func() {}, nil
	}
	dir, err = os.MkdirTemp("", "pinbench-restart-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// measure runs the workload once with c callers, closed loop when rate is
// 0, on an engine of its own.
func (o *runOptions) measure(ctx context.Context, c int, rate float64, populated *int, log zerolog.Logger, stderr io.Writer) (runPoint, error) {
	spec := o.spec
	spec.Callers, spec.Rate = c, rate
	p := runPoint{Callers: c, Load: "closed"}
	if rate > 0 {
		p.Load, p.OfferedPerS = "paced", rate
	}
	cfg := engineConfig(o.limit, o.window)
	var b *benchEngine
	if o.restart {
		if *populated < 0 {
			n, err := populate(o.dataDir, o.accounts, o.window, log)
			if err != nil {
				return p, err
			}
			*populated = n
		}
		var rs restartResult
		var err error
		b, rs, err = restartEngine(ctx, o.dataDir, o.durable, cfg, o.accounts, log)
		if err != nil {
			return p, err
		}
		rs.Populated = *populated
		*populated = 0 // the next run restarts over what this one left
		p.Restart = &rs
	} else {
		var err error
		if b, err = openFreshEngine(o.dataDir, o.durable, cfg, log); err != nil {
			return p, err
		}
	}
	base := heapInUse()
	if o.warm {
		t0 := time.Now()
		if !o.quiet {
			fmt.Fprintf(stderr, "pinbench: %s: making %s accounts resident\n", p.label(), commas(int64(o.accounts)))
		}
		if err := warm(ctx, b.eng, o.accounts, c); err != nil {
			return p, errors.Join(err, b.close())
		}
		p.WarmS = time.Since(t0).Seconds()
	}
	res, err := workload.Run(ctx, spec, engineTarget{eng: b.eng, reserveOnly: o.reserveOnly}, progressPrinter(stderr, o.quiet, p.label()))
	if err != nil {
		return p, errors.Join(err, b.close())
	}
	p.Memory.HeapDelta = heapInUse() - base
	p.Memory.Resident = b.eng.Resident()
	if p.Memory.Resident > 0 {
		p.Memory.BytesPerResident = float64(p.Memory.HeapDelta) / float64(p.Memory.Resident)
	}
	if err := b.close(); err != nil {
		return p, err
	}
	p.fill(res)
	return p, nil
}

// fill copies a workload result into p.
func (p *runPoint) fill(res workload.Result) {
	p.Decisions, p.Granted, p.Denied = res.Ops, res.Granted, res.Denied
	p.ElapsedS = res.Elapsed.Seconds()
	p.DecisionsPerS = res.Throughput()
	p.Latency = summarize(res.Latency)
	p.Late = res.Late
	p.hist = res.Latency
}

// printRun prints the report as tables.
func printRun(w io.Writer, rep runReport) {
	mode := "durable (fsync before each grant is acknowledged)"
	if !rep.Durable {
		mode = "relaxed (no fsync)"
	}
	fmt.Fprintf(w, "pinbench run: pinbot %s\n", mode)
	fmt.Fprintf(w, "workload: %s\n", rep.Workload)
	fmt.Fprintf(w, "machine:  %s\n\n", rep.Machine)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "callers\t  load             \tdecisions/s\tgranted\tdenied\tp50\tp99\tp99.9\tmax\tlate\t")
	for _, p := range rep.Runs {
		load, late := "closed loop", "-"
		if p.Load == "paced" {
			load = "paced " + commas(int64(p.OfferedPerS)) + "/s"
			late = commas(p.Late)
		}
		fmt.Fprintf(tw, "%d\t  %-17s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", p.Callers, load,
			commas(int64(p.DecisionsPerS)), commas(p.Granted), commas(p.Denied),
			fmtDur(time.Duration(p.Latency.P50)), fmtDur(time.Duration(p.Latency.P99)),
			fmtDur(time.Duration(p.Latency.P999)), fmtDur(time.Duration(p.Latency.Max)), late)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, p := range rep.Runs {
		m := p.Memory
		fmt.Fprintf(w, "memory  %-22s %s per resident account (%s resident, heap %+.1f MiB after GC)\n",
			p.label()+":", fmtBytes(m.BytesPerResident), commas(int64(m.Resident)), float64(m.HeapDelta)/(1<<20))
	}
	for _, p := range rep.Runs {
		if r := p.Restart; r != nil {
			how := "over the existing store"
			if r.Populated > 0 {
				how = fmt.Sprintf("over a store just filled with %s accounts", commas(int64(r.Populated)))
			}
			fmt.Fprintf(w, "restart %-22s first request served %s after opening the store, %s\n",
				p.label()+":", fmtDur(r.FirstRequest), how)
		}
	}
	for _, p := range rep.Runs {
		if mostlyRefused(p.Granted, p.Denied) {
			fmt.Fprintf(w, "note    %-22s most decisions were refused (accounts at their limit), so the rate is mostly refusals; "+
				"use more accounts or fewer decisions to measure grants\n", p.label()+":")
		}
	}
	for _, f := range rep.PlotFiles {
		fmt.Fprintf(w, "chart: %s\n", f)
	}
}

// mostlyRefused reports whether more decisions were refused than granted.
func mostlyRefused(granted, denied int64) bool { return denied > granted }
