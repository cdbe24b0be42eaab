package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/pinbot/pinbot/internal/gctune"
)

// Exit statuses.
const (
	exitOK          = 0
	exitFailure     = 1 // a run failed, or a soak could not run
	exitUsage       = 2 // bad command line
	exitViolation   = 3 // a soak ran and found a violation
	exitInterrupted = 130
)

// usageError is a mistake on the command line. cmd is the command whose
// help explains it ("" for pinbench itself).
type usageError struct {
	cmd string
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usageError of cmd.
func usagef(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, err: fmt.Errorf(format, args...)}
}

// errViolation is returned when a soak found a broken invariant; the
// details were printed already.
var errViolation = errors.New("invariant violated")

func main() {
	// The collector runs as in pinbot (internal/gctune), so that pinbot's
	// figures are the product's.
	tune, err := gctune.Apply(gctune.ProcessEnv(), "PINBOT_MEMORY_LIMIT", os.Getenv("PINBOT_MEMORY_LIMIT"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "pinbench: %v\n", err)
		os.Exit(exitUsage)
	}
	fmt.Fprintf(os.Stderr, "pinbench: GOGC %d (%s), memory limit %d bytes (%s)\n",
		tune.GCPercent, tune.GCPercentFrom, tune.MemoryLimit, tune.MemoryLimitFrom)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs pinbench with the command-line arguments args (without the
// program name) and returns the exit status. Results go to stdout; errors,
// progress and logs go to stderr. ctx ending (an interrupt) stops the run,
// after stopping whatever it started.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// Progress lines, logs and results come from several goroutines.
	stdout, stderr = &lockedWriter{w: stdout}, &lockedWriter{w: stderr}
	err := dispatch(ctx, args, stdout, stderr)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		fmt.Fprintln(stderr, "pinbench: interrupted; everything it started is stopped")
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "pinbench: %v\n", err)
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", commandPath(ue.cmd))
		return exitUsage
	case errors.Is(err, errViolation):
		return exitViolation
	}
	return exitFailure
}

// dispatch runs the command named by args[0].
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printUsage(stdout, "")
		return usagef("", "no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return runCommand(ctx, rest, stdout, stderr)
	case "compare":
		return compareCommand(ctx, rest, stdout, stderr)
	case "soak":
		return soakCommand(ctx, rest, stdout, stderr)
	case soakChildCommand:
		return soakChild(ctx, rest, stdout, stderr)
	case diskFullChildCommand:
		return diskFullChild(ctx, rest, stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 {
			if _, ok := usages[rest[0]]; !ok {
				return usagef("", "help: unknown command %q", rest[0])
			}
			printUsage(stdout, rest[0])
			return nil
		}
		printUsage(stdout, "")
		return nil
	}
	return usagef("", "unknown command %q", cmd)
}

// newFlagSet returns an empty flag set for cmd that prints nothing:
// parseFlags reports its errors.
func newFlagSet(cmd string) *flag.FlagSet {
	fs := flag.NewFlagSet(commandPath(cmd), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs. It prints cmd's help to stdout and
// returns flag.ErrHelp for -h and --help, and a usageError for a bad flag
// or a stray argument.
func parseFlags(fs *flag.FlagSet, cmd string, args []string, stdout io.Writer) error {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printUsage(stdout, cmd)
		return err
	case err != nil:
		return &usageError{cmd: cmd, err: err}
	case fs.NArg() > 0:
		return usagef(cmd, "unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// lockedWriter serializes the writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// commandPath returns how the user invokes cmd.
func commandPath(cmd string) string {
	if cmd == "" {
		return "pinbench"
	}
	return "pinbench " + cmd
}
