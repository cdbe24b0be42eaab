package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/internal/app"
	"github.com/pinbot/pinbot/internal/backup"
)

// forceRestoreHelp describes the --force flag of the restore command.
const forceRestoreHelp = "restore into a data directory that is not empty, moving it aside first (never deleting it)"

// asideLayout names the place a data directory is moved to by a restore
// with --force: DIR.before-restore-20261126T120000Z.
const asideLayout = "20060102T150405Z"

// restoreCommand restores the backup its argument names into the data
// directory.
func restoreCommand(st settings, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	flags := newFlagSet("restore")
	force := flags.Bool("force", false, forceRestoreHelp)
	st.bind(flags, "restore")
	files, err := parseWithArgs(flags, "restore", args, stdout)
	if err != nil {
		return err
	}
	st.noteFlags(flags)
	if len(files) != 1 {
		return &usageError{cmd: "restore", err: fmt.Errorf("restore: want one backup FILE to read, got %d arguments", len(files))}
	}
	level, engine, err := st.validateEngine()
	if err != nil {
		return &usageError{cmd: "restore", err: err}
	}
	if st.logLevel.from == "" {
		level = accountsLogLevel // the command reports what it did
	}
	log := newLogger(stderr, level, getenv)
	ctx, stop := signalContext()
	defer stop()
	return runRestore(ctx, restoreConfig{
		dir: layout{dir: st.dataDir.value}, file: files[0], force: *force,
		keyFile: &st.keyFile, engine: engine, windowGiven: st.pinWindow.from != "", out: stdout, log: log,
	})
}

// restoreConfig is what runRestore needs.
type restoreConfig struct {
	dir   layout
	file  string
	force bool
	// keyFile is the token store's key setting (else DIR/sandbox.key,
	// when it exists).
	keyFile *setting
	// engine is the configuration the bot will run under: its window and
	// lease set the hold when windowGiven (PINBOT_PIN_WINDOW or
	// --pin-window was given) and they ask a longer one than the
	// backup's own rules. Without windowGiven, the hold follows the
	// backup's rules alone, not the default window.
	engine      actors.Config
	windowGiven bool
	out         io.Writer
	log         zerolog.Logger
}

