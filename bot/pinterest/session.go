package pinterest

import (
	"context"
	"errors"
	"sync"

	"golang.org/x/oauth2"
)

// TokenSaver persists tok, the token that has just replaced an account's
// previous one. Pinterest rotates refresh tokens: the previous refresh
// token stopped working when tok was issued, so tok must be durable when
// TokenSaver returns nil. The Client does not use tok's access token before
// that. TokenSaver must not keep or modify tok after it returns.
type TokenSaver func(ctx context.Context, tok *oauth2.Token) error

// Session is one Pinterest account's grant as the Client uses it: the
// current token and the TokenSaver that persists each rotation. Create it
// with NewSession from the stored token; use it with one Client.
//
// A Session is safe for simultaneous use by multiple goroutines. Refreshes
// are serialized, so a refresh token is sent to Pinterest at most once.
// When saving a refreshed token fails, the Session keeps that token aside
// and offers it to the TokenSaver again on its next use, before anything
// else; it never refreshes again while such a token is unsaved.
type Session struct {
	save TokenSaver
	// refreshing is a one-slot semaphore held while refreshing and saving;
	// unlike a mutex, waiting for it respects the caller's context.
	refreshing chan struct{}

	mu      sync.Mutex
	tok     *oauth2.Token // current token, persisted
	pending *oauth2.Token // refreshed token not yet saved
	reauth  bool          // Pinterest declared the grant invalid

	// pauses are the account's rate-limit pauses (see Client.pausesOf).
	pauses pauses
}

// NewSession returns a Session starting from tok, the account's stored
// token, that persists rotated tokens through save. tok must hold an access
// token or a refresh token; it is copied.
func NewSession(tok *oauth2.Token, save TokenSaver) (*Session, error) {
	if tok == nil || (tok.AccessToken == "" && tok.RefreshToken == "") {
		return nil, errors.New("pinterest: NewSession: token has neither access nor refresh token")
	}
	if save == nil {
		return nil, errors.New("pinterest: NewSession: TokenSaver is nil")
	}
	return &Session{
		save:       save,
		refreshing: make(chan struct{}, 1),
		tok:        copyToken(tok),
	}, nil
}

// Token returns a copy of the session's current token: the last one
// persisted by the TokenSaver, or the one the Session started from.
func (s *Session) Token() *oauth2.Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	return copyToken(s.tok)
}

// ReauthRequired reports whether Pinterest has declared the session's
// grant invalid; every request then fails with ErrReauthRequired.
func (s *Session) ReauthRequired() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reauth
}

func copyToken(t *oauth2.Token) *oauth2.Token {
	c := *t
	return &c
}
