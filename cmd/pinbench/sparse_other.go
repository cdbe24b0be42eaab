//go:build !linux

package main

import "os"

// dataRegion returns the region of f from off to its size: outside Linux
// the copy does not look for holes, and writes them out as zeros.
func dataRegion(_ *os.File, off, size int64) (start, end int64, err error) {
	return off, size, nil
}
