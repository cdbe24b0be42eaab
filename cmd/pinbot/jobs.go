package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pinbot/pinbot/internal/backup"
	"github.com/pinbot/pinbot/internal/control"
)

// jobsJSONHelp and jobsJSONFields describe the --json flag of the jobs
// command.
const (
	jobsJSONHelp   = "print a JSON object instead of the text:"
	jobsJSONFields = "{rule, earlier, account, jobs: [{id, state, enqueued, due, deadline, finished, recovered, pin, result}]}"
)

// jobsCommand lists one account's queue: its running pins, its waiting
// ones with the instant each starts, and the results kept of those done,
// through the pinbot running on the data directory or from the stores,
// the same way.
func jobsCommand(st settings, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	flags, asJSON := jobsFlags(&st)
	refs, err := parseWithArgs(flags, "jobs", args, stdout)
	if err != nil {
		return err
	}
	st.noteFlags(flags)
	if len(refs) != 1 || refs[0] == "" || refs[0] == "@" {
		return &usageError{cmd: "jobs", err: fmt.Errorf("jobs: want one ACCOUNT (an account id, or @ and its username), got %d arguments", len(refs))}
	}
	log, err := listingLogger(st, "jobs", stderr, getenv)
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	return runJobs(ctx, listingConfig{dir: layout{dir: st.dataDir.value}, keyFile: &st.keyFile, json: *asJSON,
		out: stdout, notes: stderr, log: log}, refs[0])
}

// jobsFlags returns the flag set of the jobs command, bound to st, and
// its --json flag.
func jobsFlags(st *settings) (*flag.FlagSet, *bool) {
	flags := newFlagSet("jobs")
	asJSON := flags.Bool("json", false, jobsJSONHelp+" "+jobsJSONFields)
	st.bind(flags, "jobs")
	return flags, asJSON
}

// runJobs writes the queue of the account ref names (an id, or "@" and a
// username) to cfg.out.
func runJobs(ctx context.Context, cfg listingConfig, ref string) error {
	jobs, err := readJobs(ctx, cfg, ref)
	if err != nil {
		return err
	}
	if jobs.NoNames != "" {
		fmt.Fprintf(cfg.notes, "pinbot: usernames not shown: %s\n", jobs.NoNames)
	}
	if cfg.json {
		enc := json.NewEncoder(cfg.out)
		enc.SetIndent("", "  ")
		err = enc.Encode(jobs)
	} else {
		err = writeJobs(cfg.out, jobs)
	}
	if err != nil {
		return fmt.Errorf("writing the list: %w", err)
	}
	return nil
}

// readJobs asks the pinbot running on the data directory for the queue
// of the account ref names, or, when none answers on its control
// socket, reads it from the stores.
func readJobs(ctx context.Context, cfg listingConfig, ref string) (control.Jobs, error) {
	jobs, err := control.FetchJobs(ctx, cfg.dir.control(), ref)
	if !errors.Is(err, backup.ErrNotServing) {
		return jobs, err
	}
	cfg.log.Debug().Err(err).Msg("no pinbot serves the data directory: reading its stores")
	err = withListing(cfg.dir, cfg.keyFile, cfg.clock, cfg.log, func(src control.Source) (err error) {
		jobs, err = control.ReadJobs(ctx, src, ref)
		return err
	})
	if errors.Is(err, errNoEngineStore) {
		return control.Jobs{}, fmt.Errorf("no account is stored in %s", cfg.dir.dir)
	}
	return jobs, err
}

// writeJobs writes the account's standing, then its jobs as a table.
func writeJobs(w io.Writer, jobs control.Jobs) error {
	a := jobs.Account
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Account:\t%s\n", displayAccount(a.ID))
	if a.Username != "" {
		fmt.Fprintf(tw, "Username:\t%s\n", usernameCell(a.Username))
	}
	if len(a.LinkedBy) > 0 {
		users := "Discord user "
		if len(a.LinkedBy) > 1 {
			users = "Discord users "
		}
		fmt.Fprintf(tw, "Linked by:\t%s%s\n", users, strings.Join(a.LinkedBy, ", "))
	}
	fmt.Fprintf(tw, "%s pins:\t%d/%d\n", windowAdjective(jobs.Rule.Window), a.Used, a.Limit)
	fmt.Fprintf(tw, "Pending:\t%d\n", a.Pending)
	fmt.Fprintf(tw, "Free:\t%s\n", freeText(a))
	fmt.Fprintf(tw, "Queued:\t%d\n", a.Queued)
	fmt.Fprintf(tw, "Next slot free:\t%s\n", whenFree(a.NextFree, a.At))
	if err := tw.Flush(); err != nil {
		return err
	}
	if a.Blocked > 0 {
		if err := writeEarlierRules(w, jobs.Earlier, a.At); err != nil {
			return err
		}
	}
	if len(jobs.Jobs) == 0 {
		_, err := io.WriteString(w, "\nNothing is queued, and no results of queued pins are kept.\n")
		return err
	}
	io.WriteString(w, "\n")
	tw = tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintf(tw, "JOB\tSTATE\tWHEN\tMESSAGE\tIMAGE\tQUEUED BY\tBOARD\tRESULT\n")
	for _, j := range jobs.Jobs {
		state, when, result := j.State, "", "-"
		switch j.State {
		case control.Running:
			when = "lease ends " + exactTime(j.Deadline, a.At)
			if j.Recovered {
				state += " (recovered)"
				result = "unknown yet: Pinbot stopped while sending it; looked for on Pinterest, never sent again unless proven absent"
			}
		case control.Waiting:
			when = "starts " + exactTime(j.Due, a.At)
		default:
			when = "finished " + exactTime(j.Finished, a.At)
			result = resultCell(j.Result)
		}
		message, image, user, board := "unreadable payload", "-", "-", "-"
		if p := j.Pin; p != nil {
			message, user = p.MessageURL, p.User
			image = fmt.Sprintf("%d of %d", p.Image, p.Images)
			board = displayAccount(p.Board)
			if p.BoardName != "" {
				board = displayAccount(p.BoardName)
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, state, when, message, image, user, board, result)
	}
	return tw.Flush()
}

// resultCell says what became of a done job.
func resultCell(r *control.Result) string {
	if r == nil {
		return "no outcome recorded"
	}
	why := oneLine(r.Why)
	switch r.Outcome {
	case "pinned":
		if r.PinURL == "" {
			return "pinned"
		}
		return "pinned " + oneLine(r.PinURL)
	case "duplicate":
		return "already pinned " + oneLine(r.PinURL)
	case "unknown":
		if why == "" {
			return "may exist (counts toward the limit)"
		}
		return "may exist (counts toward the limit): " + why
	}
	if why == "" {
		return oneLine(r.Outcome)
	}
	return oneLine(r.Outcome) + ": " + why
}

// oneLine replaces the control characters of s with spaces, so that it
// keeps to its cell.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
