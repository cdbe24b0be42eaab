package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/internal/app"
	"github.com/pinbot/pinbot/internal/backup"
)

// forceBackupHelp describes the --force flag of the backup command.
const forceBackupHelp = "replace FILE if it exists"

// backupCommand writes a backup of the data directory to the file its
// argument names: through the running bot or sandbox when one serves the
// data directory's control socket, else from the stores themselves.
func backupCommand(st settings, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	flags := newFlagSet("backup")
	force := flags.Bool("force", false, forceBackupHelp)
	st.bind(flags, "backup")
	files, err := parseWithArgs(flags, "backup", args, stdout)
	if err != nil {
		return err
	}
	st.noteFlags(flags)
	if len(files) != 1 {
		return &usageError{cmd: "backup", err: fmt.Errorf("backup: want one FILE to write, got %d arguments", len(files))}
	}
	level, err := st.validate()
	if err != nil {
		return &usageError{cmd: "backup", err: err}
	}
	if st.logLevel.from == "" {
		level = accountsLogLevel // the command reports what it did
	}
	log := newLogger(stderr, level, getenv)
	ctx, stop := signalContext()
	defer stop()
	var bar io.Writer
	if isTerminal(stdout) {
		bar = stdout
	}
	return runBackup(ctx, backupConfig{
		dir: layout{dir: st.dataDir.value}, file: files[0], force: *force,
		keyFile: &st.keyFile, out: stdout, bar: bar, log: log,
	})
}

// backupConfig is what runBackup needs.
type backupConfig struct {
	dir   layout
	file  string
	force bool
	// keyFile is the token store's key setting, used when no pinbot runs
	// on the data directory (else DIR/sandbox.key, when it exists).
	keyFile *setting
	out     io.Writer // the report
	bar     io.Writer // the progress line; nil: none
	log     zerolog.Logger
}

// runBackup writes the backup to a temporary file beside cfg.file and
// renames it into place once complete and checked, so that cfg.file is
// never a partial backup.
func runBackup(ctx context.Context, cfg backupConfig) (err error) {
	if err := checkBackupFile(cfg.file, cfg.force); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(cfg.file), "."+filepath.Base(cfg.file)+".partial-*")
	if err != nil {
		return fmt.Errorf("creating the backup file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name()) // our own partial file
		}
	}()
	pw := &progressWriter{w: tmp, bar: cfg.bar, label: "backing up " + cfg.dir.dir}
	online := true
	if _, err = backup.Fetch(ctx, cfg.dir.control(), pw); errors.Is(err, backup.ErrNotServing) {
		cfg.log.Debug().Err(err).Msg("no pinbot serves the data directory: backing up its stores directly")
		online = false
		err = offlineBackup(cfg, pw)
	}
	pw.end()
	if err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing the backup file: %w", err)
	}
	// Read back and check: what the running pinbot sent came over a
	// socket, and either way the file is what a restore will read.
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	info, err := backup.Verify(tmp, nil)
	if err != nil {
		return fmt.Errorf("the backup written does not check out: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the backup file: %w", err)
	}
	if err := checkBackupFile(cfg.file, cfg.force); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), cfg.file); err != nil {
		return fmt.Errorf("naming the backup file: %w", err)
	}
	syncDir(filepath.Dir(cfg.file))

	how := "from its stores (no pinbot was running on it)"
	if online {
		how = "through the pinbot running on it"
	}
	fmt.Fprintf(cfg.out, "pinbot: backed up %s %s to %s: %s\n", cfg.dir.dir, how, cfg.file, describeBackup(info))
	return nil
}

// checkBackupFile refuses to replace file unless force, and refuses a
// directory.
func checkBackupFile(file string, force bool) error {
	fi, err := os.Lstat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("backup file: %w", err)
	case fi.IsDir():
		return fmt.Errorf("%s is a directory: name the backup file to write", file)
	case !force:
		return fmt.Errorf("%s exists: use --force to replace it", file)
	}
	return nil
}

