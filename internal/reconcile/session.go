package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
)

// ErrTokenDue means an account's stored access token expires too soon to
// be used without a refresh, which only the bot's own Session of the
// account may make: the account waits for the bot's next use of it.
var ErrTokenDue = errors.New("reconcile: the access token is due for renewal by the bot")

// errNoRefresh is what a read-only Session's TokenSaver answers: it
// never has a token to save, since it has no refresh token to rotate.
var errNoRefresh = errors.New("reconcile: a read-only session does not refresh")

// ReadOnlySessions builds the Sessions the listings use from the tokens
// stored in st: each holds the account's access token and no refresh
// token, so that it can never rotate the grant the bot's own Session
// holds (a refresh would make the bot's refresh token die). An account
// whose access token expires within margin of now fails with ErrTokenDue;
// one whose token Pinterest refuses fails its listing with
// pinterest.ErrReauthRequired, which says nothing of the grant itself
// (the bot renews the token at its next use, or finds the grant gone).
//
// Each account's Session is kept while its stored access token stays the
// same, so that the pauses Pinterest's rate-limit headers announce for it
// carry from one round to the next; Forget drops the others. It is safe
// for simultaneous use.
type ReadOnlySessions struct {
	st     links.Tokens
	now    func() time.Time
	margin time.Duration

	mu sync.Mutex
	m  map[string]readOnly
}

type readOnly struct {
	access string
	s      *pinterest.Session
}

// NewReadOnlySessions returns the read-only Sessions of the tokens in st;
// now is the clock the tokens' expiry is compared with.
func NewReadOnlySessions(st links.Tokens, now func() time.Time, margin time.Duration) *ReadOnlySessions {
	return &ReadOnlySessions{st: st, now: now, margin: margin, m: make(map[string]readOnly)}
}

// Session returns account's read-only Session.
func (r *ReadOnlySessions) Session(ctx context.Context, account string) (*pinterest.Session, error) {
	tok, err := r.st.Token(ctx, account)
	if err != nil {
		r.drop(account)
		return nil, err
	}
	if tok.AccessToken == "" || (!tok.Expiry.IsZero() && !tok.Expiry.After(r.now().Add(r.margin))) {
		return nil, fmt.Errorf("%w: account %s", ErrTokenDue, account)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.m[account]; ok && c.access == tok.AccessToken {
		return c.s, nil
	}
	s, err := pinterest.NewSession(&oauth2.Token{AccessToken: tok.AccessToken, TokenType: tok.TokenType, Expiry: tok.Expiry},
		func(context.Context, *oauth2.Token) error { return errNoRefresh })
	if err != nil {
		return nil, err
	}
	r.m[account] = readOnly{access: tok.AccessToken, s: s}
	return s, nil
}

// Forget drops the Sessions of the accounts keep does not name, so that
// the cache holds no more than the accounts a round looks at.
func (r *ReadOnlySessions) Forget(keep map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for a := range r.m {
		if !keep[a] {
			delete(r.m, a)
		}
	}
}

func (r *ReadOnlySessions) drop(account string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, account)
}
