package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/internal/backup"
	"github.com/pinbot/pinbot/internal/control"
)

// accountsLogLevel is the least level accounts logs at when neither
// --log-level nor PINBOT_LOG_LEVEL is given: warnings and errors only.
const accountsLogLevel = zerolog.WarnLevel

// accountsCommand lists the stored accounts with their pin counts, as a
// table or as JSON, with their usernames when the token store can be
// read: through the bot or sandbox running on the data directory when
// one answers on its control socket, else from the stores themselves,
// the same way. It fails when an account's state cannot be read, after
// listing the others.
func accountsCommand(st settings, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	flags, asJSON := accountsFlags(&st)
	if err := parseFlags(flags, "accounts", args, stdout); err != nil {
		return err
	}
	st.noteFlags(flags)
	if flags.NArg() > 0 {
		return &usageError{cmd: "accounts", err: fmt.Errorf("accounts: unexpected argument %q", flags.Arg(0))}
	}
	log, err := listingLogger(st, "accounts", stderr, getenv)
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	return runAccounts(ctx, listingConfig{dir: layout{dir: st.dataDir.value}, keyFile: &st.keyFile, json: *asJSON,
		out: stdout, notes: stderr, log: log})
}

// listingLogger checks the settings of a listing command and returns its
// logger: warnings and errors only, unless logs are asked for (the
// engine's start and stop are no news here).
func listingLogger(st settings, cmd string, stderr io.Writer, getenv func(string) string) (zerolog.Logger, error) {
	level, err := st.validate()
	if err != nil {
		return zerolog.Nop(), &usageError{cmd: cmd, err: err}
	}
	if st.logLevel.from == "" {
		level = accountsLogLevel
	}
	return newLogger(stderr, level, getenv), nil
}

// accountsFlags returns the flag set of the accounts command, bound to st,
// and its --json flag.
func accountsFlags(st *settings) (*flag.FlagSet, *bool) {
	flags := newFlagSet("accounts")
	asJSON := flags.Bool("json", false, jsonFlagHelp+" "+jsonFlagFields)
	st.bind(flags, "accounts")
	return flags, asJSON
}

// listingConfig is what runAccounts and runJobs need.
type listingConfig struct {
	dir layout
	// keyFile is the token store's key setting, used when no pinbot runs
	// on the data directory (else DIR/sandbox.key, when it exists).
	keyFile *setting
	// clock, when not nil, is the engine's clock when no pinbot runs.
	clock actors.Clock
	json  bool
	out   io.Writer // the listing
	notes io.Writer // what could not be shown, and why
	log   zerolog.Logger
}

// runAccounts writes the listing of the accounts to cfg.out.
func runAccounts(ctx context.Context, cfg listingConfig) error {
	list, err := readAccounts(ctx, cfg)
	if err != nil {
		return err
	}
	if list.NoNames != "" {
		fmt.Fprintf(cfg.notes, "pinbot: usernames not shown: %s\n", list.NoNames)
	}
	if cfg.json {
		err = writeAccountsJSON(cfg.out, list.Accounts)
	} else {
		err = writeAccountsTable(cfg.out, cfg.dir.dir, list)
	}
	if err != nil {
		return fmt.Errorf("writing the list: %w", err)
	}
	var failed int
	for _, a := range list.Accounts {
		if a.Error != "" {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("the state of %d of %d accounts could not be read", failed, len(list.Accounts))
	}
	return nil
}

// readAccounts asks the pinbot running on the data directory for the
// listing of its accounts, or, when none answers on its control socket,
// reads it from the stores.
func readAccounts(ctx context.Context, cfg listingConfig) (control.Accounts, error) {
	list, err := control.FetchAccounts(ctx, cfg.dir.control())
	if !errors.Is(err, backup.ErrNotServing) {
		return list, err
	}
	cfg.log.Debug().Err(err).Msg("no pinbot serves the data directory: reading its stores")
	err = withListing(cfg.dir, cfg.keyFile, cfg.clock, cfg.log, func(src control.Source) (err error) {
		list, err = control.ReadAccounts(ctx, src)
		return err
	})
	if errors.Is(err, errNoEngineStore) {
		return control.Accounts{}, nil
	}
	return list, err
}

// accountJSON is one element of the JSON listing.
type accountJSON struct {
	Account string `json:"account"`
	// Username is the account's Pinterest username and LinkedBy the
	// Discord users who link it, when the token store could be read.
	Username string   `json:"username,omitempty"`
	LinkedBy []string `json:"linked_by,omitempty"`
	// Used counts the pins inside the window plus the pending reservations.
	Used    int `json:"used"`
	Pending int `json:"pending"`
	Limit   int `json:"limit"`
	// Blocked is how many of the slots the limit leaves free an earlier
	// rule still refuses; Free how many /pin may take now (none while
	// Pinterest asked to wait); Queued how many queued pins wait.
	Blocked int `json:"blocked"`
	Free    int `json:"free"`
	Queued  int `json:"queued"`
	// NextFree is when the next slot frees (the listing's time when one is
	// free now); null when the account could not be read.
	NextFree *time.Time `json:"next_free"`
	// Error, set only when the account could not be read, says why.
	Error string `json:"error,omitempty"`
}

// writeAccountsJSON writes accounts as an indented JSON array.
func writeAccountsJSON(w io.Writer, accounts []control.Account) error {
	list := make([]accountJSON, len(accounts))
	for i, a := range accounts {
		list[i] = accountJSON{Account: a.ID, Username: a.Username, LinkedBy: a.LinkedBy}
		if a.Error != "" {
			list[i].Error = a.Error
			continue
		}
		next := a.NextFree.UTC()
		list[i].Used, list[i].Pending, list[i].Limit = a.Used, a.Pending, a.Limit
		list[i].Blocked, list[i].Free, list[i].Queued = a.Blocked, a.Free, a.Queued
		list[i].NextFree = &next
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(list)
}

// writeAccountsTable writes the listing as a table, or says that dir
// holds no account. A USERNAME column follows ACCOUNT when some username
// is known. When an earlier rule refuses slots, the rules in force
// follow the table.
func writeAccountsTable(w io.Writer, dir string, list control.Accounts) error {
	if len(list.Accounts) == 0 {
		_, err := fmt.Fprintf(w, "No accounts stored in %s.\n", dir)
		return err
	}
	named := slices.ContainsFunc(list.Accounts, func(a control.Account) bool { return a.Username != "" })
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	head := "ACCOUNT\t"
	if named {
		head += "USERNAME\t"
	}
	fmt.Fprintf(tw, "%s%s PINS\tPENDING\tFREE\tQUEUED\tNEXT SLOT FREE\n", head, strings.ToUpper(windowAdjective(list.Rule.Window)))
	blocked := false
	for _, a := range list.Accounts {
		name := displayAccount(a.ID) + "\t"
		if named {
			name += usernameCell(a.Username) + "\t"
		}
		if a.Error != "" {
			fmt.Fprintf(tw, "%s-\t-\t-\t-\terror: %s\n", name, a.Error)
			continue
		}
		blocked = blocked || a.Blocked > 0
		fmt.Fprintf(tw, "%s%d/%d\t%d\t%s\t%d\t%s\n", name, a.Used, a.Limit, a.Pending, freeText(a), a.Queued, whenFree(a.NextFree, a.At))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if blocked {
		return writeEarlierRules(w, list.Earlier, list.At)
	}
	return nil
}

// usernameCell shows a Pinterest username, "-" when unknown.
func usernameCell(name string) string {
	if name == "" {
		return "-"
	}
	return "@" + displayAccount(name)
}
