package badgerlinks

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// User returns the links of the Discord user userID: the zero links.User with ID
// set when the user has linked nothing.
func (s *Store) User(ctx context.Context, userID string) (links.User, error) {
	if err := links.CheckID("user id", userID); err != nil {
		return links.User{}, err
	}
	u := links.User{ID: userID}
	err := s.view(ctx, "user", func(txn *badger.Txn) error {
		var rec record.User
		found, err := getRecord(txn, record.UserKey(userID), &rec)
		if found {
			u = rec.User(userID)
		}
		return err
	})
	if err != nil {
		return links.User{ID: userID}, err
	}
	return u, nil
}

// Accounts returns the accounts the user userID has linked, in the order
// they were linked; none when the user has linked nothing.
func (s *Store) Accounts(ctx context.Context, userID string) ([]links.Account, error) {
	if err := links.CheckID("user id", userID); err != nil {
		return nil, err
	}
	var out []links.Account
	err := s.view(ctx, "accounts", func(txn *badger.Txn) error {
		var u record.User
		if _, err := getRecord(txn, record.UserKey(userID), &u); err != nil {
			return err
		}
		for _, id := range u.Accounts {
			a, err := linkedAccount(txn, userID, id)
			if err != nil {
				return err
			}
			out = append(out, a.Account(id))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Account returns the linked account accountID. An account that no user
// links (never linked, or unlinked by all) fails with an error wrapping
// links.ErrNoToken.
func (s *Store) Account(ctx context.Context, accountID string) (links.Account, error) {
	if err := links.CheckID("account id", accountID); err != nil {
		return links.Account{}, err
	}
	var out links.Account
	err := s.view(ctx, "account", func(txn *badger.Txn) error {
		var a record.Account
		found, err := getRecord(txn, record.AccountKey(accountID), &a)
		if err != nil {
			return err
		}
		if !found {
			return record.NoAccount(accountID)
		}
		out = a.Account(accountID)
		return nil
	})
	if err != nil {
		return links.Account{}, err
	}
	return out, nil
}

// Link records that the user userID linked the account acct with the
// token tok, all in one durable transaction: the account's token and
// username are stored (replacing earlier ones), its RelinkNeeded flag is
// cleared, the account is added to the user's accounts if absent, and it
// becomes the user's active account. An existing default board is kept;
// acct.DefaultBoard and DefaultBoardName are used only when the account
// has none.
//
// Linking a new account when the user already has links.MaxAccountsPerUser
// fails with an error wrapping links.ErrTooManyAccounts. Rate limits are not
// touched.
func (s *Store) Link(ctx context.Context, userID string, acct links.Account, tok *oauth2.Token) error {
	if err := record.CheckLink(userID, acct, tok); err != nil {
		return err
	}
	uk, ak, tk := record.UserKey(userID), record.AccountKey(acct.ID), record.TokenKey(acct.ID)
	err := s.update(ctx, "link", func(txn *badger.Txn) error {
		var u record.User
		if _, err := getRecord(txn, uk, &u); err != nil {
			return err
		}
		if err := u.Link(userID, acct.ID); err != nil {
			return err
		}
		var a record.Account
		if _, err := getRecord(txn, ak, &a); err != nil {
			return err
		}
		a.Link(userID, acct)

		if err := setRecord(txn, uk, &u); err != nil {
			return err
		}
		if err := setRecord(txn, ak, &a); err != nil {
			return err
		}
		var old record.Token
		if _, err := getRecord(txn, tk, &old); err != nil {
			return err
		}
		gen, err := nextGrantGen(txn, old.Gen)
		if err != nil {
			return err
		}
		return setRecord(txn, tk, record.NewToken(tok, gen))
	})
	if err != nil {
		return err
	}
	s.logger(ctx).Info().Str("user", userID).Str("account", acct.ID).Msg("pinterest account linked")
	return nil
}

// Unlink removes the account accountID from the user userID's accounts;
// it fails with an error wrapping links.ErrNotLinked when the user has not
// linked it. If it was the active account, the account linked after it
// becomes active (or, if it was the last one, the one before it; none when
// no account is left). When no user links the account any more, its
// record and token are deleted. Rate limits are not touched: unlinking and
// linking again never resets a limit.
func (s *Store) Unlink(ctx context.Context, userID, accountID string) error {
	if err := record.CheckIDs(userID, accountID); err != nil {
		return err
	}
	uk, ak := record.UserKey(userID), record.AccountKey(accountID)
	var forgotten, orphan bool
	err := s.update(ctx, "unlink", func(txn *badger.Txn) error {
		forgotten, orphan = false, false
		var u record.User
		if _, err := getRecord(txn, uk, &u); err != nil {
			return err
		}
		if err := u.Unlink(userID, accountID); err != nil {
			return err
		}
		if len(u.Accounts) == 0 {
			if err := deleteKey(txn, uk); err != nil {
				return err
			}
		} else if err := setRecord(txn, uk, &u); err != nil {
			return err
		}

		var a record.Account
		found, err := getRecord(txn, ak, &a)
		if err != nil {
			return err
		}
		orphan = !found
		if a.Unlink(userID) && found {
			return setRecord(txn, ak, &a)
		}
		forgotten = true
		if err := deleteKey(txn, ak); err != nil {
			return err
		}
		return deleteKey(txn, record.TokenKey(accountID))
	})
	if err != nil {
		return err
	}
	if orphan {
		s.logger(ctx).Warn().Str("user", userID).Str("account", accountID).
			Msg("unlinked account had no account record; its token was deleted")
	}
	s.logger(ctx).Info().Str("user", userID).Str("account", accountID).Bool("token_deleted", forgotten).
		Msg("pinterest account unlinked")
	return nil
}

// SetActive makes accountID the account the user userID pins with. It
// fails with an error wrapping links.ErrNotLinked unless the user has linked
// that account: a user can never switch to an account they have not
// linked.
func (s *Store) SetActive(ctx context.Context, userID, accountID string) error {
	if err := record.CheckIDs(userID, accountID); err != nil {
		return err
	}
	return s.update(ctx, "set active", func(txn *badger.Txn) error {
		u, err := linkedUser(txn, userID, accountID)
		if err != nil {
			return err
		}
		if u.Active == accountID {
			return nil
		}
		u.Active = accountID
		return setRecord(txn, record.UserKey(userID), &u)
	})
}

// SetQueueWhenFull sets what /pin does by default when the limit refuses
// pictures: queue them (on) or skip them. It fails with an error wrapping
// links.ErrNotLinked when the user has linked no account.
func (s *Store) SetQueueWhenFull(ctx context.Context, userID string, on bool) error {
	if err := links.CheckID("user id", userID); err != nil {
		return err
	}
	return s.update(ctx, "set when full", func(txn *badger.Txn) error {
		var u record.User
		found, err := getRecord(txn, record.UserKey(userID), &u)
		if err != nil {
			return err
		}
		if !found || len(u.Accounts) == 0 {
			return record.NoAccounts(userID)
		}
		if u.QueueWhenFull == on {
			return nil
		}
		u.QueueWhenFull = on
		return setRecord(txn, record.UserKey(userID), &u)
	})
}

// SetDefaultBoard sets the board pins of account accountID go to when a
// command names none, for every user of that account; boardID "" (with
// boardName "") clears it. It fails with an error wrapping links.ErrNotLinked
// unless the user userID has linked the account.
func (s *Store) SetDefaultBoard(ctx context.Context, userID, accountID, boardID, boardName string) error {
	if err := record.CheckDefaultBoard(userID, accountID, boardID, boardName); err != nil {
		return err
	}
	return s.update(ctx, "set default board", func(txn *badger.Txn) error {
		if _, err := linkedUser(txn, userID, accountID); err != nil {
			return err
		}
		a, err := linkedAccount(txn, userID, accountID)
		if err != nil {
			return err
		}
		a.DefaultBoard, a.DefaultBoardName = boardID, boardName
		return setRecord(txn, record.AccountKey(accountID), &a)
	})
}

// MarkRelinkNeeded flags the account accountID as needing a new link,
// after Pinterest declared its grant invalid; Link clears the flag. An
// account no user links fails with an error wrapping links.ErrNoToken.
func (s *Store) MarkRelinkNeeded(ctx context.Context, accountID string) error {
	return s.markRelinkNeeded(ctx, accountID, 0, false)
}

// MarkGrantRelinkNeeded is MarkRelinkNeeded for generation gen of the
// account's grant (see Grant): when the account has been linked again
// since, the newer grant is not condemned and nothing changes.
func (s *Store) MarkGrantRelinkNeeded(ctx context.Context, accountID string, gen uint64) error {
	return s.markRelinkNeeded(ctx, accountID, gen, true)
}

func (s *Store) markRelinkNeeded(ctx context.Context, accountID string, gen uint64, checkGen bool) error {
	if err := links.CheckID("account id", accountID); err != nil {
		return err
	}
	var changed bool
	err := s.update(ctx, "mark relink needed", func(txn *badger.Txn) error {
		changed = false
		var a record.Account
		found, err := getRecord(txn, record.AccountKey(accountID), &a)
		if err != nil {
			return err
		}
		if !found {
			return record.NoAccount(accountID)
		}
		if a.RelinkNeeded {
			return nil
		}
		if checkGen {
			var tr record.Token
			if _, err := getRecord(txn, record.TokenKey(accountID), &tr); err != nil {
				return err
			}
			if tr.Gen != gen {
				return nil
			}
		}
		changed = true
		a.RelinkNeeded = true
		return setRecord(txn, record.AccountKey(accountID), &a)
	})
	if err == nil && changed {
		s.logger(ctx).Warn().Str("account", accountID).Msg("pinterest account needs a new link")
	}
	return err
}

// Users calls fn with every user who has linked at least one account, in
// byte order of their ids, until fn returns an error, which Users then
// returns. It reads one consistent snapshot: writes made during the scan
// are not seen. fn may call the Store's other methods but not Close.
func (s *Store) Users(ctx context.Context, fn func(links.User) error) error {
	return s.scan(ctx, "users", record.UserPrefix, func(id, key string, v []byte) error {
		var rec record.User
		if err := record.Decode(v, &rec); err != nil {
			return record.Corrupt(key, err)
		}
		return fn(rec.User(id))
	})
}

// AllAccounts calls fn with every linked account, in byte order of their
// ids, until fn returns an error, which AllAccounts then returns. Like
// Users, it reads one snapshot, and fn must not call Close.
func (s *Store) AllAccounts(ctx context.Context, fn func(links.Account) error) error {
	return s.scan(ctx, "all accounts", record.AccountPrefix, func(id, key string, v []byte) error {
		var rec record.Account
		if err := record.Decode(v, &rec); err != nil {
			return record.Corrupt(key, err)
		}
		return fn(rec.Account(id))
	})
}

// scan calls fn with the id, key and value of each record under prefix.
func (s *Store) scan(ctx context.Context, op, prefix string, fn func(id, key string, v []byte) error) error {
	return s.view(ctx, op, func(txn *badger.Txn) error {
		p := []byte(prefix)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: p, PrefetchValues: true, PrefetchSize: 64})
		defer it.Close()
		for it.Rewind(); it.ValidForPrefix(p); it.Next() {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("links: %s: %w", op, err)
			}
			item := it.Item()
			key := string(item.Key())
			v, err := item.ValueCopy(nil)
			if err != nil {
				return fmt.Errorf("links: read %q: %w", key, err)
			}
			if err := fn(key[len(prefix):], key, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// linkedUser reads userID's record and fails with an error wrapping
// links.ErrNotLinked unless the user has linked accountID.
func linkedUser(txn *badger.Txn, userID, accountID string) (record.User, error) {
	var u record.User
	if _, err := getRecord(txn, record.UserKey(userID), &u); err != nil {
		return record.User{}, err
	}
	if err := u.Links(userID, accountID); err != nil {
		return record.User{}, err
	}
	return u, nil
}

// linkedAccount reads the record of accountID, which userID links: a
// missing record is corruption.
func linkedAccount(txn *badger.Txn, userID, accountID string) (record.Account, error) {
	var a record.Account
	found, err := getRecord(txn, record.AccountKey(accountID), &a)
	if err != nil {
		return record.Account{}, err
	}
	if !found {
		return record.Account{}, record.Corrupt(record.AccountKey(accountID), record.MissingAccount(userID))
	}
	return a, nil
}

// nextGrantGen returns a grant generation above every one handed out
// before in the store, and above prev (a record written before the
// store-wide counter existed), and records it.
func nextGrantGen(txn *badger.Txn, prev uint64) (uint64, error) {
	var last uint64
	item, err := txn.Get([]byte(record.GrantGenKey))
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
	case err != nil:
		return 0, fmt.Errorf("links: read %q: %w", record.GrantGenKey, err)
	default:
		if err := item.Value(func(v []byte) error {
			if len(v) != 8 {
				return fmt.Errorf("links: %q holds %d bytes, want 8", record.GrantGenKey, len(v))
			}
			last = binary.BigEndian.Uint64(v)
			return nil
		}); err != nil {
			return 0, err
		}
	}
	gen := max(last, prev) + 1
	if err := txn.Set([]byte(record.GrantGenKey), binary.BigEndian.AppendUint64(nil, gen)); err != nil {
		return 0, fmt.Errorf("links: write %q: %w", record.GrantGenKey, err)
	}
	return gen, nil
}
