package backup

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/rs/zerolog"
)

// BackupPath is where the control socket serves backups.
const BackupPath = "/backup"

// errorTrailer is the HTTP trailer that carries the error of a backup
// that failed after its answer began.
const errorTrailer = "Pinbot-Backup-Error"

// Handler returns the handler of pinbot's control socket: GET BackupPath
// answers with a backup of st (Take), streamed as it is taken. One backup
// runs at a time; a request meanwhile is refused (409). A backup that
// fails once its answer began ends early, with its error in a trailer.
func Handler(st Stores, log zerolog.Logger) http.Handler {
	log = log.With().Str("component", "backup").Logger()
	var busy sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+BackupPath, func(w http.ResponseWriter, r *http.Request) {
		if !busy.TryLock() {
			http.Error(w, "a backup is being taken already", http.StatusConflict)
			return
		}
		defer busy.Unlock()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Trailer", errorTrailer)
		log.Info().Msg("backup requested")
		info, err := Take(w, st, true)
		if err != nil {
			w.Header().Set(errorTrailer, err.Error())
			log.Error().Err(err).Msg("backup failed")
			return
		}
		log.Info().Int64("bytes", info.Size).Msg("backup sent")
	})
	return mux
}

// Listen listens on a Unix socket at path, which only its owner may use
// (mode 0600; the data directory it lies in is 0700 too), after removing
// the socket a process that stopped left there. Call it only while
// holding the stores the socket serves, so that the socket removed is no
// running pinbot's: another would hold them.
func Listen(path string) (net.Listener, error) {
	switch fi, err := os.Lstat(path); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("backup: control socket: %w", err)
	case fi.Mode().Type() != fs.ModeSocket:
		return nil, fmt.Errorf("backup: control socket: %s exists and is not a socket", path)
	default:
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("backup: control socket: removing the one left by a stopped pinbot: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("backup: control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, errors.Join(fmt.Errorf("backup: control socket: %w", err), ln.Close())
	}
	return ln, nil
}
