package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/internal/sandbox"
	"github.com/pinbot/pinbot/persistence"
	"github.com/rs/zerolog"
)

const (
	// commandTimeout bounds the engine calls of one demo command.
	commandTimeout = 30 * time.Second
	// maxStatusAccounts is the most accounts one status command may name.
	maxStatusAccounts = 100
)

// demoConfig is what runDemo needs.
type demoConfig struct {
	dataDir string         // the data directory; the store is its engine subdirectory
	in      io.Reader      // commands, one per line
	out     io.Writer      // replies
	prompt  bool           // print a prompt before each command
	log     zerolog.Logger // for the store, the engine and the demo
	engine  actors.Config  // the engine's configuration; its Recover is left as is
}

// runDemo opens the engine store of the data directory cfg.dataDir,
// starts an engine with cfg.engine over it, and serves the
// commands read from cfg.in
// until quit, the end of cfg.in or the end of ctx. Then it closes the
// engine, which writes every account's state, and the store. The end of
// ctx is a normal stop, not an error.
func runDemo(ctx context.Context, cfg demoConfig) (err error) {
	log := cfg.log.With().Str("component", "demo").Logger()
	dir := layout{dir: cfg.dataDir}
	if err := dir.prepare(); err != nil {
		return err
	}
	store, err := openStore(dir.engine(), cfg.log)
	if err != nil {
		return err
	}
	eng, err := actors.New(cfg.engine, store, cfg.log)
	if err != nil {
		if cerr := store.Close(); cerr != nil {
			log.Error().Err(cerr).Msg("closing the store after a failed start")
		}
		return fmt.Errorf("starting the engine: %w", err)
	}
	defer func() {
		if cerr := shutdown(eng, store); cerr != nil {
			err = errors.Join(err, cerr)
			return
		}
		log.Info().Msg("engine and store closed")
	}()

	limits := eng.Config()
	d := &demo{
		eng:       eng,
		out:       replyWriter{w: cfg.out},
		log:       log,
		adjective: windowAdjective(limits.Window),
		short:     windowShort(limits.Window),
	}
	d.out.printf("pinbot engine demo: store in %s, %d pins per account in any rolling %s.\n",
		dir.engine(), limits.Limit, windowNoun(limits.Window))
	d.out.printf("Type \"help\" for the commands.\n")
	return d.serve(ctx, cfg.in, cfg.prompt)
}

// demo executes the commands of the engine demo. Its methods are called
// from one goroutine.
type demo struct {
	eng *actors.Engine
	out replyWriter
	log zerolog.Logger
	// adjective and short name the window length in replies: "12-hour"
	// and "12h".
	adjective, short string
}

// serve reads commands from in and executes them until quit, the end of in
// or the end of ctx. A line longer than sandbox.MaxLineLen is answered
// with an error line and skipped. It fails when in cannot be read or a
// reply cannot be written.
func (d *demo) serve(ctx context.Context, in io.Reader, prompt bool) error {
	done := make(chan struct{})
	defer close(done)
	lines, readErr := sandbox.ReadLines(in, done)
	for {
		if prompt {
			d.out.printf("> ")
		}
		if d.out.err != nil {
			return fmt.Errorf("writing replies: %w", d.out.err)
		}
		select {
		case <-ctx.Done():
			if prompt {
				d.out.printf("\n")
			}
			d.log.Info().AnErr("cause", context.Cause(ctx)).Msg("interrupted; shutting down")
			return nil
		case line, ok := <-lines:
			if !ok {
				if err := <-readErr; err != nil {
					return fmt.Errorf("reading commands: %w", err)
				}
				if prompt {
					d.out.printf("\n")
				}
				d.log.Info().Msg("end of input; shutting down")
				return nil
			}
			if line.Err != nil {
				d.errorf("%v", line.Err)
				continue
			}
			if quit := d.exec(ctx, line.Text); quit {
				d.log.Info().Msg("quit; shutting down")
				return nil
			}
		}
	}
}

// exec executes one command line and reports whether it was quit. Blank
// lines are ignored; mistakes are answered with a line starting "error:".
func (d *demo) exec(ctx context.Context, line string) (quit bool) {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	switch cmd, args := strings.ToLower(fields[0]), fields[1:]; cmd {
	case "pin":
		d.pin(ctx, args)
	case "status":
		d.status(ctx, args)
	case "help":
		d.out.printf("Commands:\n%s", demoCommandsHelp)
	case "quit", "exit":
		return true
	default:
		d.errorf("unknown command %.40q; type \"help\" for the commands", fields[0])
	}
	return false
}

