package seglog

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync flushes f's data and the metadata needed to read it back.
func fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// preallocate reserves size bytes for f, which read as zeros; a full disk
// fails with ENOSPC here rather than at a later write.
func preallocate(f *os.File, size int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, 0, size)
		switch err {
		case unix.EINTR:
			continue
		case unix.EOPNOTSUPP:
			// File systems without fallocate: set the size, at least.
			return f.Truncate(size)
		}
		return err
	}
}
