package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/pinbot/pinbot/cmd/pinbench/internal/ratemap"
	"github.com/pinbot/pinbot/cmd/pinbench/internal/redislog"
	"github.com/pinbot/pinbot/cmd/pinbench/internal/workload"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
	"gonum.org/v1/plot/vg"
)

// The systems compare measures, in the order it measures them.
const (
	sysDurable       = "pinbot-durable"
	sysRelaxed       = "pinbot-relaxed"
	sysRedisAlways   = "redis-always"
	sysRedisEverysec = "redis-everysec"
	sysXRate         = "xrate"
	sysActor         = "actor"
)

var allSystems = []string{sysDurable, sysRelaxed, sysRedisAlways, sysRedisEverysec, sysXRate, sysActor}

// systemNames are the names printed in tables and charts.
var systemNames = map[string]string{
	sysDurable:       "pinbot durable",
	sysRelaxed:       "pinbot relaxed",
	sysRedisAlways:   "redis log, appendfsync always",
	sysRedisEverysec: "redis log, appendfsync everysec",
	sysXRate:         "x/time/rate in-process",
	sysActor:         "protoactor RequestFuture",
}

// Redis pipelining modes.
const (
	pipelineAuto = "auto"
	pipelineOff  = "off"
)

// errNoRedis explains what to do when redis-server is missing.
var errNoRedis = errors.New("redis-server is not installed (not found on PATH): run `make bench-deps` " +
	"(it installs Debian's redis-server), or pass --skip-redis to compare without Redis")

// compareOptions are the flags of pinbench compare.
type compareOptions struct {
	commonFlags
	only          string
	skipRedis     bool
	redisServer   string
	redisPipeline string
	rate          string

	callers int
	spec    workload.Spec
	systems []string
	// pace is --rate parsed, zero for closed loop. closedSpec is the workload
	// of the closed-loop run that measures the maximum a fraction is of.
	pace       paceSpec
	closedSpec workload.Spec
}

// parseCompareFlags parses and checks the flags of pinbench compare.
func parseCompareFlags(args []string, stdout io.Writer) (*compareOptions, error) {
	o := &compareOptions{}
	fs := newFlagSet("compare")
	o.bind(fs)
	fs.StringVar(&o.only, "only", "", "")
	fs.BoolVar(&o.skipRedis, "skip-redis", false, "")
	fs.StringVar(&o.redisServer, "redis-server", redislog.DefaultBinary, "")
	fs.StringVar(&o.redisPipeline, "redis-pipeline", pipelineAuto, "")
	fs.StringVar(&o.rate, "rate", "", "")
	if err := parseFlags(fs, "compare", args, stdout); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.rate != "" {
		p, err := parseRate(o.rate)
		if err != nil {
			return nil, err
		}
		o.pace = p
		if !set["duration"] {
			o.duration = pacedDuration
		}
	}
	callers, spec, err := o.validate("compare")
	if err != nil {
		return nil, err
	}
	if len(callers) != 1 {
		return nil, usagef("compare", "-c/--callers %q: compare takes one number of callers", o.commonFlags.callers)
	}
	o.callers, o.spec = callers[0], spec
	o.spec.Callers = o.callers
	if o.redisPipeline != pipelineAuto && o.redisPipeline != pipelineOff {
		return nil, usagef("compare", "--redis-pipeline %q: want %s or %s", o.redisPipeline, pipelineAuto, pipelineOff)
	}
	o.systems = allSystems
	if o.only != "" {
		o.systems = nil
		for _, s := range strings.Split(o.only, ",") {
			s = strings.TrimSpace(s)
			if !slices.Contains(allSystems, s) {
				return nil, usagef("compare", "--only: unknown system %q (want some of %s)", s, strings.Join(allSystems, ", "))
			}
			if !slices.Contains(o.systems, s) {
				o.systems = append(o.systems, s)
			}
		}
		// Measure in the usual order whatever the order given.
		slices.SortFunc(o.systems, func(a, b string) int {
			return slices.Index(allSystems, a) - slices.Index(allSystems, b)
		})
	}
	if o.skipRedis {
		o.systems = slices.DeleteFunc(slices.Clone(o.systems), isRedis)
	}
	if len(o.systems) == 0 {
		return nil, usagef("compare", "no system left to measure")
	}
	if o.pace.Of != "" && o.skipRedis && isRedis(o.pace.Of) {
		return nil, usagef("compare", "--rate %q is a fraction of %s, which --skip-redis leaves out", o.rate, o.pace.Of)
	}
	o.closedSpec = o.spec
	if o.pace.Of != "" && o.spec.Ops == 0 && !set["duration"] {
		o.closedSpec.Duration = closedDuration
	}
	o.spec.Rate = o.pace.PerS // 0 until a fraction's maximum is measured
	return o, nil
}

