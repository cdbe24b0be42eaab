package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/pinbot/pinbot/actors"
	"github.com/rs/zerolog"
)

// discordTokenEnv names the variable that will carry the Discord bot token.
const discordTokenEnv = "DISCORD_TOKEN"

// option describes a setting that a flag and an environment variable both
// set; the flag wins.
type option struct {
	flag string // flag name, without dashes
	env  string // environment variable
	arg  string // placeholder of the value in the help
	def  string // default value
	help string
}

// The options every command takes.
var (
	dataDirOption = option{
		flag: "data-dir", env: "PINBOT_DATA_DIR", arg: "DIR", def: "./data",
		help: "directory of the store",
	}
	logLevelOption = option{
		flag: "log-level", env: "PINBOT_LOG_LEVEL", arg: "LEVEL", def: "info",
		help: "least level logged: " + strings.Join(logLevels, ", "),
	}
)

// logLevels are the accepted values of --log-level.
var logLevels = []string{"trace", "debug", "info", "warn", "error", "disabled"}

// setting is the value of one option and where it came from.
type setting struct {
	opt   *option
	value string
	// from is the flag ("--data-dir") or environment variable that set
	// value, or "" when value is the default.
	from string
}

// name returns how error messages refer to the setting: by the flag or
// variable that set it, by its flag when it holds the default.
func (s *setting) name() string {
	if s.from == "" {
		return "--" + s.opt.flag
	}
	return s.from
}

// settings are the values every command shares, taken from the command
// line, else the environment, else the defaults.
type settings struct {
	dataDir  setting
	logLevel setting
}

// newSettings returns the defaults overridden by the environment.
func newSettings(getenv func(string) string) settings {
	st := settings{
		dataDir:  setting{opt: &dataDirOption},
		logLevel: setting{opt: &logLevelOption},
	}
	for _, s := range st.all() {
		s.value = s.opt.def
		if v := getenv(s.opt.env); v != "" {
			s.value, s.from = v, s.opt.env
		}
	}
	return st
}

func (st *settings) all() []*setting { return []*setting{&st.dataDir, &st.logLevel} }

// bind defines the settings' flags in fs, with the current values as
// defaults, so that a flag set earlier (before the command name) or by the
// environment holds unless given again.
func (st *settings) bind(fs *flag.FlagSet) {
	for _, s := range st.all() {
		fs.StringVar(&s.value, s.opt.flag, s.value, s.opt.help)
	}
}

// noteFlags records which settings the parsed fs set.
func (st *settings) noteFlags(fs *flag.FlagSet) {
	fs.Visit(func(f *flag.Flag) {
		for _, s := range st.all() {
			if f.Name == s.opt.flag {
				s.from = "--" + f.Name
			}
		}
	})
}

// validate checks the settings and returns the log level. Its errors name
// the flag or environment variable at fault.
func (st *settings) validate() (zerolog.Level, error) {
	if strings.TrimSpace(st.dataDir.value) == "" {
		return 0, fmt.Errorf("invalid %s %q: want a directory", st.dataDir.name(), st.dataDir.value)
	}
	if !slices.Contains(logLevels, st.logLevel.value) {
		return 0, fmt.Errorf("invalid %s %q: want one of %s",
			st.logLevel.name(), st.logLevel.value, strings.Join(logLevels, ", "))
	}
	level, err := zerolog.ParseLevel(st.logLevel.value)
	if err != nil {
		return 0, fmt.Errorf("invalid %s %q: %w", st.logLevel.name(), st.logLevel.value, err)
	}
	return level, nil
}

// jsonFlagHelp and jsonFlagFields describe the --json flag of the accounts
// command.
const (
	jsonFlagHelp   = "print a JSON array of objects instead of a table:"
	jsonFlagFields = "{account, used, pending, limit, next_free}"
)

// demoCommandsHelp lists the commands of the demo.
var demoCommandsHelp = fmt.Sprintf(`  pin ACCOUNT N                 make N pins (1 to %d) on ACCOUNT, as many as its limit allows
  status ACCOUNT [ACCOUNT...]   show the accounts' %s pin counts
  help                          list these commands
  quit                          stop; so do end of input, Ctrl-C and SIGTERM
`, actors.MaxBatch, windowAdjective(actors.DefaultWindow))

// printUsage writes the help of cmd ("" for pinbot itself) to w.
func printUsage(w io.Writer, cmd string) {
	var b strings.Builder
	if cmd == "accounts" {
		fmt.Fprintf(&b, `Usage:
  pinbot accounts [flags]

Lists every account stored in the data directory with its %[1]s pin count:
the pins still inside the window plus the reservations not yet resolved
(pending). The store admits one process at a time, so accounts fails while
pinbot runs on the same data directory.
`, windowAdjective(actors.DefaultWindow))
	} else {
		fmt.Fprintf(&b, `pinbot pins images from Discord to Pinterest, keeping every Pinterest account
within %[1]d pins in any rolling %[2]s.

This version has no Discord bot built in: without a command, pinbot runs an
interactive demo of the rate-limit engine on the store in its data directory.

Usage:
  pinbot [flags]                    run the engine demo, reading commands from stdin
  pinbot [flags] accounts [flags]   list the stored accounts and their %[3]s pin counts
  pinbot help [command]             show this help, or the help of a command
`, actors.DefaultLimit, windowNoun(actors.DefaultWindow), windowAdjective(actors.DefaultWindow))
	}

	b.WriteString("\nFlags (a flag wins over its environment variable):\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
	if cmd == "accounts" {
		fmt.Fprintf(tw, "  --json\t%s\n", jsonFlagHelp)
		fmt.Fprintf(tw, "  \t%s\n", jsonFlagFields)
	}
	for _, o := range []*option{&dataDirOption, &logLevelOption} {
		fmt.Fprintf(tw, "  --%s %s\t%s\n", o.flag, o.arg, o.help)
		fmt.Fprintf(tw, "  \tenv %s, default %q\n", o.env, o.def)
	}
	fmt.Fprintf(tw, "  -h, --help\tshow this help\n")
	tw.Flush() // writes to a strings.Builder, which cannot fail

	if cmd == "" {
		fmt.Fprintf(&b, `
Environment:
  %[1]s   token of the Discord bot; this version has none, so pinbot
                  without a command exits with status 2 when it is set
  NO_COLOR        when set, logs written to a terminal are not colored

Demo commands, one per line:
%[2]s
Exit status: 0 on success, 1 on failure, 2 on a usage error or when
%[1]s is set.
`, discordTokenEnv, demoCommandsHelp)
	}
	io.WriteString(w, b.String())
}
