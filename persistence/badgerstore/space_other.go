//go:build !unix

package badgerstore

import "math"

// freeBytes reports unlimited space where the file system cannot be asked.
func freeBytes(string) (uint64, error) { return math.MaxUint64, nil }
