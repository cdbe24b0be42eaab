package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/cmd/pinbench/internal/child"
	"github.com/rs/zerolog"
)

// Disk-full modes.
const (
	diskFullAuto  = "auto"
	diskFullTmpfs = "tmpfs"
	diskFullFault = "fault"
)

// soakOptions are the flags of pinbench soak.
type soakOptions struct {
	cycles       int
	callers      int
	accounts     int
	limit        int
	window       time.Duration
	lease        time.Duration
	idle         time.Duration
	killMin      time.Duration
	killMax      time.Duration
	seed         uint64
	dataDir      string
	diskFull     bool
	diskFullMode string
	jsonOut      bool
	logLevel     string

	// exe is the program re-executed as the child: this one.
	exe string
}

// parseSoakFlags parses and checks the flags of pinbench soak.
func parseSoakFlags(args []string, stdout io.Writer) (*soakOptions, error) {
	o := &soakOptions{}
	fs := newFlagSet("soak")
	fs.IntVar(&o.cycles, "cycles", 100, "")
	fs.IntVar(&o.callers, "c", 16, "")
	fs.IntVar(&o.callers, "callers", 16, "")
	fs.IntVar(&o.accounts, "n", 200, "")
	fs.IntVar(&o.accounts, "accounts", 200, "")
	fs.IntVar(&o.limit, "limit", 100, "")
	fs.DurationVar(&o.window, "window", 3*time.Second, "")
	fs.DurationVar(&o.lease, "lease", time.Second, "")
	fs.DurationVar(&o.idle, "idle", time.Second, "")
	fs.DurationVar(&o.killMin, "kill-min", 0, "")
	fs.DurationVar(&o.killMax, "kill-max", 1500*time.Millisecond, "")
	seed := fs.String("seed", "", "")
	fs.StringVar(&o.dataDir, "data-dir", "", "")
	fs.BoolVar(&o.diskFull, "disk-full", false, "")
	fs.StringVar(&o.diskFullMode, "disk-full-mode", diskFullAuto, "")
	fs.BoolVar(&o.jsonOut, "json", false, "")
	fs.StringVar(&o.logLevel, "log-level", "warn", "")
	if err := parseFlags(fs, "soak", args, stdout); err != nil {
		return nil, err
	}
	switch {
	case o.cycles < 1 || o.cycles > 100_000:
		return nil, usagef("soak", "--cycles %d out of range [1, 100000]", o.cycles)
	case o.callers < 1 || o.callers > 1024:
		return nil, usagef("soak", "-c/--callers %d out of range [1, 1024]", o.callers)
	case o.accounts < 1 || o.accounts > 100_000:
		return nil, usagef("soak", "-n/--accounts %d out of range [1, 100000]", o.accounts)
	case o.lease < time.Millisecond:
		return nil, usagef("soak", "--lease %v: must be at least 1ms", o.lease)
	case o.idle < time.Millisecond:
		return nil, usagef("soak", "--idle %v: must be at least 1ms", o.idle)
	case o.killMin < 0:
		return nil, usagef("soak", "--kill-min %v: must not be negative", o.killMin)
	case o.killMax <= 0 || o.killMax < o.killMin:
		return nil, usagef("soak", "--kill-max %v: must be positive and at least --kill-min (%v)", o.killMax, o.killMin)
	case o.diskFullMode != diskFullAuto && o.diskFullMode != diskFullTmpfs && o.diskFullMode != diskFullFault:
		return nil, usagef("soak", "--disk-full-mode %q: want auto, tmpfs or fault", o.diskFullMode)
	}
	if err := checkLimitWindow("soak", o.limit, o.window); err != nil {
		return nil, err
	}
	if _, err := zerolog.ParseLevel(o.logLevel); err != nil || o.logLevel == "" {
		return nil, usagef("soak", "--log-level %q: want trace, debug, info, warn or error", o.logLevel)
	}
	if *seed == "" {
		o.seed = uint64(time.Now().UnixNano())
	} else if _, err := fmt.Sscan(*seed, &o.seed); err != nil {
		return nil, usagef("soak", "--seed %q: want a non-negative integer", *seed)
	}
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	o.exe = exe
	return o, nil
}