// needsRedis reports whether the comparison starts a redis-server.
func (o *compareOptions) needsRedis() bool {
	return slices.ContainsFunc(o.systems, isRedis) || isRedis(o.pace.Of)
}

func isRedis(s string) bool { return s == sysRedisAlways || s == sysRedisEverysec }

// compareRow is one system's result.
type compareRow struct {
	ID            string  `json:"id"`
	Name          string  `json:"name"`
	Decisions     int64   `json:"decisions"`
	Granted       int64   `json:"granted"`
	Denied        int64   `json:"denied"`
	ElapsedS      float64 `json:"elapsed_s"`
	DecisionsPerS float64 `json:"decisions_per_s"`
	// Latency counts, paced, from each decision's scheduled instant.
	Latency latency `json:"latency"`
	// Late counts, paced, the decisions no caller was free to start at
	// their instant.
	Late int64 `json:"late_starts"`
	// Fingerprint is the same for every system of a run with --ops: they
	// were asked about the same accounts.
	Fingerprint string `json:"workload_fingerprint"`
	// DurableRatio and RelaxedRatio are pinbot durable's and pinbot
	// relaxed's decisions/s divided by this system's.
	DurableRatio float64 `json:"pinbot_durable_ratio,omitempty"`
	RelaxedRatio float64 `json:"pinbot_relaxed_ratio,omitempty"`
	Notes        string  `json:"notes,omitempty"`

	res workload.Result
}

// target is a goal of the issue the comparison checks.
type target struct {
	What  string  `json:"what"`
	Ratio float64 `json:"ratio"`
	Want  float64 `json:"want_at_least"`
	Met   bool    `json:"met"`
}

// compareReport is pinbench compare's output.
type compareReport struct {
	Command       string       `json:"command"`
	Machine       machine      `json:"machine"`
	Workload      workloadJSON `json:"workload"`
	Callers       int          `json:"callers"`
	RedisPipeline string       `json:"redis_pipeline,omitempty"`
	// Load is closed or paced; a paced comparison offers every system
	// OfferedPerS decisions/s, a fraction of RateOf's maximum when given.
	Load           string          `json:"load"`
	OfferedPerS    float64         `json:"offered_per_s,omitempty"`
	RateOf         *rateOf         `json:"rate_of,omitempty"`
	Systems        []compareRow    `json:"systems"`
	Targets        []target        `json:"targets,omitempty"`
	LatencyTargets []latencyTarget `json:"latency_targets,omitempty"`
	Skipped        []string        `json:"skipped,omitempty"`
	PlotFiles      []string        `json:"plot_files,omitempty"`
	StartedAt      time.Time       `json:"started_at"`
	FinishedAt     time.Time       `json:"finished_at"`
}

// compareCommand is pinbench compare.
func compareCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseCompareFlags(args, stdout)
	if err != nil {
		return err
	}
	log := newLogger(stderr, o.logLevel)
	if o.needsRedis() {
		if _, err := redislog.Find(o.redisServer); err != nil {
			if o.redisServer != redislog.DefaultBinary {
				return fmt.Errorf("--redis-server %s: %w", o.redisServer, err)
			}
			return errNoRedis
		}
	}
	if o.plotDir != "" {
		if err := os.MkdirAll(o.plotDir, 0o755); err != nil {
			return fmt.Errorf("--plot %s: %w", o.plotDir, err)
		}
	}
	rep := compareReport{
		Command:   "compare",
		Machine:   thisMachine(),
		Workload:  describeWorkload(o.spec, &o.commonFlags),
		Callers:   o.callers,
		Load:      loadClosed,
		StartedAt: time.Now(),
	}
	if o.needsRedis() {
		rep.RedisPipeline = o.redisPipeline
	}
	for _, s := range allSystems {
		if !slices.Contains(o.systems, s) {
			rep.Skipped = append(rep.Skipped, s)
		}
	}
	if o.rate != "" {
		return o.comparePaced(ctx, rep, log, stdout, stderr)
	}
	return o.measureAll(ctx, rep, o.spec, "", log, stdout, stderr, (*compareReport).addRatios, plotCompare, printCompare)
}