// offlineBackup backs up the data directory's stores, opening them
// itself: no pinbot answers on the control socket.
func offlineBackup(cfg backupConfig, w io.Writer) error {
	dir := cfg.dir
	if err := dir.checkExisting(); err != nil {
		return err
	}
	if _, err := os.Stat(dir.engine()); err != nil {
		return fmt.Errorf("%s holds no engine store (%s): nothing to back up", dir.dir, dir.engine())
	}
	var st backup.Stores
	if _, err := os.Stat(dir.links()); err == nil {
		key, err := storeKey(dir, cfg.keyFile)
		if err != nil {
			return err
		}
		if key == nil {
			return &keyError{fmt.Errorf("the token store %s is encrypted, and so is its copy in a backup: give its key with %s",
				dir.links(), cfg.keyFile.both())}
		}
		st.Key = key
	}
	store, err := openStore(dir.engine(), cfg.log)
	if errors.Is(err, app.ErrDataDirInUse) {
		return fmt.Errorf("%w, and it serves no backup on %s (pinbot accounts or demo?); stop it, then try again",
			app.ErrDataDirInUse, dir.control())
	}
	if err != nil {
		return err
	}
	defer store.Close()
	st.Engine = store
	if st.Key != nil {
		ls, err := app.OpenTokenStore(dir.links(), st.Key, cfg.log)
		switch {
		case errors.Is(err, links.ErrEncryptionKey):
			return &keyError{fmt.Errorf("the token store %s was written with another key than the one given", dir.links())}
		case errors.Is(err, links.ErrLocked):
			return fmt.Errorf("%w (%s); stop it, then try again", app.ErrDataDirInUse, dir.links())
		case err != nil:
			return err
		}
		defer ls.Close()
		st.Links = ls
	}
	_, err = backup.Take(w, st, false)
	return err
}

// storeKey returns the token store's key: from the setting when given,
// else DIR/sandbox.key when it exists, else nil.
func storeKey(dir layout, keyFile *setting) ([]byte, error) {
	if keyFile.value != "" {
		return readKeyFile(keyFile)
	}
	sk := setting{opt: &keyFileOption, value: dir.sandboxKey(), from: "the sandbox's key"}
	if _, err := os.Stat(sk.value); err != nil {
		return nil, nil
	}
	return readKeyFile(&sk)
}

// describeBackup says what a backup holds.
func describeBackup(info backup.Info) string {
	s := fmt.Sprintf("%s, taken %s by pinbot %s", sizeString(info.Size), info.Created.Local().Format(timeLayout), info.Pinbot)
	for _, sec := range info.Sections {
		s += fmt.Sprintf("; %v %s", sec.Kind, sizeString(sec.Size))
		if sec.Encrypted {
			s += " (encrypted)"
		}
	}
	return s
}

// sizeString shows n bytes in binary units: "512 B", "1.5 KiB", "12.0 MiB".
func sizeString(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// progressEvery is how often the progress line is redrawn at most.
const progressEvery = 100 * time.Millisecond

// progressWriter counts the bytes written through it and, when bar is
// set (a terminal), keeps one line there up to date.
type progressWriter struct {
	w     io.Writer
	bar   io.Writer
	label string
	n     int64
	drawn time.Time
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.n += int64(n)
	if p.bar != nil && time.Since(p.drawn) >= progressEvery {
		p.drawn = time.Now()
		fmt.Fprintf(p.bar, "\r%s: %s written", p.label, sizeString(p.n))
	}
	return n, err
}

// end ends the progress line, if one was drawn.
func (p *progressWriter) end() {
	if p.bar != nil && !p.drawn.IsZero() {
		fmt.Fprintf(p.bar, "\r%s: %s written\n", p.label, sizeString(p.n))
	}
}

// syncDir makes a rename in dir durable, where the system allows it.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// parseWithArgs parses args into fs with flags and arguments in any
// order ("backup FILE --force" as "backup --force FILE"), and returns the
// arguments; those after "--" are arguments whatever they look like.
func parseWithArgs(fs *flag.FlagSet, cmd string, args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, cmd, args, stdout); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}
