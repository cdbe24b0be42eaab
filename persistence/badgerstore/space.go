package badgerstore

import (
	"fmt"
	"syscall"
)

// ErrNoSpace is wrapped by the error of a Write refused because the disk
// is (nearly) full: below the free space kept in reserve (WithMinFree),
// or when the journal cannot create a segment; errors.Is(err,
// syscall.ENOSPC) holds too. The engine fails such a write closed, as any
// other, and keeps the cause in its error.
var ErrNoSpace = fmt.Errorf("badgerstore: no space left: %w", syscall.ENOSPC)

// checkSpace fails with ErrNoSpace when the store's file system has less
// than minFree bytes available.
func (s *Store) checkSpace() error {
	if s.minFree < 0 {
		return nil
	}
	free, err := freeBytes(s.dir)
	if err != nil {
		// Not knowing is no reason to refuse; Badger reports real errors.
		s.log.Warn().Err(err).Msg("cannot read free disk space")
		return nil
	}
	if free < uint64(s.minFree) {
		return fmt.Errorf("badgerstore: %q has %d bytes free, less than the %d kept in reserve: %w",
			s.dir, free, s.minFree, ErrNoSpace)
	}
	return nil
}
