package record

import (
	"errors"
	"fmt"
	"slices"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
)

// User is stored under u/<user id>.
type User struct {
	V        int      `json:"v"`
	Active   string   `json:"active,omitempty"`
	Accounts []string `json:"accounts"`
	// QueueWhenFull is the user's default for what /pin does at the
	// limit: queue the rest (true) or skip it.
	QueueWhenFull bool `json:"queue_when_full,omitempty"`
}

func (r *User) version() int { return r.V }

func (r *User) check() error {
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

// User returns the record as the links of the user id.
func (r *User) User(id string) links.User {
	return links.User{ID: id, Active: r.Active, Accounts: slices.Clone(r.Accounts), QueueWhenFull: r.QueueWhenFull}
}

// Link adds accountID to the accounts of userID, whose record r is, if
// absent, and makes it the active one. A new account beyond
// links.MaxAccountsPerUser fails with an error wrapping
// links.ErrTooManyAccounts and leaves r as it was.
func (r *User) Link(userID, accountID string) error {
	if !slices.Contains(r.Accounts, accountID) {
		if len(r.Accounts) >= links.MaxAccountsPerUser {
			return fmt.Errorf("%w: user %q has linked %d accounts already; unlink one first",
				links.ErrTooManyAccounts, userID, len(r.Accounts))
		}
		r.Accounts = append(r.Accounts, accountID)
	}
	r.V, r.Active = Version, accountID
	return nil
}

// Unlink removes accountID from the accounts of userID, whose record r
// is. If it was the active account, the account linked after it becomes
// active (or, if it was the last one, the one before it; none when no
// account is left). It fails with an error wrapping links.ErrNotLinked
// when the user has not linked the account.
func (r *User) Unlink(userID, accountID string) error {
	i := slices.Index(r.Accounts, accountID)
	if i < 0 {
		return NotLinked(userID, accountID)
	}
	r.Accounts = slices.Delete(r.Accounts, i, i+1)
	if r.Active == accountID {
		r.Active = ""
		if n := len(r.Accounts); n > 0 {
			r.Active = r.Accounts[min(i, n-1)]
		}
	}
	return nil
}

// Links fails with an error wrapping links.ErrNotLinked unless userID,
// whose record r is, has linked accountID.
func (r *User) Links(userID, accountID string) error {
	if !slices.Contains(r.Accounts, accountID) {
		return NotLinked(userID, accountID)
	}
	return nil
}

// NotLinked is the error of a user who has not linked an account.
func NotLinked(userID, accountID string) error {
	return fmt.Errorf("%w: user %q has not linked account %q", links.ErrNotLinked, userID, accountID)
}

// NoAccounts is the error of a setting of a user who has linked no
// account.
func NoAccounts(userID string) error {
	return fmt.Errorf("%w: user %q has linked no account", links.ErrNotLinked, userID)
}

// Account is stored under a/<account id>.
type Account struct {
	V                int    `json:"v"`
	Username         string `json:"username"`
	DefaultBoard     string `json:"default_board,omitempty"`
	DefaultBoardName string `json:"default_board_name,omitempty"`
	RelinkNeeded     bool   `json:"relink_needed,omitempty"`
	// Users are the ids of the users who linked the account, in the
	// order they linked it.
	Users []string `json:"users"`
}

func (r *Account) version() int { return r.V }

func (r *Account) check() error {
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

// Account returns the record as the account id.
func (r *Account) Account(id string) links.Account {
	return links.Account{
		ID:               id,
		Username:         r.Username,
		DefaultBoard:     r.DefaultBoard,
		DefaultBoardName: r.DefaultBoardName,
		RelinkNeeded:     r.RelinkNeeded,
	}
}

// Link records in r, the record of acct (absent or not), that userID
// linked it: the username is replaced, RelinkNeeded cleared, userID
// added to the users if absent. An existing default board is kept;
// acct's is used only when the account has none.
func (r *Account) Link(userID string, acct links.Account) {
	r.V, r.Username, r.RelinkNeeded = Version, acct.Username, false
	if r.DefaultBoard == "" && acct.DefaultBoard != "" {
		r.DefaultBoard, r.DefaultBoardName = acct.DefaultBoard, acct.DefaultBoardName
	}
	if !slices.Contains(r.Users, userID) {
		r.Users = append(r.Users, userID)
	}
}

// Unlink removes userID from the users of the account and reports
// whether any is left.
func (r *Account) Unlink(userID string) bool {
	r.Users = slices.DeleteFunc(r.Users, func(id string) bool { return id == userID })
	return len(r.Users) > 0
}

// NoAccount is the error of an account that no user links.
func NoAccount(accountID string) error {
	return fmt.Errorf("%w: account %q is not linked", links.ErrNoToken, accountID)
}

// MissingAccount is why the missing record of accountID, which userID
// links, is corrupt.
func MissingAccount(userID string) error {
	return fmt.Errorf("missing, but user %q links it", userID)
}

// CheckIDs validates a user id and an account id, naming the one at
// fault.
func CheckIDs(userID, accountID string) error {
	if err := links.CheckID("user id", userID); err != nil {
		return err
	}
	return links.CheckID("account id", accountID)
}

// CheckLink checks the arguments of links.Directory.Link.
func CheckLink(userID string, acct links.Account, tok *oauth2.Token) error {
	if err := CheckIDs(userID, acct.ID); err != nil {
		return err
	}
	if err := links.CheckName("username", acct.Username); err != nil {
		return err
	}
	if acct.DefaultBoard != "" {
		if err := links.CheckID("default board id", acct.DefaultBoard); err != nil {
			return err
		}
	}
	if err := links.CheckName("default board name", acct.DefaultBoardName); err != nil {
		return err
	}
	return links.CheckToken(tok)
}

// CheckDefaultBoard checks the arguments of links.Directory.SetDefaultBoard.
func CheckDefaultBoard(userID, accountID, boardID, boardName string) error {
	if err := CheckIDs(userID, accountID); err != nil {
		return err
	}
	if boardID != "" {
		if err := links.CheckID("board id", boardID); err != nil {
			return err
		}
	} else if boardName != "" {
		return fmt.Errorf("%w: board name %q without a board id", links.ErrInvalid, boardName)
	}
	return links.CheckName("board name", boardName)
}