// soakCommand is pinbench soak.
func soakCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseSoakFlags(args, stdout)
	if err != nil {
		return err
	}
	log := newLogger(stderr, o.logLevel)
	if o.diskFull {
		return diskFullCommand(ctx, o, stdout, stderr, log)
	}
	rep, err := runSoak(ctx, o, stderr, log)
	if err != nil {
		return err
	}
	if o.jsonOut {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		printSoak(stdout, rep)
	}
	if len(rep.Violations) > 0 {
		return fmt.Errorf("soak: %d violation(s): %w", len(rep.Violations), errViolation)
	}
	return nil
}

// soakReport is what a soak found.
type soakReport struct {
	Command  string `json:"command"`
	Cycles   int    `json:"cycles"`
	Seed     uint64 `json:"seed"`
	Callers  int    `json:"callers"`
	Accounts int    `json:"accounts"`
	Limit    int    `json:"limit"`
	WindowMS int64  `json:"window_ms"`
	LeaseMS  int64  `json:"lease_ms"`
	DataDir  string `json:"data_dir"`
	Kept     bool   `json:"data_dir_kept"`

	Kills             int   `json:"kills"`
	KilledBeforeReady int   `json:"killed_before_ready"`
	AckedSlots        int64 `json:"acknowledged_slots"`
	Commits           int64 `json:"commits_attempted"`
	Releases          int64 `json:"releases_attempted"`
	Unparsed          int   `json:"unparsed_lines"`

	// AccountsToReplay sums, over the kills, the accounts each kill left
	// with journal events not folded into a snapshot: what the next engine
	// process, restarted over the killed one's data directory, replays.
	// KillsToReplay counts the kills that left at least one.
	AccountsToReplay int `json:"accounts_to_replay_after_kills"`
	KillsToReplay    int `json:"kills_leaving_accounts_to_replay"`

	StoreChecks   int `json:"store_checks"`
	JournalEvents int `json:"journal_events_replayed"`
	JournalGrants int `json:"journal_grants_checked"`
	JournalFull   int `json:"journal_grants_filling_the_limit"`
	HistoryGrants int `json:"acknowledged_grants_checked"`
	HistoryFull   int `json:"acknowledged_grants_filling_the_limit"`
	MaxUsed       int `json:"max_used_seen"`
	LostGrants    int `json:"violations_lost_grants"`
	OverLimit     int `json:"violations_over_limit"`
	StoreProblems int `json:"violations_store"`
	// WallSteps counts the starts whose wall clock was off the true time;
	// MaxSkewMS is the farthest engine time started from the true time.
	WallSteps      int   `json:"wall_clock_steps"`
	MaxSkewMS      int64 `json:"max_engine_clock_skew_ms"`
	ClockProblems  int   `json:"violations_clock"`
	ProcessFailure int   `json:"violations_process"`

	Violations []violation `json:"violations"`
	ElapsedS   float64     `json:"elapsed_s"`
}

// maxListed is how many violations the report lists.
const maxListed = 20

