package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/persistence"
)

// statusChunk is how many accounts one StatusMany call asks about.
const statusChunk = 256

// accountsLogLevel is the least level accounts logs at when neither
// --log-level nor PINBOT_LOG_LEVEL is given: warnings and errors only.
const accountsLogLevel = zerolog.WarnLevel

// accountsCommand lists the stored accounts with their pin counts, as a
// table or as JSON, with their usernames when the token store can be
// read. It fails when an account's state cannot be read, after listing the
// others.
func accountsCommand(st settings, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	flags, asJSON := accountsFlags(&st)
	if err := parseFlags(flags, "accounts", args, stdout); err != nil {
		return err
	}
	st.noteFlags(flags)
	if flags.NArg() > 0 {
		return &usageError{cmd: "accounts", err: fmt.Errorf("accounts: unexpected argument %q", flags.Arg(0))}
	}
	level, err := st.validate()
	if err != nil {
		return &usageError{cmd: "accounts", err: err}
	}
	if st.logLevel.from == "" {
		// Only the listing, unless logs are asked for: the engine's
		// start and stop are no news here.
		level = accountsLogLevel
	}
	log := newLogger(stderr, level, getenv)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir := st.dataDir.value
	entries, window, err := listAccounts(ctx, dir, log)
	if err != nil {
		return err
	}
	addUsernames(ctx, entries, layout{dir: dir}, &st.keyFile, stderr, log)
	if *asJSON {
		err = writeAccountsJSON(stdout, entries)
	} else {
		err = writeAccountsTable(stdout, dir, entries, window)
	}
	if err != nil {
		return fmt.Errorf("writing the list: %w", err)
	}
	var failed int
	for _, e := range entries {
		if e.err != nil {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("the state of %d of %d accounts could not be read", failed, len(entries))
	}
	return nil
}

// accountsFlags returns the flag set of the accounts command, bound to st,
// and its --json flag.
func accountsFlags(st *settings) (*flag.FlagSet, *bool) {
	flags := newFlagSet("accounts")
	asJSON := flags.Bool("json", false, jsonFlagHelp+" "+jsonFlagFields)
	st.bind(flags, "accounts")
	return flags, asJSON
}

// accountEntry is one listed account: its status, or the error that
// prevented reading it (then only status.Account is set), and its
// Pinterest username when known.
type accountEntry struct {
	status   actors.Status
	err      error
	username string
}

// listAccounts returns every account stored in the engine store of the
// data directory dir, in key order, with its status, read through an
// engine that replays nothing on its own, and the window the counts are
// for. dir must exist: listing a mistyped directory must not create an
// empty store; a data directory without an engine store holds no account.
//
// The engine runs under the limit and window the store was last run under
// (see storedRule): the settings of the bot are not those of this
// command, and a listing must not count as a change of the rule.
func listAccounts(ctx context.Context, dir string, log zerolog.Logger) (entries []accountEntry, window time.Duration, err error) {
	window = actors.DefaultWindow
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return nil, window, fmt.Errorf("data directory %s does not exist", dir)
	case err != nil:
		return nil, window, fmt.Errorf("data directory: %w", err)
	case !fi.IsDir():
		return nil, window, fmt.Errorf("data directory %s is not a directory", dir)
	}
	l := layout{dir: dir}
	if err := l.checkLayout(); err != nil {
		return nil, window, err
	}
	if _, err := os.Stat(l.engine()); errors.Is(err, fs.ErrNotExist) {
		return nil, window, nil
	}
	store, err := openStore(l.engine(), log)
	if err != nil {
		return nil, window, err
	}
	cfg := actors.DefaultConfig()
	cfg.Recover = false
	storedRule(store, &cfg)
	window = cfg.Window
	eng, err := actors.New(cfg, store, log)
	if err != nil {
		if cerr := store.Close(); cerr != nil {
			log.Error().Err(cerr).Msg("closing the store after a failed start")
		}
		return nil, window, fmt.Errorf("starting the engine: %w", err)
	}
	defer func() {
		if cerr := shutdown(eng, store); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()

	var names []string
	if err := store.Accounts(func(account string) error {
		names = append(names, account)
		return nil
	}); err != nil {
		return nil, window, fmt.Errorf("listing the stored accounts: %w", err)
	}
	entries = make([]accountEntry, 0, len(names))
	for chunk := range slices.Chunk(names, statusChunk) {
		if err := ctx.Err(); err != nil {
			return nil, window, fmt.Errorf("listing the stored accounts: %w", err)
		}
		entries = append(entries, statusChunkOf(ctx, eng, chunk)...)
	}
	return entries, window, nil
}

// storedRule sets cfg's limit, window and lease to those the store was
// last run under, when it keeps them; an unreadable value is left for
// actors.New to report.
func storedRule(store persistence.RuleKeeper, cfg *actors.Config) {
	r, err := store.Rules()
	if err != nil || r.Current.Limit == 0 {
		return
	}
	cfg.Limit = r.Current.Limit
	cfg.Window = time.Duration(r.Current.Window) * time.Millisecond
	if r.Lease > 0 {
		cfg.Lease = time.Duration(r.Lease) * time.Millisecond
	}
}

// statusChunkOf returns the status of each of accounts, asking for all at
// once, then again one by one for those that failed, to learn each error.
func statusChunkOf(ctx context.Context, eng *actors.Engine, accounts []string) []accountEntry {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	sts, err := eng.StatusMany(ctx, accounts)
	out := make([]accountEntry, len(sts))
	for i, st := range sts {
		out[i].status = st
		if err != nil && st.Limit == 0 { // only Account is set when it failed
			_, out[i].err = eng.Status(ctx, st.Account)
			if out[i].err == nil {
				out[i].err = errors.New("status unavailable")
			}
		}
	}
	return out
}

// accountJSON is one element of the JSON listing.
type accountJSON struct {
	Account string `json:"account"`
	// Username is the account's Pinterest username, when the token store
	// could be read.
	Username string `json:"username,omitempty"`
	// Used counts the pins inside the window plus the pending reservations.
	Used    int `json:"used"`
	Pending int `json:"pending"`
	Limit   int `json:"limit"`
	// NextFree is when the next slot frees (the listing's time when one is
	// free now); null when the account could not be read.
	NextFree *time.Time `json:"next_free"`
	// Error, set only when the account could not be read, says why.
	Error string `json:"error,omitempty"`
}

// writeAccountsJSON writes entries as an indented JSON array.
func writeAccountsJSON(w io.Writer, entries []accountEntry) error {
	list := make([]accountJSON, len(entries))
	for i, e := range entries {
		list[i] = accountJSON{Account: e.status.Account, Username: e.username}
		if e.err != nil {
			list[i].Error = e.err.Error()
			continue
		}
		next := e.status.NextFree.UTC()
		list[i].Used, list[i].Pending, list[i].Limit = e.status.Used, e.status.Pending, e.status.Limit
		list[i].NextFree = &next
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(list)
}

// writeAccountsTable writes entries, counted in windows of the given
// length, as a table, or says that dir holds no account. A USERNAME
// column follows ACCOUNT when some username is known.
func writeAccountsTable(w io.Writer, dir string, entries []accountEntry, window time.Duration) error {
	if len(entries) == 0 {
		_, err := fmt.Fprintf(w, "No accounts stored in %s.\n", dir)
		return err
	}
	named := slices.ContainsFunc(entries, func(e accountEntry) bool { return e.username != "" })
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	head := "ACCOUNT\t"
	if named {
		head += "USERNAME\t"
	}
	fmt.Fprintf(tw, "%s%s PINS\tPENDING\tNEXT SLOT FREE\n", head, strings.ToUpper(windowAdjective(window)))
	for _, e := range entries {
		st := e.status
		name := displayAccount(st.Account) + "\t"
		if named {
			user := "-"
			if e.username != "" {
				user = "@" + displayAccount(e.username)
			}
			name += user + "\t"
		}
		if e.err != nil {
			fmt.Fprintf(tw, "%s-\t-\terror: %v\n", name, e.err)
			continue
		}
		fmt.Fprintf(tw, "%s%d/%d\t%d\t%s\n", name, st.Used, st.Limit, st.Pending, whenFree(st.NextFree, st.At))
	}
	return tw.Flush()
}

// addUsernames fills in the entries' Pinterest usernames from the token
// store of the data directory, opened with the key the setting names, or
// else with the sandbox's key when there is one. Without a token store
// the entries keep their ids alone. Without a key, or when the store
// cannot be opened or read, they do too, and a line on notes says why.
func addUsernames(ctx context.Context, entries []accountEntry, dir layout, keyFile *setting, notes io.Writer, log zerolog.Logger) {
	note := func(format string, args ...any) {
		fmt.Fprintf(notes, "pinbot: usernames not shown: "+format+"\n", args...)
	}
	if len(entries) == 0 {
		return
	}
	if _, err := os.Stat(dir.links()); err != nil {
		log.Debug().Err(err).Msg("no token store: listing account ids only")
		return
	}
	var key []byte
	var err error
	switch {
	case keyFile.value != "":
		key, err = readKeyFile(keyFile)
	default:
		sk := setting{opt: &keyFileOption, value: dir.sandboxKey(), from: "the sandbox's key"}
		if _, serr := os.Stat(sk.value); serr != nil {
			note("no key for the token store (set %s)", keyFileOption.env)
			return
		}
		key, err = readKeyFile(&sk)
	}
	if err != nil {
		note("%v", err)
		return
	}
	st, err := links.Open(dir.links(), links.Options{EncryptionKey: key}, log)
	if err != nil {
		note("the token store cannot be opened: %v", err)
		return
	}
	defer func() {
		if err := st.Close(); err != nil {
			log.Warn().Err(err).Msg("closing the token store")
		}
	}()
	names := map[string]string{}
	if err := st.AllAccounts(ctx, func(a links.Account) error {
		names[a.ID] = a.Username
		return nil
	}); err != nil {
		note("reading the token store failed: %v", err)
		return
	}
	for i := range entries {
		entries[i].username = names[entries[i].status.Account]
	}
}
