package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/cmd/pinbench/internal/child"
	"github.com/pinbot/pinbot/internal/app/enginestore"
	"github.com/pinbot/pinbot/persistence/persistencetest"
	"github.com/rs/zerolog"
)

// diskFullChildCommand is the hidden command that runs the disk-full
// scenario in a process of its own, on a tmpfs: a store that faults when
// the disk fills must not take pinbench (and the unmount) down with it.
const diskFullChildCommand = "disk-full-child"

// tmpfsSize is the size of the tmpfs the disk-full run fills.
const tmpfsSize = 128 << 20

// diskFullStoreOptions opens the store of the disk-full run: durable, with
// a small memtable and small journal segments, so that Badger, its
// free-space reserve (two memtables and a value-log file) and the
// journal's log fit in the tmpfs.
var diskFullStoreOptions = enginestore.Options{MemTableSize: 1 << 20, SegmentSize: 4 << 20}

// Accounts of the disk-full run: some granted before the disk fills, and
// one never loaded before, whose Status must be read from the full store.
const (
	diskFullAccounts = 8
	diskFullCold     = "disk-cold"
)

func diskFullAccount(i int) string { return fmt.Sprintf("disk-%d", i) }

// diskFiller fills the store's disk and gives the space back.
type diskFiller interface {
	fill() (string, error)
	free() (string, error)
}

// faultFiller makes every store write fail with ENOSPC.
type faultFiller struct{ fs *persistencetest.FaultStore }

func (f faultFiller) fill() (string, error) {
	f.fs.FailWrites(persistencetest.ErrDiskFull)
	return "every store write now fails with ENOSPC (persistencetest.FaultStore)", nil
}

func (f faultFiller) free() (string, error) {
	f.fs.ClearFaults()
	return "the store fault is cleared", nil
}

// fileFiller fills the filesystem with one file and deletes it.
type fileFiller struct{ path string }

func (f fileFiller) fill() (string, error) {
	file, err := os.OpenFile(f.path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return "", err
	}
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, err := file.Write(buf)
		n += int64(k)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			return "", errors.Join(err, file.Close())
		}
	}
	// Fill the last partial block too.
	for {
		k, err := file.Write(buf[:512])
		n += int64(k)
		if err != nil {
			break
		}
	}
	_ = file.Sync()
	return fmt.Sprintf("a filler file of %s bytes took the free space", commas(n)), file.Close()
}

func (f fileFiller) free() (string, error) {
	if err := os.Remove(f.path); err != nil {
		return "", err
	}
	return "the filler file is deleted", nil
}

// dfStep is one checked step of the disk-full run.
type dfStep struct {
	OK     bool   `json:"ok"`
	What   string `json:"what"`
	Detail string `json:"detail,omitempty"`
}