// runSoak runs the kill cycles and the checks. Each child starts over the
// data directory as the previous kill left it; the checks run on copies.
func runSoak(ctx context.Context, o *soakOptions, stderr io.Writer, log zerolog.Logger) (*soakReport, error) {
	start := time.Now()
	dir, cleanup, err := soakDir(o.dataDir)
	if err != nil {
		return nil, err
	}
	rep := &soakReport{
		Command: "soak", Cycles: o.cycles, Seed: o.seed, Callers: o.callers, Accounts: o.accounts,
		Limit: o.limit, WindowMS: o.window.Milliseconds(), LeaseMS: o.lease.Milliseconds(), DataDir: dir,
		Violations: []violation{},
	}
	const snapshotEvery = 16
	cfg := soakEngineConfig(o.limit, o.window, o.lease, o.idle, snapshotEvery)
	acked := newAckLedger(o.window.Milliseconds(), o.lease.Milliseconds())
	r := rand.New(rand.NewPCG(o.seed, 0x50a4))
	checkLog := log.With().Str("process", "soak-check").Logger()
	add := func(vs ...violation) {
		rep.Violations = append(rep.Violations, vs...)
	}
	absorb := func(c storeCheck) {
		rep.StoreChecks++
		rep.JournalEvents += c.events
		rep.JournalGrants += c.grantsChecked
		rep.JournalFull += c.full
		rep.MaxUsed = max(rep.MaxUsed, c.maxUsed)
		add(c.viols...)
	}
	// anchored is set once a child has printed READY, which it does only
	// after the engine stored its clock anchor.
	anchored := false
	for cycle := 1; cycle <= o.cycles && ctx.Err() == nil; cycle++ {
		delay := killDelay(r, o.killMin, o.killMax, cycle)
		co := soakChildOptions{
			dataDir: dir, accounts: o.accounts, callers: o.callers, limit: o.limit, window: o.window,
			lease: o.lease, idle: o.idle, seed: o.seed + uint64(cycle), snapshotEvery: snapshotEvery, logLevel: o.logLevel,
			wallStep: wallStep(r, anchored),
		}
		before := acked.slots
		cr, err := killChild(ctx, o.exe, co, delay, acked)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			add(violation{Kind: violProcess, Cycle: cycle, Detail: err.Error()})
			break
		}
		rep.Kills++
		anchored = anchored || cr.ready
		if !cr.ready {
			rep.KilledBeforeReady++
		} else if !clockFollowsWall {
			// Engine time resumes on the boot-time clock whatever the wall
			// clock says; the first child to store the clock anchor took
			// it from the true time (see wallStep).
			if co.wallStep != 0 {
				rep.WallSteps++
			}
			rep.MaxSkewMS = max(rep.MaxSkewMS, cr.skew, -cr.skew)
			if cr.skew > maxClockSkew || cr.skew < -maxClockSkew {
				rep.ClockProblems++
				add(violation{Kind: violClock, Cycle: cycle, Detail: fmt.Sprintf(
					"the wall clock %v off the true time moved engine time: it started %d ms off", co.wallStep, cr.skew)})
			}
		}
		// The check works on a copy: the next child restarts over the
		// directory exactly as the kill left it.
		c, err := checkStore(ctx, dir, cycle, cfg, acked, checkLog)
		if err != nil {
			cleanup(false)
			return nil, fmt.Errorf("soak: cycle %d: %w", cycle, err)
		}
		absorb(c)
		rep.AccountsToReplay += c.journaled
		if c.journaled > 0 {
			rep.KillsToReplay++
		}
		when := ""
		if !cr.ready {
			when = " (before READY)"
		}
		fmt.Fprintf(stderr, "soak: cycle %d/%d: killed %v after start%s, %s slots acknowledged, %d stored accounts, %d left to replay, %d violation(s) so far\n",
			cycle, o.cycles, delay.Round(time.Millisecond), when, commas(acked.slots-before), c.accounts, c.journaled, len(rep.Violations))
	}
	if err := ctx.Err(); err != nil {
		cleanup(false)
		return nil, fmt.Errorf("soak interrupted: %w", err)
	}
	// The whole history, then the data directory once more.
	var hv []violation
	rep.HistoryGrants, rep.HistoryFull, hv = acked.historyCheck(o.limit)
	add(hv...)
	for _, a := range acked.anomalies {
		add(violation{Kind: violLost, Detail: "child output inconsistent: " + a})
	}
	final, err := checkStore(ctx, dir, 0, cfg, acked, checkLog)
	if err != nil {
		cleanup(false)
		return nil, fmt.Errorf("soak: final check: %w", err)
	}
	absorb(final)

	rep.AckedSlots, rep.Commits, rep.Releases, rep.Unparsed = acked.slots, acked.commits, acked.releases, acked.unparsed
	for _, v := range rep.Violations {
		switch v.Kind {
		case violLost:
			rep.LostGrants++
		case violOver:
			rep.OverLimit++
		case violStore:
			rep.StoreProblems++
		case violProcess:
			rep.ProcessFailure++
		}
	}
	if rep.AckedSlots == 0 {
		add(violation{Kind: violProcess, Detail: "no grant was acknowledged in any cycle: the soak tested nothing (raise --kill-max)"})
		rep.ProcessFailure++
	}
	rep.Kept = len(rep.Violations) > 0 || o.dataDir != ""
	cleanup(rep.Kept)
	rep.ElapsedS = time.Since(start).Seconds()
	return rep, nil
}