// measureAll measures every system with spec, in order (what, such as
// ", paced", names the runs in errors), then completes rep with complete
// (ratios or targets) and writes its charts with plot, and JSON or the
// table with print.
func (o *compareOptions) measureAll(ctx context.Context, rep compareReport, spec workload.Spec, what string, log zerolog.Logger, stdout, stderr io.Writer,
	complete func(*compareReport), plot func(string, compareReport) ([]string, error), print func(io.Writer, compareReport)) error {
	for _, id := range o.systems {
		row, err := o.measure(ctx, id, spec, log, stderr)
		if err != nil {
			return fmt.Errorf("%s%s: %w", systemNames[id], what, err)
		}
		rep.Systems = append(rep.Systems, row)
	}
	rep.FinishedAt = time.Now()
	complete(&rep)
	if o.plotDir != "" {
		files, err := plot(o.plotDir, rep)
		if err != nil {
			return err
		}
		rep.PlotFiles = files
	}
	if o.jsonOut {
		return writeJSON(stdout, rep)
	}
	print(stdout, rep)
	return nil
}

// measure sets up system id, drives it with spec (closed loop or paced)
// and tears it down.
func (o *compareOptions) measure(ctx context.Context, id string, spec workload.Spec, log zerolog.Logger, stderr io.Writer) (compareRow, error) {
	row := compareRow{ID: id, Name: systemNames[id]}
	t, notes, teardown, err := o.setup(ctx, id, log, stderr)
	if err != nil {
		return row, err
	}
	label := row.Name
	if spec.Rate > 0 {
		label += ", paced"
	}
	runtime.GC()
	res, err := workload.Run(ctx, spec, t, progressPrinter(stderr, o.quiet, label))
	if terr := teardown(); terr != nil {
		err = errors.Join(err, terr)
	}
	if err != nil {
		return row, err
	}
	row.Notes = notes
	row.res = res
	row.Decisions, row.Granted, row.Denied = res.Ops, res.Granted, res.Denied
	row.ElapsedS = res.Elapsed.Seconds()
	row.DecisionsPerS = res.Throughput()
	row.Latency = summarize(res.Latency)
	row.Late = res.Late
	row.Fingerprint = fmt.Sprintf("%016x", res.Fingerprint)
	return row, nil
}

// setup starts system id and returns its target and how to stop it.
func (o *compareOptions) setup(ctx context.Context, id string, log zerolog.Logger, stderr io.Writer) (workload.Target, string, func() error, error) {
	switch id {
	case sysDurable, sysRelaxed:
		b, err := openFreshEngine("", id == sysDurable, engineConfig(o.limit, o.window), log)
		if err != nil {
			return nil, "", nil, err
		}
		if !o.quiet {
			fmt.Fprintf(stderr, "pinbench: %s: making %s accounts resident\n", systemNames[id], commas(int64(o.accounts)))
		}
		if err := warm(ctx, b.eng, o.accounts, o.callers); err != nil {
			return nil, "", nil, errors.Join(err, b.close())
		}
		notes := decisionName(o.reserveOnly) + " per decision, every account resident"
		return engineTarget{eng: b.eng, reserveOnly: o.reserveOnly}, notes, b.close, nil
	case sysRedisAlways, sysRedisEverysec:
		fsync := "always"
		if id == sysRedisEverysec {
			fsync = "everysec"
		}
		return o.setupRedis(ctx, fsync, log)
	case sysXRate:
		m := ratemap.New(o.limit, o.window)
		t := workload.TargetFunc(func(_ context.Context, i int) (bool, error) {
			return m.AllowAt(workload.Account(i), time.Now()), nil
		})
		notes := fmt.Sprintf("rate.Every(%v/%d) burst %d per account, 256-way sharded map", o.window, o.limit, o.limit)
		return t, notes, func() error { return nil }, nil
	case sysActor:
		return setupEcho(o.callers, log)
	}
	return nil, "", nil, fmt.Errorf("unknown system %q", id)
}

