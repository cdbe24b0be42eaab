package badgerlinks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
)

// recordVersion is the version of every record this package writes.
const recordVersion = 1

// Key prefixes; see the package documentation.
const (
	userPrefix    = "u/"
	accountPrefix = "a/"
	tokenPrefix   = "t/"
	statePrefix   = "s/"
)

// grantGenKey holds the last grant generation Link handed out, store-wide,
// so that generations never repeat, not even after an account's token
// record was deleted by its last unlink.
const grantGenKey = "m/grant-gen"

func userKey(id string) string    { return userPrefix + id }
func accountKey(id string) string { return accountPrefix + id }
func tokenKey(id string) string   { return tokenPrefix + id }

// stateKey stores a state under its SHA-256 digest, so that reading the
// database (with its key) does not yield states that could still be used.
func stateKey(state string) string {
	sum := sha256.Sum256([]byte(state))
	return statePrefix + hex.EncodeToString(sum[:])
}

// record is a stored JSON value.
type record interface {
	version() int
	// check reports a record whose fields contradict each other or the
	// limits on what is stored.
	check() error
}

// userRecord is stored under u/<user id>.
type userRecord struct {
	V        int      `json:"v"`
	Active   string   `json:"active,omitempty"`
	Accounts []string `json:"accounts"`
	// QueueWhenFull is the user's default for what /pin does at the
	// limit: queue the rest (true) or skip it.
	QueueWhenFull bool `json:"queue_when_full,omitempty"`
}

func (r *userRecord) version() int { return r.V }

func (r *userRecord) check() error {
	for _, a := range r.Accounts {
		if err := links.CheckID("account id", a); err != nil {
			return err
		}
	}
	if len(r.Accounts) > links.MaxAccountsPerUser {
		return fmt.Errorf("%d accounts, more than %d", len(r.Accounts), links.MaxAccountsPerUser)
	}
	if r.Active == "" && len(r.Accounts) > 0 {
		return errors.New("no active account")
	}
	if r.Active != "" && !slices.Contains(r.Accounts, r.Active) {
		return fmt.Errorf("active account %q is not linked", r.Active)
	}
	return nil
}

func (r *userRecord) user(id string) links.User {
	return links.User{ID: id, Active: r.Active, Accounts: slices.Clone(r.Accounts), QueueWhenFull: r.QueueWhenFull}
}

// accountRecord is stored under a/<account id>.
type accountRecord struct {
	V                int    `json:"v"`
	Username         string `json:"username"`
	DefaultBoard     string `json:"default_board,omitempty"`
	DefaultBoardName string `json:"default_board_name,omitempty"`
	RelinkNeeded     bool   `json:"relink_needed,omitempty"`
	// Users are the ids of the users who linked the account, in the
	// order they linked it.
	Users []string `json:"users"`
}

func (r *accountRecord) version() int { return r.V }

func (r *accountRecord) check() error {
	if len(r.Users) == 0 {
		return errors.New("no linking user")
	}
	for _, u := range r.Users {
		if err := links.CheckID("user id", u); err != nil {
			return err
		}
	}
	return nil
}

func (r *accountRecord) account(id string) links.Account {
	return links.Account{
		ID:               id,
		Username:         r.Username,
		DefaultBoard:     r.DefaultBoard,
		DefaultBoardName: r.DefaultBoardName,
		RelinkNeeded:     r.RelinkNeeded,
	}
}

// tokenRecord is stored under t/<account id>.
type tokenRecord struct {
	V            int       `json:"v"`
	AccessToken  string    `json:"access_token,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	TokenType    string    `json:"token_type,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Gen is the generation of the grant: Link raises it, refreshes keep
	// it. Records written before it existed read as generation 0.
	Gen uint64 `json:"gen,omitempty"`
}

func (r *tokenRecord) version() int { return r.V }

func (r *tokenRecord) check() error {
	if r.AccessToken == "" && r.RefreshToken == "" {
		return errors.New("token has neither access nor refresh token")
	}
	return nil
}

func newTokenRecord(tok *oauth2.Token) *tokenRecord {
	return &tokenRecord{
		V:            recordVersion,
		AccessToken:  tok.AccessToken,
		RefreshToken: tok.RefreshToken,
		TokenType:    tok.TokenType,
		Expiry:       tok.Expiry.Round(0).UTC(),
	}
}

func (r *tokenRecord) token() *oauth2.Token {
	return &oauth2.Token{
		AccessToken:  r.AccessToken,
		RefreshToken: r.RefreshToken,
		TokenType:    r.TokenType,
		Expiry:       r.Expiry,
	}
}

// stateRecord is stored under s/<sha256 of the state>.
type stateRecord struct {
	V       int       `json:"v"`
	User    string    `json:"user"`
	Expires time.Time `json:"expires"`
	// Interaction and At are links.Request's: the /link interaction's token,
	// and when /link ran.
	Interaction string    `json:"interaction,omitempty"`
	At          time.Time `json:"at,omitzero"`
}

func (r *stateRecord) version() int { return r.V }

func (r *stateRecord) check() error {
	if err := links.CheckID("user id", r.User); err != nil {
		return err
	}
	return links.CheckInteraction(r.Interaction)
}

// getRecord reads key into rec. It reports false, with no error, when key
// is absent.
func getRecord(txn *badger.Txn, key string, rec record) (bool, error) {
	item, err := txn.Get([]byte(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("links: read %q: %w", key, err)
	}
	var derr error
	if err := item.Value(func(v []byte) error {
		derr = decodeRecord(v, rec)
		return nil
	}); err != nil {
		return false, fmt.Errorf("links: read %q: %w", key, err)
	}
	if derr != nil {
		return false, corrupt(key, derr)
	}
	return true, nil
}

// decodeRecord decodes v into rec and checks its version and contents.
func decodeRecord(v []byte, rec record) error {
	if err := json.Unmarshal(v, rec); err != nil {
		return err
	}
	if rec.version() != recordVersion {
		return fmt.Errorf("version %d, want %d", rec.version(), recordVersion)
	}
	return rec.check()
}

func corrupt(key string, err error) error {
	return fmt.Errorf("%w %q: %w", links.ErrCorrupt, key, err)
}

// setRecord stores rec under key in txn.
func setRecord(txn *badger.Txn, key string, rec record) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("links: encode %q: %w", key, err)
	}
	if err := txn.Set([]byte(key), v); err != nil {
		return fmt.Errorf("links: write %q: %w", key, err)
	}
	return nil
}

// setRecordTTL stores rec under key in txn, to expire ttl from now by
// Badger's clock (rounded up to a whole second).
func setRecordTTL(txn *badger.Txn, key string, rec record, ttl time.Duration) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("links: encode %q: %w", key, err)
	}
	if err := txn.SetEntry(badger.NewEntry([]byte(key), v).WithTTL(ttl.Round(time.Second) + time.Second)); err != nil {
		return fmt.Errorf("links: write %q: %w", key, err)
	}
	return nil
}

// deleteKey deletes key in txn.
func deleteKey(txn *badger.Txn, key string) error {
	if err := txn.Delete([]byte(key)); err != nil {
		return fmt.Errorf("links: delete %q: %w", key, err)
	}
	return nil
}
