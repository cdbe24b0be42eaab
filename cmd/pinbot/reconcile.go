package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/internal/app"
)

// reconcileCommand stores in the data directory's engine store the hold a
// restore stores, for a data directory lost without a backup: the pins
// the lost runs made are unknown, so every account is held until the
// next start rebuilds its window from Pinterest's listing.
func reconcileCommand(st settings, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	flags := newFlagSet("reconcile")
	st.bind(flags, "reconcile")
	if err := parseFlags(flags, "reconcile", args, stdout); err != nil {
		return err
	}
	st.noteFlags(flags)
	if flags.NArg() > 0 {
		return &usageError{cmd: "reconcile", err: fmt.Errorf("reconcile: unexpected argument %q", flags.Arg(0))}
	}
	level, engine, err := st.validateEngine()
	if err != nil {
		return &usageError{cmd: "reconcile", err: err}
	}
	if st.logLevel.from == "" {
		level = accountsLogLevel // the command reports what it did
	}
	return runReconcile(reconcileConfig{
		dir: layout{dir: st.dataDir.value}, engine: engine, windowGiven: st.pinWindow.from != "",
		out: stdout, log: newLogger(stderr, level, getenv),
	})
}

// reconcileConfig is what runReconcile needs.
type reconcileConfig struct {
	dir layout
	// engine is the configuration the bot will run under: its window and
	// lease size the hold, along with the rules the store keeps in force.
	engine      actors.Config
	windowGiven bool
	out         io.Writer
	log         zerolog.Logger
}

// runReconcile refuses a data directory a pinbot runs on, then stores the
// hold (actors.AfterRestore) in its engine store, creating the store when
// it is gone, and says what follows.
func runReconcile(cfg reconcileConfig) error {
	dir := cfg.dir
	if c, err := net.DialTimeout("unix", dir.control(), time.Second); err == nil {
		c.Close()
		return fmt.Errorf("a pinbot is running on %s: stop it, then reconcile", dir.dir)
	}
	if err := os.MkdirAll(dir.dir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	store, err := openStore(dir.engine(), cfg.log)
	if errors.Is(err, app.ErrDataDirInUse) {
		return fmt.Errorf("%w: stop the pinbot using it, then reconcile", err)
	}
	if err != nil {
		return err
	}
	r, err := actors.AfterRestore(context.Background(), cfg.engine, store, cfg.log)
	if cerr := store.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("closing the engine store: %w", cerr)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(cfg.out, "pinbot: no account is granted a pin before %s (in %s) unless its pins are read from Pinterest: "+
		"the pins made before are unknown, so every account waits until those have left their window (the window plus a lease)\n",
		r.HoldUntil.Local().Format(timeLayout), bot.FormatDuration(r.HoldUntil.Sub(r.At)))
	printRebuild(cfg.out, r)
	if !cfg.windowGiven {
		fmt.Fprintf(cfg.out, "pinbot: the hold assumes pinbot runs under a window of %s at most: "+
			"to run it under a longer one, reconcile again with that window in %s\n",
			bot.FormatDuration(r.Window), (&setting{opt: &pinWindowOption}).both())
	}
	return nil
}

// printRebuild says what the next start of pinbot does after the hold r.
func printRebuild(w io.Writer, r actors.Restored) {
	fmt.Fprintf(w, "pinbot: the next start of pinbot lists each linked account's pins on Pinterest once every pin made before "+
		"can be listed (%s after %s, at the default delays), and lets each account it reads pin again at once, up to what "+
		"Pinterest's own count leaves free; an account it cannot read waits for the hold to end, and is named in the log and on the dashboard\n",
		bot.FormatDuration(bot.DefaultSlotMargin+bot.DefaultListingLag), r.At.Local().Format(timeLayout))
}