// diskFullScenario fills the disk under eng and checks that Reserve
// refuses with ErrUnavailable and grants nothing, that Status keeps
// answering, and that grants resume once the space is back. Each step goes
// to emit; granted (may be nil) learns of every acknowledged grant. It
// reports whether every step passed.
func diskFullScenario(ctx context.Context, eng *actors.Engine, f diskFiller, emit func(dfStep), granted func(account string, n int)) bool {
	allOK := true
	step := func(ok bool, what, format string, args ...any) {
		allOK = allOK && ok
		emit(dfStep{OK: ok, What: what, Detail: fmt.Sprintf(format, args...)})
	}
	used := map[string]int{}
	note := func(acc string, n int) {
		used[acc] += n
		if granted != nil && n > 0 {
			granted(acc, n)
		}
	}

	// 1. Grants while there is space.
	for i := range diskFullAccounts {
		acc := diskFullAccount(i)
		g, err := eng.Reserve(ctx, acc, 1)
		if err != nil || g.Granted != 1 {
			step(false, "grants before the disk fills", "%s: granted %d, error %v", acc, g.Granted, err)
			return false
		}
		note(acc, 1)
	}
	step(true, "grants before the disk fills", "%d accounts granted one slot each", diskFullAccounts)

	// 2. The disk fills.
	detail, err := f.fill()
	if err != nil {
		step(false, "the disk fills", "%v", err)
		return false
	}
	step(true, "the disk fills", "%s", detail)

	// 3. Reserve refuses. Writes that still fit in space the store had
	// already taken may succeed first; from the first refusal on, every
	// attempt must be refused.
	var firstErr error
	fit := 0
	for i := 0; i < 200 && firstErr == nil; i++ {
		acc := diskFullAccount(i % diskFullAccounts)
		g, err := eng.Reserve(ctx, acc, 1)
		if err != nil {
			firstErr = err
			if g.Granted != 0 {
				step(false, "Reserve refuses while the disk is full", "%s: error %v, yet %d granted", acc, err, g.Granted)
			}
			break
		}
		note(acc, g.Granted)
		fit += g.Granted
	}
	if firstErr == nil {
		step(false, "Reserve refuses while the disk is full", "200 attempts after the disk filled, all granted: the writes cannot be durable")
		return false
	}
	attempts, refused, leaked := 1, 1, 0
	for round := range 3 {
		for i := range diskFullAccounts {
			acc := diskFullAccount((i + round) % diskFullAccounts)
			g, err := eng.Reserve(ctx, acc, 1+round)
			attempts++
			if err != nil && errors.Is(err, actors.ErrUnavailable) && g.Granted == 0 {
				refused++
				continue
			}
			note(acc, g.Granted)
			leaked += g.Granted
			step(false, "Reserve refuses while the disk is full", "%s: granted %d, error %v (want an error wrapping actors.ErrUnavailable)", acc, g.Granted, err)
		}
	}
	fitNote := ""
	if fit > 0 {
		fitNote = fmt.Sprintf("; %d grant(s) still fit in space the store held before refusals began", fit)
	}
	step(errors.Is(firstErr, actors.ErrUnavailable) && refused == attempts && leaked == 0, "Reserve refuses while the disk is full",
		"%d of %d attempts refused, %d slot(s) granted after the first refusal%s; ErrUnavailable: %v; ENOSPC in the error: %v; the error: %q",
		refused, attempts, leaked, fitNote, errors.Is(firstErr, actors.ErrUnavailable), errors.Is(firstErr, syscall.ENOSPC), firstErr.Error())

	// 4. Status keeps answering, resident accounts and one loaded now.
	statusOK := true
	var problems []string
	for i := range diskFullAccounts {
		acc := diskFullAccount(i)
		st, err := eng.Status(ctx, acc)
		if err != nil || st.Used != used[acc] {
			statusOK = false
			problems = append(problems, fmt.Sprintf("%s: used %d want %d, error %v", acc, st.Used, used[acc], err))
		}
	}
	if st, err := eng.Status(ctx, diskFullCold); err != nil || st.Used != 0 {
		statusOK = false
		problems = append(problems, fmt.Sprintf("%s: used %d want 0, error %v", diskFullCold, st.Used, err))
	}
	if statusOK {
		step(true, "Status answers while the disk is full", "%d accounts, counts unchanged by the refused attempts, and %s read from the store", diskFullAccounts, diskFullCold)
	} else {
		step(false, "Status answers while the disk is full", "%s", strings.Join(problems, "; "))
	}

	// 5. Space returns.
	detail, err = f.free()
	if err != nil {
		step(false, "space returns", "%v", err)
		return false
	}
	step(true, "space returns", "%s", detail)

	// 6. Grants resume.
	resumed := 0
	problems = nil
	for i := range diskFullAccounts {
		acc := diskFullAccount(i)
		g, err := eng.Reserve(ctx, acc, 1)
		if err != nil || g.Granted != 1 {
			problems = append(problems, fmt.Sprintf("%s: granted %d, error %v", acc, g.Granted, err))
			continue
		}
		note(acc, 1)
		resumed++
		if st, err := eng.Status(ctx, acc); err != nil || st.Used != used[acc] {
			problems = append(problems, fmt.Sprintf("%s: used %d want %d after the grant, error %v", acc, st.Used, used[acc], err))
		}
	}
	if len(problems) == 0 {
		step(true, "grants resume once space is back", "%d of %d accounts granted at the first attempt", resumed, diskFullAccounts)
	} else {
		step(false, "grants resume once space is back", "%s", strings.Join(problems, "; "))
	}
	return allOK
}

