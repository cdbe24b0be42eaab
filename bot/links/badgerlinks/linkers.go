package badgerlinks

import (
	"context"
	"slices"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
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
		var a record.Account
		found, err := getRecord(txn, record.AccountKey(accountID), &a)
		if err != nil {
			return err
		}
		if !found {
			return record.NoAccount(accountID)
		}
		out, users = a.Account(accountID), slices.Clone(a.Users)
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
	return s.scan(ctx, "all account users", record.AccountPrefix, func(id, key string, v []byte) error {
		var rec record.Account
		if err := record.Decode(v, &rec); err != nil {
			return record.Corrupt(key, err)
		}
		return fn(rec.Account(id), slices.Clone(rec.Users))
	})
}