// redisTarget makes one decision with the Lua sliding-window log.
type redisTarget struct{ l *redislog.Limiter }

// Decide implements workload.Target.
func (t redisTarget) Decide(ctx context.Context, i int) (bool, error) {
	return t.l.AllowAt(ctx, workload.Account(i), time.Now())
}

// setupRedis starts a redis-server with appendfsync fsync and a client with
// one connection per caller.
func (o *compareOptions) setupRedis(ctx context.Context, fsync string, log zerolog.Logger) (workload.Target, string, func() error, error) {
	srv, err := redislog.Start(ctx, redislog.ServerOptions{Binary: o.redisServer, AppendFsync: fsync, Log: log})
	if err != nil {
		return nil, "", nil, err
	}
	c := redis.NewClient(&redis.Options{
		Addr:             srv.Addr,
		PoolSize:         o.callers,
		PipelinePoolSize: o.callers,
		ReadTimeout:      30 * time.Second,
		WriteTimeout:     30 * time.Second,
		PoolTimeout:      30 * time.Second,
	})
	stop := func() error { return errors.Join(c.Close(), srv.Stop()) }
	sha, err := redislog.Load(ctx, c)
	if err != nil {
		return nil, "", nil, errors.Join(err, stop())
	}
	// Open every connection before timing.
	var wg sync.WaitGroup
	errs := make([]error, o.callers)
	for i := range o.callers {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = c.Ping(ctx).Err() }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, "", nil, errors.Join(err, stop())
	}
	var run redis.Scripter = c
	notes := fmt.Sprintf("EVALSHA per decision, %d connections, no pipelining", o.callers)
	if o.redisPipeline == pipelineAuto {
		ap, err := c.AutoPipeline()
		if err != nil {
			return nil, "", nil, errors.Join(err, stop())
		}
		run = ap
		inner := stop
		stop = func() error { return errors.Join(ap.Close(), inner()) }
		notes = fmt.Sprintf("EVALSHA per decision, go-redis auto-pipelining, pools of %d connections", o.callers)
	}
	return redisTarget{l: redislog.NewLimiter(run, sha, o.limit, o.window)}, notes, stop, nil
}

// echoActor answers every request at once: the bare cost of a protoactor
// RequestFuture round trip.
type echoActor struct{}

// Receive implements actor.Actor.
func (echoActor) Receive(c actor.Context) {
	if m, ok := c.Message().(int); ok {
		c.Respond(m)
	}
}

// setupEcho starts one echo actor per caller; decision i goes to actor
// i mod callers.
func setupEcho(callers int, log zerolog.Logger) (workload.Target, string, func() error, error) {
	actorLog := log.With().Str("component", "protoactor").Logger()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(zerolog.NewSlogHandler(actorLog))
	}))
	props := actor.PropsFromProducer(func() actor.Actor { return echoActor{} })
	pids := make([]*actor.PID, callers)
	for i := range pids {
		pids[i] = system.Root.Spawn(props)
	}
	t := workload.TargetFunc(func(_ context.Context, i int) (bool, error) {
		_, err := system.Root.RequestFuture(pids[i%len(pids)], i, 30*time.Second).Result()
		return err == nil, err
	})
	notes := fmt.Sprintf("RequestFuture to one of %d actors that reply at once", callers)
	return t, notes, func() error { system.Shutdown(); return nil }, nil
}

