package badgerlinks

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
)

// User returns the links of the Discord user userID: the zero links.User with ID
// set when the user has linked nothing.
func (s *Store) User(ctx context.Context, userID string) (links.User, error) {
	if err := links.CheckID("user id", userID); err != nil {
		return links.User{}, err
	}
	u := links.User{ID: userID}
	err := s.view(ctx, "user", func(txn *badger.Txn) error {
		var rec userRecord
		found, err := getRecord(txn, userKey(userID), &rec)
		if found {
			u = rec.user(userID)
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
		var u userRecord
		if _, err := getRecord(txn, userKey(userID), &u); err != nil {
			return err
		}
		for _, id := range u.Accounts {
			a, err := linkedAccount(txn, userID, id)
			if err != nil {
				return err
			}
			out = append(out, a.account(id))
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
		var a accountRecord
		found, err := getRecord(txn, accountKey(accountID), &a)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: account %q is not linked", links.ErrNoToken, accountID)
		}
		out = a.account(accountID)
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
	if err := checkLink(userID, acct, tok); err != nil {
		return err
	}
	tr := newTokenRecord(tok)
	err := s.update(ctx, "link", func(txn *badger.Txn) error {
		var u userRecord
		if _, err := getRecord(txn, userKey(userID), &u); err != nil {
			return err
		}
		if !slices.Contains(u.Accounts, acct.ID) {
			if len(u.Accounts) >= links.MaxAccountsPerUser {
				return fmt.Errorf("%w: user %q has linked %d accounts already; unlink one first",
					links.ErrTooManyAccounts, userID, len(u.Accounts))
			}
			u.Accounts = append(u.Accounts, acct.ID)
		}
		u.V, u.Active = recordVersion, acct.ID

		var a accountRecord
		if _, err := getRecord(txn, accountKey(acct.ID), &a); err != nil {
			return err
		}
		a.V, a.Username, a.RelinkNeeded = recordVersion, acct.Username, false
		if a.DefaultBoard == "" && acct.DefaultBoard != "" {
			a.DefaultBoard, a.DefaultBoardName = acct.DefaultBoard, acct.DefaultBoardName
		}
		if !slices.Contains(a.Users, userID) {
			a.Users = append(a.Users, userID)
		}

		if err := setRecord(txn, userKey(userID), &u); err != nil {
			return err
		}
		if err := setRecord(txn, accountKey(acct.ID), &a); err != nil {
			return err
		}
		var old tokenRecord
		if _, err := getRecord(txn, tokenKey(acct.ID), &old); err != nil {
			return err
		}
		gen, err := nextGrantGen(txn, old.Gen)
		if err != nil {
			return err
		}
		tr.Gen = gen
		return setRecord(txn, tokenKey(acct.ID), tr)
	})
	if err != nil {
		return err
	}
	s.logger(ctx).Info().Str("user", userID).Str("account", acct.ID).Msg("pinterest account linked")
	return nil
}

func checkLink(userID string, acct links.Account, tok *oauth2.Token) error {
	if err := links.CheckID("user id", userID); err != nil {
		return err
	}
	if err := links.CheckID("account id", acct.ID); err != nil {
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

// Unlink removes the account accountID from the user userID's accounts;
// it fails with an error wrapping links.ErrNotLinked when the user has not
// linked it. If it was the active account, the account linked after it
// becomes active (or, if it was the last one, the one before it; none when
// no account is left). When no user links the account any more, its
// record and token are deleted. Rate limits are not touched: unlinking and
// linking again never resets a limit.
func (s *Store) Unlink(ctx context.Context, userID, accountID string) error {
	if err := checkIDs(userID, accountID); err != nil {
		return err
	}
	var forgotten, orphan bool
	err := s.update(ctx, "unlink", func(txn *badger.Txn) error {
		forgotten, orphan = false, false
		var u userRecord
		if _, err := getRecord(txn, userKey(userID), &u); err != nil {
			return err
		}
		i := slices.Index(u.Accounts, accountID)
		if i < 0 {
			return notLinked(userID, accountID)
		}
		u.Accounts = slices.Delete(u.Accounts, i, i+1)
		if u.Active == accountID {
			u.Active = ""
			if n := len(u.Accounts); n > 0 {
				u.Active = u.Accounts[min(i, n-1)]
			}
		}
		if len(u.Accounts) == 0 {
			if err := deleteKey(txn, userKey(userID)); err != nil {
				return err
			}
		} else if err := setRecord(txn, userKey(userID), &u); err != nil {
			return err
		}

		var a accountRecord
		found, err := getRecord(txn, accountKey(accountID), &a)
		if err != nil {
			return err
		}
		orphan = !found
		a.Users = slices.DeleteFunc(a.Users, func(id string) bool { return id == userID })
		if found && len(a.Users) > 0 {
			return setRecord(txn, accountKey(accountID), &a)
		}
		forgotten = true
		if err := deleteKey(txn, accountKey(accountID)); err != nil {
			return err
		}
		return deleteKey(txn, tokenKey(accountID))
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
	if err := checkIDs(userID, accountID); err != nil {
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
		return setRecord(txn, userKey(userID), &u)
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
		var u userRecord
		found, err := getRecord(txn, userKey(userID), &u)
		if err != nil {
			return err
		}
		if !found || len(u.Accounts) == 0 {
			return fmt.Errorf("%w: user %q has linked no account", links.ErrNotLinked, userID)
		}
		if u.QueueWhenFull == on {
			return nil
		}
		u.QueueWhenFull = on
		return setRecord(txn, userKey(userID), &u)
	})
}

// SetDefaultBoard sets the board pins of account accountID go to when a
// command names none, for every user of that account; boardID "" (with
// boardName "") clears it. It fails with an error wrapping links.ErrNotLinked
// unless the user userID has linked the account.
func (s *Store) SetDefaultBoard(ctx context.Context, userID, accountID, boardID, boardName string) error {
	if err := checkIDs(userID, accountID); err != nil {
		return err
	}
	if boardID != "" {
		if err := links.CheckID("board id", boardID); err != nil {
			return err
		}
	} else if boardName != "" {
		return fmt.Errorf("%w: board name %q without a board id", links.ErrInvalid, boardName)
	}
	if err := links.CheckName("board name", boardName); err != nil {
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
		return setRecord(txn, accountKey(accountID), &a)
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
		var a accountRecord
		found, err := getRecord(txn, accountKey(accountID), &a)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: account %q is not linked", links.ErrNoToken, accountID)
		}
		if a.RelinkNeeded {
			return nil
		}
		if checkGen {
			var tr tokenRecord
			if _, err := getRecord(txn, tokenKey(accountID), &tr); err != nil {
				return err
			}
			if tr.Gen != gen {
				return nil
			}
		}
		changed = true
		a.RelinkNeeded = true
		return setRecord(txn, accountKey(accountID), &a)
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
	return s.scan(ctx, "users", userPrefix, func(id, key string, v []byte) error {
		var rec userRecord
		if err := decodeRecord(v, &rec); err != nil {
			return corrupt(key, err)
		}
		return fn(rec.user(id))
	})
}

// AllAccounts calls fn with every linked account, in byte order of their
// ids, until fn returns an error, which AllAccounts then returns. Like
// Users, it reads one snapshot, and fn must not call Close.
func (s *Store) AllAccounts(ctx context.Context, fn func(links.Account) error) error {
	return s.scan(ctx, "all accounts", accountPrefix, func(id, key string, v []byte) error {
		var rec accountRecord
		if err := decodeRecord(v, &rec); err != nil {
			return corrupt(key, err)
		}
		return fn(rec.account(id))
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

// checkIDs validates a user id and an account id, naming the one at fault.
func checkIDs(userID, accountID string) error {
	if err := links.CheckID("user id", userID); err != nil {
		return err
	}
	return links.CheckID("account id", accountID)
}

// linkedUser reads userID's record and fails with an error wrapping
// links.ErrNotLinked unless the user has linked accountID.
func linkedUser(txn *badger.Txn, userID, accountID string) (userRecord, error) {
	var u userRecord
	if _, err := getRecord(txn, userKey(userID), &u); err != nil {
		return userRecord{}, err
	}
	if !slices.Contains(u.Accounts, accountID) {
		return userRecord{}, notLinked(userID, accountID)
	}
	return u, nil
}

func notLinked(userID, accountID string) error {
	return fmt.Errorf("%w: user %q has not linked account %q", links.ErrNotLinked, userID, accountID)
}

// linkedAccount reads the record of accountID, which userID links: a
// missing record is corruption.
func linkedAccount(txn *badger.Txn, userID, accountID string) (accountRecord, error) {
	var a accountRecord
	found, err := getRecord(txn, accountKey(accountID), &a)
	if err != nil {
		return accountRecord{}, err
	}
	if !found {
		return accountRecord{}, corrupt(accountKey(accountID), fmt.Errorf("missing, but user %q links it", userID))
	}
	return a, nil
}

// nextGrantGen returns a grant generation above every one handed out
// before in the store, and above prev (a record written before the
// store-wide counter existed), and records it.
func nextGrantGen(txn *badger.Txn, prev uint64) (uint64, error) {
	var last uint64
	item, err := txn.Get([]byte(grantGenKey))
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
	case err != nil:
		return 0, fmt.Errorf("links: read %q: %w", grantGenKey, err)
	default:
		if err := item.Value(func(v []byte) error {
			if len(v) != 8 {
				return fmt.Errorf("links: %q holds %d bytes, want 8", grantGenKey, len(v))
			}
			last = binary.BigEndian.Uint64(v)
			return nil
		}); err != nil {
			return 0, err
		}
	}
	gen := max(last, prev) + 1
	if err := txn.Set([]byte(grantGenKey), binary.BigEndian.AppendUint64(nil, gen)); err != nil {
		return 0, fmt.Errorf("links: write %q: %w", grantGenKey, err)
	}
	return gen, nil
}
