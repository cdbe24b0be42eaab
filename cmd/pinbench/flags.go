package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/cmd/pinbench/internal/workload"
	"github.com/rs/zerolog"
)

// Limits of the benchmark flags.
const (
	minBenchAccounts = 1000
	maxBenchAccounts = workload.MaxAccounts
	maxLimit         = 1 << 16
)

// commonFlags are the workload, engine and output flags run and compare
// share.
type commonFlags struct {
	accounts    int
	callers     string
	dist        string
	zipfS       float64
	zipfV       float64
	duration    time.Duration
	ops         int64
	seed        uint64
	limit       int
	window      time.Duration
	reserveOnly bool
	jsonOut     bool
	plotDir     string
	quiet       bool
	logLevel    string
}

// bind registers the shared flags on fs, with both the short and the long
// name where there are two.
func (f *commonFlags) bind(fs *flag.FlagSet) {
	f.accounts, f.callers = 100_000, "256"
	fs.IntVar(&f.accounts, "n", f.accounts, "")
	fs.IntVar(&f.accounts, "accounts", f.accounts, "")
	fs.StringVar(&f.callers, "c", f.callers, "")
	fs.StringVar(&f.callers, "callers", f.callers, "")
	fs.StringVar(&f.dist, "dist", string(workload.Uniform), "")
	fs.Float64Var(&f.zipfS, "zipf-s", 1.1, "")
	fs.Float64Var(&f.zipfV, "zipf-v", 1, "")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "")
	fs.Int64Var(&f.ops, "ops", 0, "")
	fs.Uint64Var(&f.seed, "seed", 1, "")
	fs.IntVar(&f.limit, "limit", actors.DefaultLimit, "")
	fs.DurationVar(&f.window, "window", actors.DefaultWindow, "")
	fs.BoolVar(&f.reserveOnly, "reserve-only", false, "")
	fs.BoolVar(&f.jsonOut, "json", false, "")
	fs.StringVar(&f.plotDir, "plot", "", "")
	fs.BoolVar(&f.quiet, "quiet", false, "")
	fs.StringVar(&f.logLevel, "log-level", "warn", "")
}

// validate checks the shared flags of cmd and returns the callers list
// and the workload they describe (Callers left to the caller to set).
func (f *commonFlags) validate(cmd string) ([]int, workload.Spec, error) {
	callers, err := parseCallers(cmd, f.callers)
	if err != nil {
		return nil, workload.Spec{}, err
	}
	if f.accounts < minBenchAccounts || f.accounts > maxBenchAccounts {
		return nil, workload.Spec{}, usagef(cmd, "-n/--accounts %d out of range [%d, %d]", f.accounts, minBenchAccounts, maxBenchAccounts)
	}
	dist, err := workload.ParseDist(f.dist)
	if err != nil {
		return nil, workload.Spec{}, usagef(cmd, "--dist %q: want uniform or zipf", f.dist)
	}
	if dist == workload.Zipf && !(f.zipfS > 1) {
		return nil, workload.Spec{}, usagef(cmd, "--zipf-s %v: must be greater than 1", f.zipfS)
	}
	if dist == workload.Zipf && !(f.zipfV >= 1) {
		return nil, workload.Spec{}, usagef(cmd, "--zipf-v %v: must be at least 1", f.zipfV)
	}
	if f.ops < 0 {
		return nil, workload.Spec{}, usagef(cmd, "--ops %d: must not be negative", f.ops)
	}
	if f.ops == 0 && f.duration <= 0 {
		return nil, workload.Spec{}, usagef(cmd, "--duration %v: must be positive (or give --ops)", f.duration)
	}
	if err := checkLimitWindow(cmd, f.limit, f.window); err != nil {
		return nil, workload.Spec{}, err
	}
	if _, err := zerolog.ParseLevel(f.logLevel); err != nil || f.logLevel == "" {
		return nil, workload.Spec{}, usagef(cmd, "--log-level %q: want trace, debug, info, warn or error", f.logLevel)
	}
	spec := workload.Spec{
		Accounts: f.accounts,
		Dist:     dist,
		ZipfS:    f.zipfS,
		ZipfV:    f.zipfV,
		Ops:      f.ops,
		Duration: f.duration,
		Seed:     f.seed,
	}
	if f.ops > 0 {
		spec.Duration = 0
	}
	return callers, spec, nil
}

// checkLimitWindow checks --limit and --window.
func checkLimitWindow(cmd string, limit int, window time.Duration) error {
	if limit < 1 || limit > maxLimit {
		return usagef(cmd, "--limit %d out of range [1, %d]", limit, maxLimit)
	}
	if window < time.Millisecond {
		return usagef(cmd, "--window %v: must be at least 1ms", window)
	}
	return nil
}

// parseCallers parses the -c/--callers list.
func parseCallers(cmd, s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, usagef(cmd, "-c/--callers %q: want a number or a comma-separated list of numbers", s)
		}
		if n < workload.MinCallers || n > workload.MaxCallers {
			return nil, usagef(cmd, "-c/--callers %d out of range [%d, %d]", n, workload.MinCallers, workload.MaxCallers)
		}
		out = append(out, n)
	}
	return out, nil
}

// engineConfig returns the engine configuration for a benchmark.
func engineConfig(limit int, window time.Duration) actors.Config {
	cfg := actors.DefaultConfig()
	cfg.Limit, cfg.Window = limit, window
	cfg.Recover = false
	return cfg
}

// newLogger returns the program's logger, writing to w at level (already
// validated): human-readable lines on a terminal, JSON lines otherwise.
func newLogger(w io.Writer, level string) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		lvl = zerolog.WarnLevel
	}
	out := w
	if isTerminal(w) {
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	}
	return zerolog.New(zerolog.SyncWriter(out)).Level(lvl).With().Timestamp().Logger()
}

// isTerminal reports whether w writes to a terminal.
func isTerminal(w io.Writer) bool {
	if l, ok := w.(*lockedWriter); ok {
		w = l.w
	}
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// progressPrinter returns a function printing a progress line for label
// to w, or nil when quiet.
func progressPrinter(w io.Writer, quiet bool, label string) func(workload.Progress) {
	if quiet {
		return nil
	}
	var last workload.Progress
	return func(p workload.Progress) {
		rate := float64(p.Ops-last.Ops) / (p.Elapsed - last.Elapsed).Seconds()
		last = p
		fmt.Fprintf(w, "pinbench: %s: %4.0fs %12s decisions %10s/s\n", label, p.Elapsed.Seconds(), commas(p.Ops), commas(int64(rate)))
	}
}

// commas formats n with thousands separators.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