// diskFullReport is the output of pinbench soak --disk-full.
type diskFullReport struct {
	Command string   `json:"command"`
	Mode    string   `json:"mode"` // tmpfs or fault
	Why     string   `json:"why"`  // why this mode
	Steps   []dfStep `json:"steps"`
	Passed  bool     `json:"passed"`
}

// diskFullCommand is pinbench soak --disk-full.
func diskFullCommand(ctx context.Context, o *soakOptions, stdout, stderr io.Writer, log zerolog.Logger) error {
	log = quietExpected(log)
	rep := diskFullReport{Command: "soak --disk-full"}
	emit := func(s dfStep) {
		rep.Steps = append(rep.Steps, s)
		if !o.jsonOut {
			printStep(stdout, s)
		}
	}
	header := func() {
		if !o.jsonOut {
			fmt.Fprintf(stdout, "pinbench soak --disk-full: mode %s (%s)\n", rep.Mode, rep.Why)
		}
	}
	var err error
	switch o.diskFullMode {
	case diskFullFault:
		rep.Mode, rep.Why = diskFullFault, "asked for with --disk-full-mode fault"
		header()
		rep.Passed, err = diskFullFaultRun(ctx, emit, log)
	default:
		dir, mountErr := mountScratchTmpfs()
		if mountErr != nil {
			if o.diskFullMode == diskFullTmpfs {
				return fmt.Errorf("--disk-full-mode tmpfs: %w", mountErr)
			}
			rep.Mode, rep.Why = diskFullFault, fmt.Sprintf("no tmpfs: %v", mountErr)
			header()
			rep.Passed, err = diskFullFaultRun(ctx, emit, log)
			break
		}
		rep.Mode, rep.Why = diskFullTmpfs, fmt.Sprintf("a %d MiB tmpfs mounted at %s, filled by a file", tmpfsSize>>20, dir)
		header()
		rep.Passed, err = diskFullTmpfsRun(ctx, o, dir, emit, stderr, log)
		if uerr := unmountScratchTmpfs(dir); uerr != nil {
			err = errors.Join(err, uerr)
		}
	}
	if err != nil {
		return err
	}
	if o.jsonOut {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		verdict := "PASS"
		if !rep.Passed {
			verdict = "FAIL"
		}
		fmt.Fprintf(stdout, "result: %s (mode %s)\n", verdict, rep.Mode)
	}
	if !rep.Passed {
		return fmt.Errorf("soak --disk-full (mode %s): %w", rep.Mode, errViolation)
	}
	return nil
}

// quietExpected returns log for a run whose store writes are meant to
// fail: the engine logs each failed journal write as an error, which here
// is the expected outcome the steps report, so its logs are shown only
// from --log-level info down.
func quietExpected(log zerolog.Logger) zerolog.Logger {
	if log.GetLevel() >= zerolog.WarnLevel {
		return log.Level(zerolog.Disabled)
	}
	return log
}

func printStep(w io.Writer, s dfStep) {
	mark := "ok  "
	if !s.OK {
		mark = "FAIL"
	}
	fmt.Fprintf(w, "  %s %s: %s\n", mark, s.What, s.Detail)
}

