package etcdlinks

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// Token returns the stored OAuth token of account accountID, or an error
// wrapping links.ErrNoToken when none is stored (the account was never
// linked, or every user unlinked it). One request.
func (s *Store) Token(ctx context.Context, accountID string) (*oauth2.Token, error) {
	tok, _, err := s.Grant(ctx, accountID)
	return tok, err
}

// Grant returns the stored OAuth token of account accountID, as Token
// does, and the generation of its grant: a number that Link raises each
// time the account is authorized again and that saving a refreshed token
// keeps. A session built from a grant saves its refreshed tokens with
// links.GrantSaver. One request.
func (s *Store) Grant(ctx context.Context, accountID string) (*oauth2.Token, uint64, error) {
	if err := links.CheckID("account id", accountID); err != nil {
		return nil, 0, err
	}
	tk := record.TokenKey(accountID)
	var rec record.Token
	err := s.lookup(ctx, "token", []read{readKey(tk)}, func(v *view) error {
		found, err := s.record(v, tk, &rec)
		if err == nil && !found {
			err = record.NoToken(accountID)
		}
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return rec.Token(), rec.Gen, nil
}

// SaveToken replaces the token of the linked account accountID with tok,
// keeping its grant generation; the token is committed to etcd (a quorum
// of its members) when SaveToken returns nil. It fails with an error
// wrapping links.ErrNoToken when no user links the account (it was
// unlinked while the token was being refreshed), so that an unlinked
// account's token is never written back. It does not clear RelinkNeeded:
// only Link does. Two requests when nothing races it.
func (s *Store) SaveToken(ctx context.Context, accountID string, tok *oauth2.Token) error {
	return s.saveToken(ctx, accountID, tok, 0, false)
}

// SaveGrantToken is SaveToken for a token refreshed from generation gen
// of the account's grant: when the account has been linked again since,
// it saves nothing and fails with an error wrapping links.ErrRelinked, so
// that a refresh of the old grant never replaces the new one.
func (s *Store) SaveGrantToken(ctx context.Context, accountID string, gen uint64, tok *oauth2.Token) error {
	return s.saveToken(ctx, accountID, tok, gen, true)
}

func (s *Store) saveToken(ctx context.Context, accountID string, tok *oauth2.Token, gen uint64, checkGen bool) error {
	if err := links.CheckID("account id", accountID); err != nil {
		return err
	}
	if err := links.CheckToken(tok); err != nil {
		return err
	}
	ak, tk := record.AccountKey(accountID), record.TokenKey(accountID)
	// The account's record is read for its presence only: a default
	// board set meanwhile is no reason to try again.
	reads := []read{readExists(ak), readKey(tk)}
	err := s.update(ctx, "save token", reads, func(_ context.Context, v *view) ([]clientv3.Op, error) {
		if !v.get(ak).found() {
			return nil, record.NotSaved(accountID)
		}
		var old record.Token
		if _, err := s.record(v, tk, &old); err != nil {
			return nil, err
		}
		if err := old.CheckGen(accountID, gen, checkGen); err != nil {
			return nil, err
		}
		return s.puts(map[string]record.Record{tk: record.NewToken(tok, old.Gen)})
	})
	if err != nil {
		return err
	}
	s.logger(ctx).Debug().Str("account", accountID).Msg("token saved")
	return nil
}
