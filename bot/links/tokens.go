package links

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/pinterest"
)

// Token returns the stored OAuth token of account accountID, or an error
// wrapping ErrNoToken when none is stored (the account was never linked,
// or every user unlinked it).
func (s *Store) Token(ctx context.Context, accountID string) (*oauth2.Token, error) {
	if err := checkID("account id", accountID); err != nil {
		return nil, err
	}
	var tok *oauth2.Token
	err := s.view(ctx, "token", func(txn *badger.Txn) error {
		var rec tokenRecord
		found, err := getRecord(txn, tokenKey(accountID), &rec)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: account %q", ErrNoToken, accountID)
		}
		tok = rec.token()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tok, nil
}

// SaveToken replaces the token of the linked account accountID with tok;
// the token is on disk when SaveToken returns nil. It fails with an error
// wrapping ErrNoToken when no user links the account (it was unlinked
// while the token was being refreshed), so that an unlinked account's
// token is never written back. It does not clear RelinkNeeded: only Link
// does.
func (s *Store) SaveToken(ctx context.Context, accountID string, tok *oauth2.Token) error {
	if err := checkID("account id", accountID); err != nil {
		return err
	}
	if err := checkToken(tok); err != nil {
		return err
	}
	tr := newTokenRecord(tok)
	err := s.update(ctx, "save token", func(txn *badger.Txn) error {
		_, err := txn.Get([]byte(accountKey(accountID)))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("%w: account %q is not linked; token not saved", ErrNoToken, accountID)
		}
		if err != nil {
			return fmt.Errorf("links: read %q: %w", accountKey(accountID), err)
		}
		return setRecord(txn, tokenKey(accountID), tr)
	})
	if err != nil {
		return err
	}
	s.log.Debug().Str("account", accountID).Msg("token saved")
	return nil
}

// Saver returns the pinterest.TokenSaver of account accountID: it saves
// each rotated token with SaveToken.
func (s *Store) Saver(accountID string) pinterest.TokenSaver {
	return func(ctx context.Context, tok *oauth2.Token) error {
		return s.SaveToken(ctx, accountID, tok)
	}
}
