// Package record holds what the stores of package links (badgerlinks,
// etcdlinks) keep in the same form: the records, JSON objects carrying a
// version field "v", their keys relative to a store's root, and the logic
// on them that does not depend on the database. Reading and writing,
// transactions and expiry stay in each store.
//
// Every record type implements Record. Decode reads a stored value and
// checks it; Encode gives the value to store.
package record

import (
	"encoding/json"
	"fmt"

	"github.com/pinbot/pinbot/bot/links"
)

// Version is the version of every record the stores write.
const Version = 1

// Key prefixes, relative to a store's root.
const (
	UserPrefix     = "u/"
	AccountPrefix  = "a/"
	TokenPrefix    = "t/"
	StatePrefix    = "s/"
	OutboxPrefix   = "o/"
	ObservedPrefix = "e/"
	HistoryPrefix  = "h/"
	GuildPrefix    = "g/"
)

// GrantGenKey holds the last grant generation Link handed out,
// store-wide, so that generations never repeat, not even after an
// account's token record was deleted by its last unlink. Each store
// encodes its value its own way.
const GrantGenKey = "m/grant-gen"

// UserKey is the key of the User of userID.
func UserKey(userID string) string { return UserPrefix + userID }

// AccountKey is the key of the Account of accountID.
func AccountKey(accountID string) string { return AccountPrefix + accountID }

// TokenKey is the key of the Token of accountID.
func TokenKey(accountID string) string { return TokenPrefix + accountID }

// Record is a stored JSON value.
type Record interface {
	version() int
	// check reports a record whose fields contradict each other or the
	// limits on what is stored.
	check() error
}

// Decode decodes v into rec and checks its version and contents.
func Decode(v []byte, rec Record) error {
	if err := json.Unmarshal(v, rec); err != nil {
		return err
	}
	if rec.version() != Version {
		return fmt.Errorf("version %d, want %d", rec.version(), Version)
	}
	return rec.check()
}

// Encode returns the stored form of rec.
func Encode(rec Record) ([]byte, error) { return json.Marshal(rec) }

// Corrupt is the error of the record under key (as the store names it)
// that cannot be used.
func Corrupt(key string, err error) error {
	return fmt.Errorf("%w %q: %w", links.ErrCorrupt, key, err)
}