// diskFullFaultRun runs the scenario in-process over a Badger store
// wrapped in a FaultStore.
func diskFullFaultRun(ctx context.Context, emit func(dfStep), log zerolog.Logger) (bool, error) {
	dir, err := os.MkdirTemp("", "pinbench-diskfull-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	store, err := enginestore.Open(dir, diskFullStoreOptions, log)
	if err != nil {
		return false, err
	}
	fs := persistencetest.NewFaultStore(store)
	eng, err := actors.New(engineConfig(actors.DefaultLimit, actors.DefaultWindow), fs, log)
	if err != nil {
		return false, errors.Join(err, store.Close())
	}
	ok := diskFullScenario(ctx, eng, faultFiller{fs}, emit, nil)
	return ok, errors.Join(eng.Close(context.Background()), store.Close())
}

// diskFullTmpfsRun runs the scenario in a child process over a store on
// the tmpfs at dir. The child exits 0 when every step passed, and
// exitViolation when a step failed (and was emitted). If it ends any other
// way (it crashes, or fails on its own: the store does not open, closing
// it fails), that is reported as a failed step, with what the child said,
// and the child's output goes to stderr; then it checks in-process, once
// space is back, that the store opens, every grant the child acknowledged
// is counted and grants resume.
func diskFullTmpfsRun(ctx context.Context, o *soakOptions, dir string, emit func(dfStep), stderr io.Writer, log zerolog.Logger) (bool, error) {
	db, filler := filepath.Join(dir, "db"), filepath.Join(dir, "filler")
	cmd := exec.CommandContext(ctx, o.exe, diskFullChildCommand, "--data-dir", db, "--filler", filler, "--log-level", o.logLevel)
	cmd.SysProcAttr = child.Attr()
	out := child.NewCapture(4<<10, 4<<10)
	cmd.Stderr = out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return false, err
	}
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("starting %s: %w", o.exe, err)
	}
	acked := map[string]int{}
	failedSteps := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 4)
		switch {
		case len(f) == 4 && f[0] == "STEP":
			s := dfStep{OK: f[1] == "ok", What: f[2], Detail: f[3]}
			if !s.OK {
				failedSteps++
			}
			emit(s)
		case len(f) == 3 && f[0] == "GRANT":
			var n int
			fmt.Sscan(f[2], &n)
			acked[f[1]] += n
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	var exit *exec.ExitError
	exited := errors.As(err, &exit)
	switch {
	case err == nil:
		return failedSteps == 0, nil
	case exited && exit.ExitCode() == exitViolation && failedSteps > 0:
		return false, nil // the failed steps were emitted
	}
	signaled := exited && exit.ExitCode() < 0
	if summary := crashSummary(out.Head()); signaled || summary != "" {
		if summary == "" {
			summary = "no Go crash report on its stderr"
		}
		emit(dfStep{OK: false, What: "the engine process survives the full disk", Detail: fmt.Sprintf(
			"it died (%v) instead of refusing grants: %s", err, summary)})
	} else {
		emit(dfStep{OK: false, What: "the engine process runs the scenario to its end", Detail: fmt.Sprintf(
			"it failed on its own (%v): %s", err, childError(out.String()))})
	}
	fmt.Fprintf(stderr, "pinbench: the disk-full engine process' output:\n%s\n", out.String())
	afterChildFailure(ctx, db, filler, acked, emit, log)
	return false, nil
}

// childError picks from a child pinbench's stderr the error it ended with:
// its last line starting with "pinbench: ", or else its last line.
func childError(output string) string {
	lines := strings.Split(strings.TrimSpace(output), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "pinbench: ") {
			return strings.TrimPrefix(l, "pinbench: ")
		}
	}
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return "nothing on its stderr"
}

// crashSummary picks from the start of a Go crash report what happened
// and the first frame of ours or of a dependency where it happened. It
// returns "" when head holds no crash report.
func crashSummary(head string) string {
	var keep, frames []string
	running := false
	for _, l := range strings.Split(head, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "fatal error") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "[signal"):
			keep = append(keep, l)
		case strings.HasPrefix(l, "goroutine ") && strings.HasSuffix(l, "[running]:"):
			running = frames == nil
		case l == "":
			running = false
		case running && len(frames) < 2 && strings.HasSuffix(l, ")") && !strings.HasPrefix(l, "runtime.") &&
			!strings.HasPrefix(l, "/") && !strings.Contains(l, "ristretto/v2/z."):
			frames = append(frames, l[:strings.LastIndex(l, "(")]) // without the arguments
		}
	}
	if len(frames) > 0 {
		keep = append(keep, "in "+strings.Join(frames, " called by "))
	}
	if len(keep) == 0 {
		return ""
	}
	return strings.Join(keep, "; ")
}

