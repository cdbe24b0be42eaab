package pinterest

import (
	"context"
	"fmt"
	"net/http"
)

// Account is the Pinterest user behind a Session.
type Account struct {
	// ID is Pinterest's numeric user account id, as a string.
	ID       string
	Username string
	// AccountType is PINNER or BUSINESS.
	AccountType string
	// ProfileImage is the address of the account's profile picture, ""
	// when Pinterest gives none.
	ProfileImage string
}

type accountJSON struct {
	ID           string `json:"id"`
	Username     string `json:"username"`
	AccountType  string `json:"account_type"`
	ProfileImage string `json:"profile_image"`
}

// UserAccount returns the account of s (GET /user_account).
func (c *Client) UserAccount(ctx context.Context, s *Session) (Account, error) {
	var a accountJSON
	if err := c.do(ctx, s, call{method: http.MethodGet, path: "/user_account"}, &a); err != nil {
		return Account{}, err
	}
	if a.ID == "" {
		return Account{}, fmt.Errorf("pinterest: GET /user_account: %w", errNoID)
	}
	return Account(a), nil
}
