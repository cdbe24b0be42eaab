package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // something failed at run time
	exitUsage   = 2 // bad command line or environment, or DISCORD_TOKEN set
)

// errDiscordBot is returned when DISCORD_TOKEN asks for the Discord bot,
// which this version does not have.
var errDiscordBot = errors.New("DISCORD_TOKEN is set, but the Discord bot is not built into this version of pinbot; " +
	"unset DISCORD_TOKEN to run the engine demo")

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
// listings and the help asked for go to stdout; errors and logs go to
// stderr.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	err := dispatch(args, stdin, stdout, stderr, getenv)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintf(stderr, "pinbot: %v\n", err)
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", commandPath(ue.cmd))
		return exitUsage
	case errors.Is(err, errDiscordBot):
		return exitUsage
	}
	return exitFailure
}

// dispatch parses pinbot's own flags, then runs the command that follows
// them, or the demo when none does.
func dispatch(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	st := newSettings(getenv)
	fs := mainFlags(&st)
	if err := parseFlags(fs, "", args, stdout); err != nil {
		return err
	}
	st.noteFlags(fs)

	rest := fs.Args()
	if len(rest) == 0 {
		return demoCommand(st, stdin, stdout, stderr, getenv)
	}
	switch cmd, rest := rest[0], rest[1:]; cmd {
	case "accounts":
		return accountsCommand(st, rest, stdout, stderr, getenv)
	case "help":
		return helpCommand(rest, stdout)
	default:
		return &usageError{err: fmt.Errorf("unknown command %q", cmd)}
	}
}

// demoCommand runs the engine demo, or refuses to when DISCORD_TOKEN asks
// for the Discord bot. SIGINT and SIGTERM stop the demo gracefully; a
// second one, once shutdown has begun, kills the process.
func demoCommand(st settings, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	level, err := st.validate()
	if err != nil {
		return &usageError{err: err}
	}
	if getenv(discordTokenEnv) != "" {
		return errDiscordBot
	}
	log := newLogger(stderr, level, getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	return runDemo(ctx, demoConfig{
		dataDir: st.dataDir.value,
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
	case args[0] == "accounts":
		printUsage(stdout, "accounts")
	default:
		return &usageError{err: fmt.Errorf("help: unknown command %q", args[0])}
	}
	return nil
}

// mainFlags returns the flag set of pinbot itself, bound to st.
func mainFlags(st *settings) *flag.FlagSet {
	fs := newFlagSet("")
	st.bind(fs)
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
