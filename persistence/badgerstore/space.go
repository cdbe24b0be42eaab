package badgerstore

import (
	"fmt"

	"github.com/pinbot/pinbot/persistence"
)

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
		return fmt.Errorf("persistence: %q has %d bytes free, less than the %d kept in reserve: %w",
			s.dir, free, s.minFree, persistence.ErrNoSpace)
	}
	return nil
}
