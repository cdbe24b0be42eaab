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

	"github.com/pinbot/pinbot/actors"
	"github.com/rs/zerolog"
)

// statusChunk is how many accounts one StatusMany call asks about.
const statusChunk = 256

// accountsCommand lists the stored accounts with their pin counts, as a
// table or as JSON. It fails when an account's state cannot be read, after
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
	level, err := st.validate()
	if err != nil {
		return &usageError{cmd: "accounts", err: err}
	}
	log := newLogger(stderr, level, getenv)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir := st.dataDir.value
	entries, err := listAccounts(ctx, dir, log)
	if err != nil {
		return err
	}
	if *asJSON {
		err = writeAccountsJSON(stdout, entries)
	} else {
		err = writeAccountsTable(stdout, dir, entries)
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
	st.bind(flags)
	return flags, asJSON
}

// accountEntry is one listed account: its status, or the error that
// prevented reading it (then only status.Account is set).
type accountEntry struct {
	status actors.Status
	err    error
}

// listAccounts returns every account stored in dir, in key order, with its
// status, read through an engine that replays nothing on its own. dir must
// exist: listing a mistyped directory must not create an empty store.
func listAccounts(ctx context.Context, dir string, log zerolog.Logger) (entries []accountEntry, err error) {
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("data directory %s does not exist", dir)
	case err != nil:
		return nil, fmt.Errorf("data directory: %w", err)
	case !fi.IsDir():
		return nil, fmt.Errorf("data directory %s is not a directory", dir)
	}
	store, err := openStore(dir, log)
	if err != nil {
		return nil, err
	}
	cfg := actors.DefaultConfig()
	cfg.Recover = false
	eng, err := actors.New(cfg, store, log)
	if err != nil {
		if cerr := store.Close(); cerr != nil {
			log.Error().Err(cerr).Msg("closing the store after a failed start")
		}
		return nil, fmt.Errorf("starting the engine: %w", err)
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
		return nil, fmt.Errorf("listing the stored accounts: %w", err)
	}
	entries = make([]accountEntry, 0, len(names))
	for chunk := range slices.Chunk(names, statusChunk) {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("listing the stored accounts: %w", err)
		}
		entries = append(entries, statusChunkOf(ctx, eng, chunk)...)
	}
	return entries, nil
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
		list[i] = accountJSON{Account: e.status.Account}
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

// writeAccountsTable writes entries as a table, or says that dir holds no
// account.
func writeAccountsTable(w io.Writer, dir string, entries []accountEntry) error {
	if len(entries) == 0 {
		_, err := fmt.Fprintf(w, "No accounts stored in %s.\n", dir)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintf(tw, "ACCOUNT\t%s PINS\tPENDING\tNEXT SLOT FREE\n", strings.ToUpper(windowAdjective(actors.DefaultWindow)))
	for _, e := range entries {
		st := e.status
		if e.err != nil {
			fmt.Fprintf(tw, "%s\t-\t-\terror: %v\n", displayAccount(st.Account), e.err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%d\t%s\n",
			displayAccount(st.Account), st.Used, st.Limit, st.Pending, whenFree(st.NextFree, st.At))
	}
	return tw.Flush()
}
