package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // something failed at run time
	exitUsage   = 2 // bad command line, environment or key file
)

// usageError is a mistake in the command line or the environment. cmd is
// the command whose help explains it ("" for pinbot itself).
type usageError struct {
	cmd string
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// run runs pinbot with the command-line arguments args (without the program
// name) and the environment getenv, and returns the exit status. Replies,
// listings, the console and the help asked for go to stdout; errors and
// logs go to stderr (the sandbox's logs to its log file).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	err := dispatch(args, stdin, stdout, stderr, getenv)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintf(stderr, "pinbot: %v\n", err)
	var ue *usageError
	var ke *keyError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", commandPath(ue.cmd))
		return exitUsage
	case errors.As(err, &ke):
		return exitUsage
	}
	return exitFailure
}

// dispatch parses pinbot's own flags, then runs the command that follows
// them, or, when none does, the bot (DISCORD_TOKEN set) or the sandbox.
func dispatch(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	st := newSettings(getenv)
	fs := mainFlags(&st)
	if err := parseFlags(fs, "", args, stdout); err != nil {
		return err
	}
	st.noteFlags(fs)

	rest := fs.Args()
	if len(rest) == 0 {
		if st.botMode() {
			return botCommand(st, stderr, getenv)
		}
		return sandboxCommand(st, stdin, stdout, stderr, getenv)
	}
	switch cmd, rest := rest[0], rest[1:]; cmd {
	case "accounts":
		return accountsCommand(st, rest, stdout, stderr, getenv)
	case "jobs":
		return jobsCommand(st, rest, stdout, stderr, getenv)
	case "demo":
		return demoCommand(st, rest, stdin, stdout, stderr, getenv)
	case "backup":
		return backupCommand(st, rest, stdout, stderr, getenv)
	case "restore":
		return restoreCommand(st, rest, stdout, stderr, getenv)
	case "reconcile":
		return reconcileCommand(st, rest, stdout, stderr, getenv)
	case "cluster":
		return clusterCommand(st, rest, stdout)
	case "invite":
		return inviteCommand(st, rest, stdout)
	case "help":
		return helpCommand(rest, stdout)
	default:
		return &usageError{err: fmt.Errorf("unknown command %q", cmd)}
	}
}

// signalContext returns a context that ends at the first SIGINT or
// SIGTERM; once it has, the signals' default action is restored, so that
// a second one kills the process.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	return ctx, stop
}

// botCommand runs the Discord bot. It checks the whole configuration, key
// file included, before it opens or logs anything, and reports every
// problem found at once.
func botCommand(st settings, stderr io.Writer, getenv func(string) string) error {
	var errs configErrors
	level := st.checkCommon(&errs)
	engine := st.checkEngine(&errs)
	st.checkParkAfter(&errs, &engine)
	cfg := st.checkBot(&errs)
	st.checkMemory(&errs)
	cfg.engine = engine
	var key []byte
	if strings.TrimSpace(st.keyFile.value) != "" {
		var err error
		key, err = readKeyFile(&st.keyFile)
		errs.add(err)
	}
	if st.adminTokenFile.value != "" {
		var err error
		cfg.adminToken, err = readAdminToken(&st.adminTokenFile)
		errs.add(err)
	}
	if err := errs.err(); err != nil {
		var ke *keyError
		if len(errs) == 1 && errors.As(err, &ke) {
			return err // no usage to show for a key file alone
		}
		return &usageError{err: err}
	}
	log := newLogger(stderr, level, getenv, cfg.secrets()...)
	tune, err := st.tuneCollector(getenv)
	if err != nil {
		return &usageError{err: err}
	}
	log.Info().Int("gogc", tune.GCPercent).Str("gogc_from", tune.GCPercentFrom).
		Int64("memory_limit", tune.MemoryLimit).Str("memory_limit_from", tune.MemoryLimitFrom).Msg("collector settings")
	ctx, stop := signalContext()
	defer stop()
	return runBot(ctx, cfg, key, layout{dir: st.dataDir.value}, log)
}