// runRestore checks the whole backup before it writes anything, restores
// it into a new directory beside the data directory, moves the data
// directory aside when it is not empty (--force), and puts the new one in
// its place.
func runRestore(ctx context.Context, cfg restoreConfig) error {
	dir := cfg.dir
	empty, err := dirEmpty(dir.dir)
	if err != nil {
		return err
	}
	if !empty && !cfg.force {
		return fmt.Errorf("%s is not empty: use --force to move it aside and restore in its place (nothing is deleted)", dir.dir)
	}
	if !empty {
		release, err := claimDataDir(dir)
		if err != nil {
			return err
		}
		defer release()
	}

	f, err := os.Open(cfg.file)
	if err != nil {
		return fmt.Errorf("opening the backup: %w", err)
	}
	defer f.Close()
	key, keyIn, err := restoreKey(dir, cfg.keyFile)
	if err != nil {
		return err
	}
	info, err := backup.Verify(f, key)
	switch {
	case errors.Is(err, backup.ErrKey):
		return &keyError{fmt.Errorf("%s: %w; give the key of the pinbot that took it with %s", cfg.file, err, cfg.keyFile.both())}
	case err != nil:
		return fmt.Errorf("%s: %w; nothing was written", cfg.file, err)
	case info.Has(backup.Links) && key == nil:
		return &keyError{fmt.Errorf("%s holds a token store, encrypted with the key of the pinbot that took it: give that key with %s",
			cfg.file, cfg.keyFile.both())}
	}
	fmt.Fprintf(cfg.out, "pinbot: %s checks out: %s\n", cfg.file, describeBackup(info))
	if err := ctx.Err(); err != nil {
		return err
	}

	parent, base := filepath.Split(filepath.Clean(dir.dir))
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("creating the data directory's parent: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, base+".restoring-*")
	if err != nil {
		return fmt.Errorf("creating the directory to restore into: %w", err)
	}
	next := layout{dir: tmp}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	res, err := backup.Restore(f, backup.Target{
		EngineDir: next.engine(), LinksDir: next.links(), Key: key, Engine: cfg.engine,
		BackupRule: !cfg.windowGiven, Loaders: app.BackupLoaders(), Log: cfg.log,
	})
	if err == nil && keyIn != "" {
		err = copyKey(filepath.Join(dir.dir, keyIn), filepath.Join(tmp, keyIn))
	}
	if err != nil {
		os.RemoveAll(tmp) // our own, incomplete
		return fmt.Errorf("restoring %s: %w", cfg.file, err)
	}

	aside := ""
	if !empty {
		aside = asideName(dir.dir, time.Now())
		if err := os.Rename(dir.dir, aside); err != nil {
			os.RemoveAll(tmp)
			return fmt.Errorf("moving %s aside: %w", dir.dir, err)
		}
		fmt.Fprintf(cfg.out, "pinbot: moved %s to %s\n", dir.dir, aside)
	} else if err := os.Remove(dir.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		os.RemoveAll(tmp)
		return fmt.Errorf("replacing the empty %s: %w", dir.dir, err)
	}
	if err := os.Rename(tmp, dir.dir); err != nil {
		if aside != "" {
			if rerr := os.Rename(aside, dir.dir); rerr != nil {
				return fmt.Errorf("putting the restored directory in place: %w (the old one is in %s, the restored one in %s)", err, aside, tmp)
			}
		}
		return fmt.Errorf("putting the restored directory in place: %w (it is in %s)", err, tmp)
	}
	syncDir(parent)

	r := res.Restored
	fmt.Fprintf(cfg.out, "pinbot: restored %s into %s\n", cfg.file, dir.dir)
	fmt.Fprintf(cfg.out, "pinbot: no account is granted a pin before %s (in %s): the backup does not hold the pins made after it, "+
		"so every account waits until those have left their window (the window plus a lease)\n",
		r.HoldUntil.Local().Format(timeLayout), bot.FormatDuration(r.HoldUntil.Sub(r.At)))
	printRebuild(cfg.out, r)
	if !cfg.windowGiven {
		// The hold covers the backup's rules alone: a longer window in the
		// next runs would need a longer one.
		fmt.Fprintf(cfg.out, "pinbot: the hold assumes pinbot runs on under the backup's window, %s: "+
			"to run it under a longer one, restore again with that window in %s\n",
			bot.FormatDuration(res.Window), (&setting{opt: &pinWindowOption}).both())
	}
	if info.Has(backup.Links) && keyIn == "" {
		fmt.Fprintf(cfg.out, "pinbot: the token store is encrypted with the key in %s: run the bot with it "+
			"(or, for the sandbox, copy it to %s)\n", cfg.keyFile.value, dir.sandboxKey())
	}
	if r.Unfinished > 0 {
		what := fmt.Sprintf("%d queued pins were", r.Unfinished)
		if r.Unfinished == 1 {
			what = "1 queued pin was"
		}
		fmt.Fprintf(cfg.out, "pinbot: %s waiting or running when the backup was taken: each may have been sent since, "+
			"so none is sent again; their owners are told they may exist\n", what)
	}
	return nil
}

// restoreKey returns the token store's key, from the setting when given,
// else from DIR/sandbox.key when it exists, else nil; and, when the key
// file lies inside the data directory, its path there, so that the
// restored directory gets a copy.
func restoreKey(dir layout, keyFile *setting) (key []byte, inside string, err error) {
	key, err = storeKey(dir, keyFile)
	if err != nil || key == nil {
		return key, "", err
	}
	path := keyFile.value
	if path == "" {
		path = dir.sandboxKey()
	}
	abs, err1 := filepath.Abs(path)
	root, err2 := filepath.Abs(dir.dir)
	if err1 != nil || err2 != nil {
		return key, "", nil
	}
	if rel, err := filepath.Rel(root, abs); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		return key, rel, nil
	}
	return key, "", nil
}

// copyKey copies the key file from to to, readable by its owner only.
func copyKey(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}

// dirEmpty reports whether dir is missing or holds nothing.
func dirEmpty(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("data directory: %w", err)
	}
	return len(entries) == 0, nil
}

// claimDataDir fails when a pinbot uses the data directory: it answers on
// the control socket, or holds a store's lock. Otherwise it holds the
// stores' locks, so that no pinbot starts on them, until release.
func claimDataDir(dir layout) (release func(), err error) {
	if c, err := net.DialTimeout("unix", dir.control(), time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("a pinbot is running on %s: stop it, then restore", dir.dir)
	}
	var held []func()
	release = func() {
		for _, r := range held {
			r()
		}
	}
	for _, d := range []string{dir.engine(), dir.links()} {
		if _, err := os.Stat(d); err != nil {
			continue
		}
		r, err := lockDir(d)
		if err != nil {
			release()
			return nil, fmt.Errorf("%s is in use by another pinbot process: stop it, then restore: %w", d, err)
		}
		held = append(held, r)
	}
	return release, nil
}

// asideName returns a name that nothing has yet for dir moved aside at
// now: dir.before-restore-TIME, with a number added when needed.
func asideName(dir string, now time.Time) string {
	base := filepath.Clean(dir) + ".before-restore-" + now.UTC().Format(asideLayout)
	name := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			return name
		}
		name = fmt.Sprintf("%s-%d", base, i)
	}
}
