package badgerutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"
)

// RemoveEmptyLogs deletes the value-log (.vlog) and memtable (.mem) files
// of the Badger directory dir that are empty (zero bytes), and must be
// called before badger.Open.
//
// Badger (v4.9.6) refuses to open a directory holding such a file: it
// takes the empty file for a new one, sets it up, and still reports the
// "new file" signal as an error ("Create a new file"). A process killed at
// the wrong moment leaves one behind:
//   - a value log is created at every open, empty at first, then gets its
//     header;
//   - a memtable's file is created empty, then truncated to its size; and
//     once the memtable is flushed to a table, the file is truncated to
//     zero, then removed.
//
// An empty file holds no entry: a new one has none yet, and a flushed
// memtable's entries are in a table the manifest lists before its file is
// truncated. Deleting it loses nothing. A directory that does not exist
// yet is not an error.
//
// It takes the lock Badger takes on the directory, so it never touches
// the files of a process that has the directory open (that process may be
// between creating a file and sizing it); then it leaves the directory
// alone, and badger.Open reports the directory as in use.
func RemoveEmptyLogs(dir string, log zerolog.Logger) error {
	unlock, ok, err := lockDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("badgerutil: locking %q: %w", dir, err)
	}
	if !ok {
		return nil
	}
	defer unlock()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("badgerutil: reading %q: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, ".vlog") && !strings.HasSuffix(name, ".mem") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return fmt.Errorf("badgerutil: %w", err)
		}
		if info.Size() != 0 {
			continue
		}
		path := filepath.Join(dir, name)
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("badgerutil: removing the empty log file %q: %w", path, err)
		}
		log.Warn().Str("file", path).Msg("removed an empty Badger log file left by a killed process")
	}
	return nil
}