// pin makes up to N pins on an account: it reserves N slots at once, then
// commits each slot granted as a pin made now, reporting the account's pin
// count after each.
func (d *demo) pin(ctx context.Context, args []string) {
	if len(args) != 2 {
		d.errorf("usage: pin ACCOUNT N")
		return
	}
	account := args[0]
	if !d.checkAccount(account) {
		return
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 1 || n > actors.MaxBatch {
		d.errorf("N must be a whole number from 1 to %d, got %.20q", actors.MaxBatch, args[1])
		return
	}

	g, err := d.eng.Reserve(ctx, account, n)
	if err != nil {
		d.engineError(err)
		return
	}
	if g.Granted == 0 {
		d.out.printf("%s is at its limit (%d/%s)%s: no pins made. Next slot frees %s.\n",
			displayAccount(account), g.Limit, d.short, earlierRule(g.Status), whenFree(g.NextFree, g.At))
		return
	}
	st := g.Status
	slots := g.Reservations()
	for i, r := range slots {
		if st, err = d.eng.Commit(ctx, r, d.eng.Now()); err != nil {
			d.engineError(fmt.Errorf("pin %d of %d: %w", i+1, len(slots), err))
			d.release(ctx, slots[i+1:])
			return
		}
		d.out.printf("%s pin count: %d/%d\n", d.adjective, st.Used-st.Pending, st.Limit)
	}
	if g.Granted < n {
		d.out.printf("Pin limit reached (%d/%s). Skipped remaining pins.\n", st.Limit, d.short)
		d.out.printf("Next slot frees %s.\n", whenFree(st.NextFree, st.At))
	}
}

// release frees granted slots whose pins were not made. A slot that cannot
// be released counts as a pin until its lease ends, which errs on the safe
// side.
func (d *demo) release(ctx context.Context, slots []actors.Reservation) {
	for _, r := range slots {
		if _, err := d.eng.Release(ctx, r); err != nil {
			d.log.Warn().Err(err).Str("account", r.Account).Uint64("reservation", r.ID).
				Msg("slot not released; it counts as a pin until its lease ends")
		}
	}
}

// status prints the pin count of each account named in args.
func (d *demo) status(ctx context.Context, args []string) {
	switch {
	case len(args) == 0:
		d.errorf("usage: status ACCOUNT [ACCOUNT...]")
		return
	case len(args) > maxStatusAccounts:
		d.errorf("status takes at most %d accounts, got %d", maxStatusAccounts, len(args))
		return
	}
	for _, account := range args {
		if !d.checkAccount(account) {
			return
		}
	}
	sts, err := d.eng.StatusMany(ctx, args)
	for _, st := range sts {
		name := displayAccount(st.Account)
		if st.Limit == 0 { // only Account is set when the account failed
			d.out.printf("%s — status unavailable\n", name)
			continue
		}
		var extra string
		if st.Pending > 0 {
			extra = fmt.Sprintf(" (%d pending)", st.Pending)
		}
		if st.Free() == 0 {
			extra += earlierRule(st) + "; next slot frees " + whenFree(st.NextFree, st.At)
		}
		d.out.printf("%s — %s pins: %d/%d%s\n", name, d.adjective, st.Used, st.Limit, extra)
	}
	if err != nil {
		d.engineError(err)
	}
}

// earlierRule notes, after a limit, that a limit or window in force before
// the last change still holds slots the current one would free (see
// actors.Status.Blocked); it is "" otherwise.
func earlierRule(st actors.Status) string {
	if st.Blocked == 0 {
		return ""
	}
	return ", and the limit in force before the last change still counts the pins made under it"
}

// checkAccount reports whether account is a valid account ID, answering
// with an error when it is not.
func (d *demo) checkAccount(account string) bool {
	if persistence.ValidAccount(account) {
		return true
	}
	d.errorf("invalid account id %.40q (%d bytes): want 1 to %d bytes, without NUL bytes",
		account, len(account), persistence.MaxAccountLen)
	return false
}

// errorf answers with a one-line error.
func (d *demo) errorf(format string, args ...any) {
	d.out.printf("error: "+format+"\n", args...)
}

// engineError answers with the error of an engine call, one line per
// error it joins.
func (d *demo) engineError(err error) {
	d.log.Debug().Err(err).Msg("engine call failed")
	switch {
	case errors.Is(err, actors.ErrUnavailable):
		d.errorf("the store cannot record pins right now, nothing was granted: %v", err)
	case errors.Is(err, context.DeadlineExceeded):
		d.errorf("the engine did not answer within %s: %v", bot.FormatDuration(commandTimeout), err)
	default:
		for line := range strings.SplitSeq(err.Error(), "\n") {
			d.errorf("%s", line)
		}
	}
}

// replyWriter writes replies and keeps the first write error; once one
// write failed, it writes nothing more.
type replyWriter struct {
	w   io.Writer
	err error
}

func (r *replyWriter) printf(format string, args ...any) {
	if r.err == nil {
		_, r.err = fmt.Fprintf(r.w, format, args...)
	}
}
