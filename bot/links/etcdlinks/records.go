package etcdlinks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
)

// recordVersion is the version of every record this package writes.
const recordVersion = 1

// Key prefixes, relative to the store's prefix; see the package
// documentation.
const (
	userPrefix      = "u/"
	accountPrefix   = "a/"
	tokenPrefix     = "t/"
	statePrefix     = "s/"
	stateUserPrefix = "su/"
	outboxPrefix    = "o/"
	observedPrefix  = "e/"
	historyPrefix   = "h/"
)

// grantGenKey holds the last grant generation Link handed out, store-wide,
// in decimal, so that generations never repeat, not even after an
// account's token record was deleted by its last unlink.
const grantGenKey = "m/grant-gen"

func userKey(id string) string    { return userPrefix + id }
func accountKey(id string) string { return accountPrefix + id }
func tokenKey(id string) string   { return tokenPrefix + id }

// stateHash is the SHA-256 of a state, in hex: states are stored under
// their digest, so that reading etcd (even with the key) does not yield
// states that could still be used.
func stateHash(state string) string {
	sum := sha256.Sum256([]byte(state))
	return hex.EncodeToString(sum[:])
}

func stateKey(hash string) string { return statePrefix + hash }

// stateUserKey is the entry of a state in its user's index: ordered by
// expiry, so that the oldest come first.
func stateUserKey(user string, expires time.Time, hash string) string {
	return fmt.Sprintf("%s%s/%020d/%s", stateUserPrefix, user, max(expires.UnixMilli(), 0), hash)
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
	// it.
	Gen uint64 `json:"gen"`
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
	// Interaction and At are links.Request's: the /link interaction's
	// token, and when /link ran.
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

// encode returns rec as the sealed value of the key rel.
func (s *Store) encode(rel string, rec record) (string, error) {
	v, err := json.Marshal(rec)
	if err != nil {
		return "", fmt.Errorf("links: encode %q: %w", s.key(rel), err)
	}
	return string(s.seal.sealValue(rel, v)), nil
}

// decode opens v, the value of the key rel, into rec and checks its
// version and contents. Its error wraps links.ErrCorrupt and names the
// key.
func (s *Store) decode(rel string, v []byte, rec record) error {
	plain, err := s.seal.openValue(rel, v)
	if err == nil {
		err = json.Unmarshal(plain, rec)
	}
	if err == nil && rec.version() != recordVersion {
		err = fmt.Errorf("version %d, want %d", rec.version(), recordVersion)
	}
	if err == nil {
		err = rec.check()
	}
	if err != nil {
		return s.corrupt(rel, err)
	}
	return nil
}

// corrupt is the error of the record under rel that cannot be used.
func (s *Store) corrupt(rel string, err error) error {
	return fmt.Errorf("%w %q: %w", links.ErrCorrupt, s.key(rel), err)
}

// parseGen reads the value of grantGenKey; an absent key is 0.
func (s *Store) parseGen(k kv) (uint64, error) {
	if !k.found() {
		return 0, nil
	}
	n, err := strconv.ParseUint(string(k.value), 10, 64)
	if err != nil {
		return 0, s.corrupt(grantGenKey, err)
	}
	return n, nil
}
