package main

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// dataRegion returns the first region [start, end) of f holding data at or
// after off, size being f's size: lseek's SEEK_DATA and SEEK_HOLE. It
// returns errNoMoreData when only a hole is left. A file system that does
// not track holes reports the whole file as data.
func dataRegion(f *os.File, off, size int64) (start, end int64, err error) {
	start, err = f.Seek(off, unix.SEEK_DATA)
	if errors.Is(err, syscall.ENXIO) {
		return 0, 0, errNoMoreData
	}
	if errors.Is(err, syscall.EINVAL) {
		return off, size, nil // SEEK_DATA unsupported: all of it is data
	}
	if err != nil {
		return 0, 0, err
	}
	end, err = f.Seek(start, unix.SEEK_HOLE)
	if err != nil {
		return 0, 0, err
	}
	return start, min(end, size), nil
}
