package badgerlinks

import (
	"context"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/bot/links"
)

// AccountUsers returns the linked account accountID and the ids of the
// Discord users who link it, in the order they linked it. An account that
// no user links fails with an error wrapping links.ErrNoToken, as links.Account does.
func (s *Store) AccountUsers(ctx context.Context, accountID string) (links.Account, []string, error) {
	if err := links.CheckID("account id", accountID); err != nil {
		return links.Account{}, nil, err
	}
	var out links.Account
	var users []string
	err := s.view(ctx, "account users", func(txn *badger.Txn) error {
		var a accountRecord
		found, err := getRecord(txn, accountKey(accountID), &a)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: account %q is not linked", links.ErrNoToken, accountID)
		}
		out, users = a.account(accountID), slices.Clone(a.Users)
		return nil
	})
	if err != nil {
		return links.Account{}, nil, err
	}
	return out, users, nil
}

// AllAccountUsers calls fn with every linked account and the ids of the
// Discord users who link it, in byte order of the accounts' ids, until
// fn returns an error, which AllAccountUsers then returns. Like
// AllAccounts, it reads one snapshot, and fn must not call Close.
func (s *Store) AllAccountUsers(ctx context.Context, fn func(links.Account, []string) error) error {
	return s.scan(ctx, "all account users", accountPrefix, func(id, key string, v []byte) error {
		var rec accountRecord
		if err := decodeRecord(v, &rec); err != nil {
			return corrupt(key, err)
		}
		return fn(rec.account(id), slices.Clone(rec.Users))
	})
}
