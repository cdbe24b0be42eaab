package record

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
)

// Token is stored under t/<account id>.
type Token struct {
	V            int       `json:"v"`
	AccessToken  string    `json:"access_token,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	TokenType    string    `json:"token_type,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Gen is the generation of the grant: Link raises it, refreshes keep
	// it. Records written before it existed read as generation 0.
	Gen uint64 `json:"gen,omitempty"`
}

func (r *Token) version() int { return r.V }

func (r *Token) check() error {
	if r.AccessToken == "" && r.RefreshToken == "" {
		return errors.New("token has neither access nor refresh token")
	}
	return nil
}

// NewToken returns the record of tok, of generation gen.
func NewToken(tok *oauth2.Token, gen uint64) *Token {
	return &Token{
		V:            Version,
		AccessToken:  tok.AccessToken,
		RefreshToken: tok.RefreshToken,
		TokenType:    tok.TokenType,
		Expiry:       tok.Expiry.Round(0).UTC(),
		Gen:          gen,
	}
}

// Token returns the record as an OAuth token.
func (r *Token) Token() *oauth2.Token {
	return &oauth2.Token{
		AccessToken:  r.AccessToken,
		RefreshToken: r.RefreshToken,
		TokenType:    r.TokenType,
		Expiry:       r.Expiry,
	}
}

// NoToken is the error of an account with no token stored.
func NoToken(accountID string) error {
	return fmt.Errorf("%w: account %q", links.ErrNoToken, accountID)
}

// NotSaved is the error of a token not saved because no user links
// accountID.
func NotSaved(accountID string) error {
	return fmt.Errorf("%w: account %q is not linked; token not saved", links.ErrNoToken, accountID)
}

// CheckGen fails with an error wrapping links.ErrRelinked when a token
// refreshed from generation gen of the grant of accountID may not
// replace the stored one, r: checkGen is set and the account is at
// another generation.
func (r *Token) CheckGen(accountID string, gen uint64, checkGen bool) error {
	if checkGen && r.Gen != gen {
		return fmt.Errorf("%w: account %q is at grant %d, the token is of grant %d; token not saved",
			links.ErrRelinked, accountID, r.Gen, gen)
	}
	return nil
}
