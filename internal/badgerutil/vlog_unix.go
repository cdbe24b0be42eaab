//go:build unix

package badgerutil

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockDir takes the exclusive, non-blocking flock Badger takes on its
// directory. ok is false, with no error, when another holder has it.
func lockDir(dir string) (unlock func(), ok bool, err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, false, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	// Unlock explicitly before closing: a process forked meanwhile (any
	// exec.Command of this process) shares the open file until it execs,
	// and closing alone would leave the lock held that long, failing the
	// badger.Open that follows.
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, true, nil
}