// addRatios fills the ratios pinbot ÷ each system and checks the targets.
func (rep *compareReport) addRatios() {
	rate := map[string]float64{}
	for _, r := range rep.Systems {
		rate[r.ID] = r.DecisionsPerS
	}
	for i := range rep.Systems {
		r := &rep.Systems[i]
		if r.DecisionsPerS <= 0 {
			continue
		}
		if d, ok := rate[sysDurable]; ok {
			r.DurableRatio = d / r.DecisionsPerS
		}
		if d, ok := rate[sysRelaxed]; ok {
			r.RelaxedRatio = d / r.DecisionsPerS
		}
	}
	goals := []struct {
		other string
		want  float64
	}{{sysRedisAlways, 3}, {sysRedisEverysec, 1}, {sysActor, 0.5}}
	d, ok := rate[sysDurable]
	if !ok {
		return
	}
	for _, g := range goals {
		other, ok := rate[g.other]
		if !ok || other <= 0 {
			continue
		}
		ratio := d / other
		rep.Targets = append(rep.Targets, target{
			What:  fmt.Sprintf("%s ÷ %s", systemNames[sysDurable], systemNames[g.other]),
			Ratio: ratio,
			Want:  g.want,
			Met:   ratio >= g.want,
		})
	}
}

// printCompare prints the report as a table.
func printCompare(w io.Writer, rep compareReport) {
	fmt.Fprintf(w, "pinbench compare: %d callers, same workload for every system\n", rep.Callers)
	fmt.Fprintf(w, "workload: %s\n", rep.Workload)
	fmt.Fprintf(w, "machine:  %s\n\n", rep.Machine)
	width := len("system")
	for _, r := range rep.Systems {
		width = max(width, len(r.Name))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tdecisions/s\tgranted\tp50\tp99\tp99.9\tdurable ÷\trelaxed ÷\t\n", width, "system")
	for _, r := range rep.Systems {
		granted := "-"
		if r.Decisions > 0 {
			granted = fmt.Sprintf("%.0f%%", 100*float64(r.Granted)/float64(r.Decisions))
		}
		fmt.Fprintf(tw, "%-*s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", width, r.Name, commas(int64(r.DecisionsPerS)), granted,
			fmtDur(time.Duration(r.Latency.P50)), fmtDur(time.Duration(r.Latency.P99)), fmtDur(time.Duration(r.Latency.P999)),
			fmtRatio(r.DurableRatio), fmtRatio(r.RelaxedRatio))
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
			fmt.Fprintf(w, "  note: %s refused most decisions (accounts at their limit), so its rate is mostly refusals; "+
				"use more accounts or fewer decisions to measure grants\n", r.Name)
		}
	}
	if len(rep.Targets) > 0 {
		fmt.Fprintln(w, "\ntargets:")
		for _, t := range rep.Targets {
			verdict := "met"
			if !t.Met {
				verdict = "MISSED"
			}
			fmt.Fprintf(w, "  %-62s %6.2f  want ≥ %-4g %s\n", t.What, t.Ratio, t.Want, verdict)
		}
	}
	for _, f := range rep.PlotFiles {
		fmt.Fprintf(w, "chart: %s\n", f)
	}
}

func fmtRatio(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", r)
}

// shortNames label the bars of the comparison chart.
var shortNames = map[string]string{
	sysDurable:       "pinbot durable",
	sysRelaxed:       "pinbot relaxed",
	sysRedisAlways:   "redis always",
	sysRedisEverysec: "redis everysec",
	sysXRate:         "x/time/rate",
	sysActor:         "RequestFuture",
}

// plotCompare writes the comparison's charts: decisions/s per system and
// every system's latency spectrum.
func plotCompare(dir string, rep compareReport) ([]string, error) {
	var names []string
	var perS []float64
	var ss []series
	for _, r := range rep.Systems {
		names = append(names, shortNames[r.ID])
		perS = append(perS, r.DecisionsPerS)
		ss = append(ss, series{name: shortNames[r.ID], h: r.res.Latency})
	}
	title := fmt.Sprintf("decisions/s, %d callers, %s accounts", rep.Callers, commas(int64(rep.Workload.Accounts)))
	p, err := barChart(title, "decisions/s", names, perS)
	if err != nil {
		return nil, err
	}
	files, err := saveChart(p, dir, "compare_throughput", vg.Length(max(6, 1.3*float64(len(names))))*vg.Inch, 4*vg.Inch)
	if err != nil {
		return files, err
	}
	p, err = latencyChart(fmt.Sprintf("latency distribution, %d callers", rep.Callers), ss)
	if err != nil {
		return files, err
	}
	f, err := saveChart(p, dir, "compare_latency", 7*vg.Inch, 4.5*vg.Inch)
	return append(files, f...), err
}