// afterChildFailure gives the space back and checks the store a disk-full
// child that crashed or failed left.
func afterChildFailure(ctx context.Context, db, filler string, acked map[string]int, emit func(dfStep), log zerolog.Logger) {
	if err := os.Remove(filler); err != nil && !errors.Is(err, os.ErrNotExist) {
		emit(dfStep{What: "space returns after the failure", Detail: err.Error()})
		return
	}
	store, err := enginestore.Open(db, diskFullStoreOptions, log)
	if err != nil {
		emit(dfStep{What: "the store opens after the failure", Detail: err.Error()})
		return
	}
	defer store.Close()
	eng, err := actors.New(engineConfig(actors.DefaultLimit, actors.DefaultWindow), store, log)
	if err != nil {
		emit(dfStep{What: "the engine starts after the failure", Detail: err.Error()})
		return
	}
	defer eng.Close(context.Background())
	var lost []string
	total := 0
	for acc, n := range acked {
		total += n
		if st, err := eng.Status(ctx, acc); err != nil || st.Used < n {
			lost = append(lost, fmt.Sprintf("%s: used %d, %d acknowledged, error %v", acc, st.Used, n, err))
		}
	}
	if len(lost) > 0 {
		emit(dfStep{What: "acknowledged grants survive the failure", Detail: strings.Join(lost, "; ")})
	} else {
		emit(dfStep{OK: true, What: "acknowledged grants survive the failure", Detail: fmt.Sprintf(
			"after restarting with space back, all %d acknowledged slots are counted", total)})
	}
	g, err := eng.Reserve(ctx, diskFullAccount(0), 1)
	emit(dfStep{OK: err == nil && g.Granted == 1, What: "grants resume after the restart",
		Detail: fmt.Sprintf("granted %d, error %v", g.Granted, err)})
}

// diskFullChild runs the disk-full scenario over a store on the tmpfs,
// printing each step and grant for the parent.
func diskFullChild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(diskFullChildCommand)
	dataDir := fs.String("data-dir", "", "")
	filler := fs.String("filler", "", "")
	logLevel := fs.String("log-level", "warn", "")
	if err := parseFlags(fs, diskFullChildCommand, args, stdout); err != nil {
		return err
	}
	if *dataDir == "" || *filler == "" {
		return usagef(diskFullChildCommand, "--data-dir and --filler are required")
	}
	log := quietExpected(newLogger(stderr, *logLevel).With().Str("process", "disk-full-child").Logger())
	store, err := enginestore.Open(*dataDir, diskFullStoreOptions, log)
	if err != nil {
		return err
	}
	eng, err := actors.New(engineConfig(actors.DefaultLimit, actors.DefaultWindow), store, log)
	if err != nil {
		return errors.Join(err, store.Close())
	}
	out := &lineWriter{w: stdout}
	emit := func(s dfStep) {
		mark := "ok"
		if !s.OK {
			mark = "FAIL"
		}
		out.printf("STEP\t%s\t%s\t%s\n", mark, s.What, strings.ReplaceAll(s.Detail, "\n", " "))
	}
	granted := func(acc string, n int) { out.printf("GRANT\t%s\t%d\n", acc, n) }
	ok := diskFullScenario(ctx, eng, fileFiller{path: *filler}, emit, granted)
	closeCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := errors.Join(eng.Close(closeCtx), store.Close()); err != nil {
		return err
	}
	if !ok {
		return errViolation
	}
	return nil
}