// killDelay picks when to kill the child of cycle, after its start:
// uniformly in [lo, hi], except that one cycle in six picks in the first
// tenth of the range, so that some kills land while the engine is still
// opening its store and replaying its journal.
func killDelay(r *rand.Rand, lo, hi time.Duration, cycle int) time.Duration {
	span := hi - lo
	if cycle%6 == 0 {
		span /= 10
	}
	return lo + time.Duration(r.Int64N(int64(span)+1))
}

// soakDir returns the soak's data directory: dir, which must be empty or
// absent, or a new temporary one. cleanup(keep) removes a temporary one
// unless keep.
func soakDir(dir string) (string, func(keep bool), error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "pinbench-soak-")
		if err != nil {
			return "", nil, err
		}
		return d, func(keep bool) {
			if !keep {
				os.RemoveAll(d)
			}
		}, nil
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", nil, fmt.Errorf("--data-dir %s: %w", dir, err)
		}
	case err != nil:
		return "", nil, fmt.Errorf("--data-dir %s: %w", dir, err)
	case len(entries) > 0:
		return "", nil, usagef("soak", "--data-dir %s is not empty: the soak starts from a fresh data directory", dir)
	}
	return dir, func(bool) {}, nil
}

// wallStep returns how far the wall clock of a child is off the true
// time: up to 3 hours either way once anchored, that is once a child has
// stored the engine's clock anchor, which then sets engine time. Until
// then it is 0: a child killed before it stored the anchor leaves none,
// and the next one rightly takes engine time from its wall clock (it has
// no pin to keep the age of), which a stepped clock would put off the
// true time. It is 0 where engine time follows the wall clock at each
// start (no boot ID).
func wallStep(r *rand.Rand, anchored bool) time.Duration {
	if !anchored || clockFollowsWall {
		return 0
	}
	return time.Duration(r.Int64N(int64(6*time.Hour))) - 3*time.Hour
}

// clockFollowsWall is true where the machine has no boot ID: then engine
// time starts from the wall clock at each start, and the soak does not
// step it.
var clockFollowsWall = actors.SystemUptime().BootID() == ""

// maxClockSkew is how far (ms) engine time may start from the true time:
// a restart's own duration and the rounding of the clocks.
const maxClockSkew = 2000

// childResult is what one child run showed.
type childResult struct {
	ready bool
	lines int
	// skew is the engine time at READY minus the true time, ms.
	skew int64
}

