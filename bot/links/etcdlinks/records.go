package etcdlinks

import (
	"fmt"
	"strconv"
	"time"

	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// stateUserPrefix is the prefix of the users' indexes of states; the
// other key prefixes are package record's.
const stateUserPrefix = "su/"

// stateUserKey is the entry of a state in its user's index: ordered by
// expiry, so that the oldest come first.
func stateUserKey(user string, expires time.Time, hash string) string {
	return fmt.Sprintf("%s%s/%020d/%s", stateUserPrefix, user, max(expires.UnixMilli(), 0), hash)
}

// encode returns rec as the sealed value of the key rel.
func (s *Store) encode(rel string, rec record.Record) (string, error) {
	v, err := record.Encode(rec)
	if err != nil {
		return "", fmt.Errorf("links: encode %q: %w", s.key(rel), err)
	}
	return string(s.seal.sealValue(rel, v)), nil
}

// decode opens v, the value of the key rel, into rec and checks its
// version and contents. Its error wraps links.ErrCorrupt and names the
// key.
func (s *Store) decode(rel string, v []byte, rec record.Record) error {
	plain, err := s.seal.openValue(rel, v)
	if err == nil {
		err = record.Decode(plain, rec)
	}
	if err != nil {
		return s.corrupt(rel, err)
	}
	return nil
}

// corrupt is the error of the record under rel that cannot be used.
func (s *Store) corrupt(rel string, err error) error {
	return record.Corrupt(s.key(rel), err)
}

// parseGen reads the value of record.GrantGenKey, in decimal; an absent
// key is 0.
func (s *Store) parseGen(k kv) (uint64, error) {
	if !k.found() {
		return 0, nil
	}
	n, err := strconv.ParseUint(string(k.value), 10, 64)
	if err != nil {
		return 0, s.corrupt(record.GrantGenKey, err)
	}
	return n, nil
}
