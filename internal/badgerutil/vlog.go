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

// RemoveEmptyValueLogs deletes the value-log files of the Badger directory
// dir that are empty (zero bytes), and must be called before badger.Open.
//
// Badger creates a new value-log file at every open, empty at first, then
// writes its header. A process killed in between leaves an empty file, and
// Badger (v4.9.6) then refuses to open the directory: it takes the empty
// file for a new one, sets it up, and still reports the "new file" signal
// as an error ("Open existing file: ... Create a new file"). An empty file
// holds no value and nothing refers to it, so deleting it loses nothing.
// A directory that does not exist yet is not an error.
//
// It takes the lock Badger takes on the directory, so it never touches
// the files of a process that has the directory open (that process may be
// between creating a value log and writing its header); then it leaves
// the directory alone, and badger.Open reports the directory as in use.
func RemoveEmptyValueLogs(dir string, log zerolog.Logger) error {
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
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".vlog") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return fmt.Errorf("badgerutil: %w", err)
		}
		if info.Size() != 0 {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("badgerutil: removing the empty value log %q: %w", path, err)
		}
		log.Warn().Str("file", path).Msg("removed an empty value-log file left by an interrupted open")
	}
	return nil
}