// sandboxCommand runs the local sandbox with its console on stdin and
// stdout, and says goodbye there once it stopped cleanly.
func sandboxCommand(st settings, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	level, engine, err := st.validateEngine()
	var errs configErrors
	errs.add(err)
	st.checkParkAfter(&errs, &engine)
	st.checkMemory(&errs)
	httpAddr := st.sandboxHTTPAddr(&errs)
	if err := errs.err(); err != nil {
		return &usageError{err: err}
	}
	if _, err := st.tuneCollector(getenv); err != nil {
		return &usageError{err: err}
	}
	ctx, stop := signalContext()
	defer stop()
	err = runSandbox(ctx, sandboxConfig{
		dir:          layout{dir: st.dataDir.value},
		level:        level,
		engine:       engine,
		in:           stdin,
		out:          stdout,
		stderr:       stderr,
		prompt:       isTerminal(stdin),
		httpAddr:     httpAddr,
		httpAddrName: st.httpAddr.name(),
		ignored:      st.ignoredInSandbox(),
	})
	if err == nil {
		fmt.Fprintf(stdout, "pinbot: sandbox stopped; its pin counts and links stay in %s. Bye!\n", st.dataDir.value)
	}
	return err
}

// demoCommand runs the engine demo. SIGINT and SIGTERM stop the demo
// gracefully; a second one, once shutdown has begun, kills the process.
func demoCommand(st settings, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	flags := newFlagSet("demo")
	st.bind(flags, "demo")
	if err := parseFlags(flags, "demo", args, stdout); err != nil {
		return err
	}
	st.noteFlags(flags)
	if flags.NArg() > 0 {
		return &usageError{cmd: "demo", err: fmt.Errorf("demo: unexpected argument %q", flags.Arg(0))}
	}
	level, engine, err := st.validateEngine()
	if err != nil {
		return &usageError{cmd: "demo", err: err}
	}
	log := newLogger(stderr, level, getenv)
	ctx, stop := signalContext()
	defer stop()
	return runDemo(ctx, demoConfig{
		dataDir: st.dataDir.value,
		engine:  engine,
		in:      stdin,
		out:     stdout,
		prompt:  isTerminal(stdin),
		log:     log,
	})
}

// helpCommand prints the help of pinbot, or of the command named in args.
func helpCommand(args []string, stdout io.Writer) error {
	switch {
	case len(args) == 0:
		printUsage(stdout, "")
	case len(args) > 1:
		return &usageError{err: fmt.Errorf("help: want at most one command, got %d", len(args))}
	case args[0] == "accounts", args[0] == "jobs", args[0] == "demo", args[0] == "backup", args[0] == "restore",
		args[0] == "reconcile", args[0] == "cluster", args[0] == "invite":
		printUsage(stdout, args[0])
	default:
		return &usageError{err: fmt.Errorf("help: unknown command %q", args[0])}
	}
	return nil
}

// mainFlags returns the flag set of pinbot itself, bound to st.
func mainFlags(st *settings) *flag.FlagSet {
	fs := newFlagSet("")
	st.bind(fs, "")
	return fs
}

// newFlagSet returns an empty flag set for cmd ("" for pinbot itself) that
// prints nothing: parseFlags reports its errors.
func newFlagSet(cmd string) *flag.FlagSet {
	fs := flag.NewFlagSet(commandPath(cmd), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs. It prints cmd's help to stdout and
// returns flag.ErrHelp for -h and --help, and returns a usageError for a
// bad flag.
func parseFlags(fs *flag.FlagSet, cmd string, args []string, stdout io.Writer) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		printUsage(stdout, cmd)
		return err
	default:
		return &usageError{cmd: cmd, err: err}
	}
}

// commandPath returns how the user invokes cmd: "pinbot" or "pinbot cmd".
func commandPath(cmd string) string {
	if cmd == "" {
		return "pinbot"
	}
	return "pinbot " + cmd
}