// killChild starts a soak child, records every line it prints into acked,
// kills it with SIGKILL delay after its start and waits for it. It fails
// if the child died of anything but that SIGKILL.
func killChild(ctx context.Context, exe string, co soakChildOptions, delay time.Duration, acked *ackLedger) (childResult, error) {
	var res childResult
	cmd := exec.Command(exe, co.args()...)
	cmd.SysProcAttr = child.Attr()
	stderr := child.NewTail(4096)
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return res, err
	}
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("starting %s: %w", exe, err)
	}
	var killed atomic.Bool
	kill := func() {
		killed.Store(true)
		_ = cmd.Process.Signal(syscall.SIGKILL)
	}
	timer := time.AfterFunc(delay, kill)
	stopOnCancel := context.AfterFunc(ctx, kill)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		res.lines++
		if acked.line(sc.Text()) {
			res.ready = true
			var engineNow int64
			if _, err := fmt.Sscanf(sc.Text(), "READY %d", &engineNow); err == nil {
				res.skew = engineNow - time.Now().UnixMilli()
			}
		}
	}
	scanErr := sc.Err()
	diedEarly := timer.Stop() // the child's output ended before the kill
	stopOnCancel()
	if diedEarly {
		kill()
	}
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	var exit *exec.ExitError
	if diedEarly || !errors.As(err, &exit) {
		return res, fmt.Errorf("the engine process ended on its own before the kill (%v); its stderr:\n%s", err, stderr.String())
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		return res, fmt.Errorf("the engine process died of %v, not of the SIGKILL; its stderr:\n%s", err, stderr.String())
	}
	if scanErr != nil {
		return res, fmt.Errorf("reading the engine process' output: %w", scanErr)
	}
	return res, nil
}

// printSoak prints the summary.
func printSoak(w io.Writer, rep *soakReport) {
	verdict := "PASS"
	if len(rep.Violations) > 0 {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "pinbench soak: %d SIGKILL cycles, %d callers over %d accounts, limit %d per %v, lease %v, seed %d\n",
		rep.Cycles, rep.Callers, rep.Accounts, rep.Limit, time.Duration(rep.WindowMS)*time.Millisecond,
		time.Duration(rep.LeaseMS)*time.Millisecond, rep.Seed)
	fmt.Fprintf(w, "  kills                     %d (%d before the engine was ready)\n", rep.Kills, rep.KilledBeforeReady)
	fmt.Fprintf(w, "  acknowledged slots        %s (commit attempted for %s, release for %s, the rest left to their lease)\n",
		commas(rep.AckedSlots), commas(rep.Commits), commas(rep.Releases))
	fmt.Fprintf(w, "  replayed after kills      %s accounts (%d of %d kills left journal events to replay; each engine process restarts over what the last kill left)\n",
		commas(int64(rep.AccountsToReplay)), rep.KillsToReplay, rep.Kills)
	fmt.Fprintf(w, "  (a) lost grants           %d   (engine count vs acknowledged slots that must still count, after every kill)\n", rep.LostGrants)
	fmt.Fprintf(w, "  (b) windows over limit    %d   (journal replay: %s grants checked, %s filled the limit; acknowledged history: %s grants checked, %s filled it; max in use %d/%d)\n",
		rep.OverLimit, commas(int64(rep.JournalGrants)), commas(int64(rep.JournalFull)),
		commas(int64(rep.HistoryGrants)), commas(int64(rep.HistoryFull)), rep.MaxUsed, rep.Limit)
	fmt.Fprintf(w, "  (c) data directory        %d problem(s) in %d opens (of copies taken after each kill)\n", rep.StoreProblems, rep.StoreChecks)
	fmt.Fprintf(w, "  (d) engine clock          %d   (the wall clock stepped up to 3 h either way at %d starts; engine time started at most %d ms off the true time)\n",
		rep.ClockProblems, rep.WallSteps, rep.MaxSkewMS)
	if rep.ProcessFailure > 0 {
		fmt.Fprintf(w, "  engine process failures   %d\n", rep.ProcessFailure)
	}
	if rep.Unparsed > 0 {
		fmt.Fprintf(w, "  unparsed output lines     %d\n", rep.Unparsed)
	}
	for i, v := range rep.Violations {
		if i == maxListed {
			fmt.Fprintf(w, "  ... and %d more\n", len(rep.Violations)-maxListed)
			break
		}
		fmt.Fprintf(w, "  VIOLATION %s\n", v)
	}
	if rep.Kept {
		fmt.Fprintf(w, "  data directory kept: %s\n", rep.DataDir)
	}
	fmt.Fprintf(w, "result: %s (%.1fs)\n", verdict, rep.ElapsedS)
}
