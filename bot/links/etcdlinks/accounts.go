package etcdlinks

import (
	"context"
	"slices"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
)

// User returns the links of the Discord user userID: the zero links.User
// with ID set when the user has linked nothing. One request.
func (s *Store) User(ctx context.Context, userID string) (links.User, error) {
	if err := links.CheckID("user id", userID); err != nil {
		return links.User{}, err
	}
	u := links.User{ID: userID}
	err := s.lookup(ctx, "user", []read{readKey(record.UserKey(userID))}, func(v *view) error {
		var rec record.User
		found, err := s.record(v, record.UserKey(userID), &rec)
		if found && err == nil {
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
// they were linked; nil when the user has linked nothing. Two requests:
// the user, then their accounts at the same revision.
func (s *Store) Accounts(ctx context.Context, userID string) ([]links.Account, error) {
	if err := links.CheckID("user id", userID); err != nil {
		return nil, err
	}
	var out []links.Account
	err := s.lookup(ctx, "accounts", []read{readKey(record.UserKey(userID))}, func(v *view) error {
		var u record.User
		if _, err := s.record(v, record.UserKey(userID), &u); err != nil || len(u.Accounts) == 0 {
			return err
		}
		reads := make([]read, len(u.Accounts))
		for i, id := range u.Accounts {
			reads[i] = readKey(record.AccountKey(id))
		}
		av, err := s.readView(ctx, "accounts", reads, v.rev)
		if err != nil {
			return err
		}
		for _, id := range u.Accounts {
			a, err := s.linkedAccount(av, userID, id)
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
// links.ErrNoToken. One request.
func (s *Store) Account(ctx context.Context, accountID string) (links.Account, error) {
	a, _, err := s.accountUsers(ctx, "account", accountID)
	return a, err
}

// AccountUsers returns the linked account accountID and the ids of the
// Discord users who link it, in the order they linked it. An account
// that no user links fails with an error wrapping links.ErrNoToken. One
// request.
func (s *Store) AccountUsers(ctx context.Context, accountID string) (links.Account, []string, error) {
	return s.accountUsers(ctx, "account users", accountID)
}

func (s *Store) accountUsers(ctx context.Context, op, accountID string) (links.Account, []string, error) {
	if err := links.CheckID("account id", accountID); err != nil {
		return links.Account{}, nil, err
	}
	var a record.Account
	err := s.lookup(ctx, op, []read{readKey(record.AccountKey(accountID))}, func(v *view) error {
		found, err := s.record(v, record.AccountKey(accountID), &a)
		if err == nil && !found {
			err = record.NoAccount(accountID)
		}
		return err
	})
	if err != nil {
		return links.Account{}, nil, err
	}
	return a.Account(accountID), slices.Clone(a.Users), nil
}

// Link records that the user userID linked the account acct with the
// token tok, in one transaction over the user's record, the account's,
// its token and the grant counter: the token and username are stored
// (replacing earlier ones), a new grant generation starts, RelinkNeeded
// is cleared, the account is added to the user's accounts if absent, and
// it becomes the user's active account. An existing default board is
// kept; acct's is used only when the account has none. Linking a new
// account when the user already has links.MaxAccountsPerUser fails with
// an error wrapping links.ErrTooManyAccounts. Two requests when nothing
// races it.
func (s *Store) Link(ctx context.Context, userID string, acct links.Account, tok *oauth2.Token) error {
	if err := record.CheckLink(userID, acct, tok); err != nil {
		return err
	}
	uk, ak, tk := record.UserKey(userID), record.AccountKey(acct.ID), record.TokenKey(acct.ID)
	reads := []read{readKey(uk), readKey(ak), readKey(tk), readKey(record.GrantGenKey)}
	var gen uint64
	err := s.update(ctx, "link", reads, func(_ context.Context, v *view) ([]clientv3.Op, error) {
		var u record.User
		if _, err := s.record(v, uk, &u); err != nil {
			return nil, err
		}
		if err := u.Link(userID, acct.ID); err != nil {
			return nil, err
		}
		var a record.Account
		if _, err := s.record(v, ak, &a); err != nil {
			return nil, err
		}
		a.Link(userID, acct)

		var old record.Token
		if _, err := s.record(v, tk, &old); err != nil {
			return nil, err
		}
		last, err := s.parseGen(v.get(record.GrantGenKey))
		if err != nil {
			return nil, err
		}
		gen = max(last, old.Gen) + 1
		return s.puts(map[string]record.Record{uk: &u, ak: &a, tk: record.NewToken(tok, gen)},
			clientv3.OpPut(s.key(record.GrantGenKey), strconv.FormatUint(gen, 10)))
	})
	if err != nil {
		return err
	}
	s.logger(ctx).Info().Str("user", userID).Str("account", acct.ID).Uint64("grant", gen).Msg("pinterest account linked")
	return nil
}

// puts returns the writes of recs, by relative key, then extra.
func (s *Store) puts(recs map[string]record.Record, extra ...clientv3.Op) ([]clientv3.Op, error) {
	ops := make([]clientv3.Op, 0, len(recs)+len(extra))
	for rel, rec := range recs {
		v, err := s.encode(rel, rec)
		if err != nil {
			return nil, err
		}
		ops = append(ops, clientv3.OpPut(s.key(rel), v))
	}
	return append(ops, extra...), nil
}

// Unlink removes the account accountID from the user userID's accounts,
// in one transaction over the user's record and the account's; it fails
// with an error wrapping links.ErrNotLinked when the user has not linked
// it. If it was the active account, the account linked after it becomes
// active (or, if it was the last one, the one before it; none when no
// account is left). When no user links the account any more, its record
// and token are deleted. Two requests when nothing races it.
func (s *Store) Unlink(ctx context.Context, userID, accountID string) error {
	if err := record.CheckIDs(userID, accountID); err != nil {
		return err
	}
	uk, ak := record.UserKey(userID), record.AccountKey(accountID)
	var forgotten, orphan bool
	err := s.update(ctx, "unlink", []read{readKey(uk), readKey(ak)}, func(_ context.Context, v *view) ([]clientv3.Op, error) {
		forgotten, orphan = false, false
		var u record.User
		if _, err := s.record(v, uk, &u); err != nil {
			return nil, err
		}
		if err := u.Unlink(userID, accountID); err != nil {
			return nil, err
		}
		recs := map[string]record.Record{}
		var ops []clientv3.Op
		if len(u.Accounts) == 0 {
			ops = append(ops, clientv3.OpDelete(s.key(uk)))
		} else {
			recs[uk] = &u
		}

		var a record.Account
		found, err := s.record(v, ak, &a)
		if err != nil {
			return nil, err
		}
		orphan = !found
		if a.Unlink(userID) && found {
			recs[ak] = &a
		} else {
			forgotten = true
			ops = append(ops, clientv3.OpDelete(s.key(ak)), clientv3.OpDelete(s.key(record.TokenKey(accountID))))
		}
		return s.puts(recs, ops...)
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
// fails with an error wrapping links.ErrNotLinked unless the user has
// linked that account. Two requests, one when it is active already.
func (s *Store) SetActive(ctx context.Context, userID, accountID string) error {
	if err := record.CheckIDs(userID, accountID); err != nil {
		return err
	}
	uk := record.UserKey(userID)
	return s.update(ctx, "set active", []read{readKey(uk)}, func(_ context.Context, v *view) ([]clientv3.Op, error) {
		u, err := s.linkedUser(v, userID, accountID)
		if err != nil || u.Active == accountID {
			return nil, err
		}
		u.Active = accountID
		return s.puts(map[string]record.Record{uk: &u})
	})
}

// SetQueueWhenFull sets what /pin does by default when the limit refuses
// pictures: queue them (on) or skip them. It fails with an error
// wrapping links.ErrNotLinked when the user has linked no account. Two
// requests, one when nothing changes.
func (s *Store) SetQueueWhenFull(ctx context.Context, userID string, on bool) error {
	if err := links.CheckID("user id", userID); err != nil {
		return err
	}
	uk := record.UserKey(userID)
	return s.update(ctx, "set when full", []read{readKey(uk)}, func(_ context.Context, v *view) ([]clientv3.Op, error) {
		var u record.User
		found, err := s.record(v, uk, &u)
		if err != nil {
			return nil, err
		}
		if !found || len(u.Accounts) == 0 {
			return nil, record.NoAccounts(userID)
		}
		if u.QueueWhenFull == on {
			return nil, nil
		}
		u.QueueWhenFull = on
		return s.puts(map[string]record.Record{uk: &u})
	})
}

// SetDefaultBoard sets the board pins of account accountID go to when a
// command names none, for every user of that account; boardID "" (with
// boardName "") clears it. It fails with an error wrapping
// links.ErrNotLinked unless the user userID has linked the account. Two
// requests.
func (s *Store) SetDefaultBoard(ctx context.Context, userID, accountID, boardID, boardName string) error {
	if err := record.CheckDefaultBoard(userID, accountID, boardID, boardName); err != nil {
		return err
	}
	uk, ak := record.UserKey(userID), record.AccountKey(accountID)
	return s.update(ctx, "set default board", []read{readKey(uk), readKey(ak)}, func(_ context.Context, v *view) ([]clientv3.Op, error) {
		if _, err := s.linkedUser(v, userID, accountID); err != nil {
			return nil, err
		}
		a, err := s.linkedAccount(v, userID, accountID)
		if err != nil {
			return nil, err
		}
		a.DefaultBoard, a.DefaultBoardName = boardID, boardName
		return s.puts(map[string]record.Record{ak: &a})
	})
}

// MarkRelinkNeeded flags the account accountID as needing a new link,
// after Pinterest declared its grant invalid; Link clears the flag. An
// account no user links fails with an error wrapping links.ErrNoToken.
// Two requests, one when it is flagged already.
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
	ak, tk := record.AccountKey(accountID), record.TokenKey(accountID)
	reads := []read{readKey(ak)}
	if checkGen {
		reads = append(reads, readKey(tk))
	}
	var changed bool
	err := s.update(ctx, "mark relink needed", reads, func(_ context.Context, v *view) ([]clientv3.Op, error) {
		changed = false
		var a record.Account
		found, err := s.record(v, ak, &a)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, record.NoAccount(accountID)
		}
		if a.RelinkNeeded {
			return nil, nil
		}
		if checkGen {
			var tr record.Token
			if _, err := s.record(v, tk, &tr); err != nil {
				return nil, err
			}
			if tr.Gen != gen {
				return nil, nil
			}
		}
		changed = true
		a.RelinkNeeded = true
		return s.puts(map[string]record.Record{ak: &a})
	})
	if err == nil && changed {
		s.logger(ctx).Warn().Str("account", accountID).Msg("pinterest account needs a new link")
	}
	return err
}

// Users calls fn with every user who has linked at least one account, in
// byte order of their ids, until fn returns an error, which Users then
// returns. It reads one snapshot (every page at one revision): writes
// made during the scan are not seen. fn may call the Store's other
// methods but not Close. One request per page of users.
func (s *Store) Users(ctx context.Context, fn func(links.User) error) error {
	return s.scan(ctx, "users", record.UserPrefix, func(rel string, v []byte) error {
		var rec record.User
		if err := s.decode(rel, v, &rec); err != nil {
			return err
		}
		return fn(rec.User(rel[len(record.UserPrefix):]))
	})
}

// AllAccounts calls fn with every linked account, in byte order of their
// ids, until fn returns an error, which AllAccounts then returns. Like
// Users, it reads one snapshot, and fn must not call Close.
func (s *Store) AllAccounts(ctx context.Context, fn func(links.Account) error) error {
	return s.AllAccountUsers(ctx, func(a links.Account, _ []string) error { return fn(a) })
}

// AllAccountUsers calls fn with every linked account and the ids of the
// Discord users who link it, in byte order of the accounts' ids, until
// fn returns an error, which AllAccountUsers then returns. Like Users,
// it reads one snapshot, and fn must not call Close.
func (s *Store) AllAccountUsers(ctx context.Context, fn func(links.Account, []string) error) error {
	return s.scan(ctx, "all accounts", record.AccountPrefix, func(rel string, v []byte) error {
		var rec record.Account
		if err := s.decode(rel, v, &rec); err != nil {
			return err
		}
		return fn(rec.Account(rel[len(record.AccountPrefix):]), slices.Clone(rec.Users))
	})
}

// linkedUser decodes userID's record from v and fails with an error
// wrapping links.ErrNotLinked unless the user has linked accountID.
func (s *Store) linkedUser(v *view, userID, accountID string) (record.User, error) {
	var u record.User
	if _, err := s.record(v, record.UserKey(userID), &u); err != nil {
		return record.User{}, err
	}
	if err := u.Links(userID, accountID); err != nil {
		return record.User{}, err
	}
	return u, nil
}

// linkedAccount decodes the record of accountID, which userID links,
// from v: a missing record is corruption.
func (s *Store) linkedAccount(v *view, userID, accountID string) (record.Account, error) {
	var a record.Account
	found, err := s.record(v, record.AccountKey(accountID), &a)
	if err != nil {
		return record.Account{}, err
	}
	if !found {
		return record.Account{}, s.corrupt(record.AccountKey(accountID), record.MissingAccount(userID))
	}
	return a, nil
}
