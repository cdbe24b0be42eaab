package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/pinbot/pinbot/bot/links"
)

// activeAccount returns the user's active account, checked against the
// user's own links: an active account the user has not linked (a store
// gone inconsistent) is never used. The reply is set when there is none to
// use, and says why.
func (b *Bot) activeAccount(ctx context.Context, userID string) (links.Account, string) {
	u, err := b.cfg.Links.User(ctx, userID)
	if err != nil {
		b.logger(ctx).Error().Err(err).Str("user_id", userID).Msg("reading the user's links failed")
		return links.Account{}, msgLinksUnavailable
	}
	if len(u.Accounts) == 0 || u.Active == "" {
		return links.Account{}, msgNoAccount
	}
	if !slices.Contains(u.Accounts, u.Active) {
		b.logger(ctx).Error().Str("user_id", userID).Str("account", u.Active).Msg("active account is not among the user's links; refusing it")
		return links.Account{}, msgActiveNotLinked
	}
	acct, err := b.cfg.Links.Account(ctx, u.Active)
	if err != nil {
		b.logger(ctx).Error().Err(err).Str("account", u.Active).Msg("reading the account failed")
		return links.Account{}, msgLinksUnavailable
	}
	if acct.ID == "" {
		acct.ID = u.Active
	}
	return acct, ""
}

// errNotLinked says, for certain, that the user has not linked the
// account (as opposed to a links store that could not be read).
var errNotLinked = errors.New("bot: account not linked to the user")

// linkedAccount returns accountID if userID has linked it; ok is false
// otherwise (and on store errors, which are logged).
func (b *Bot) linkedAccount(ctx context.Context, userID, accountID string) (links.Account, links.User, bool) {
	acct, u, err := b.lookupLinked(ctx, userID, accountID)
	return acct, u, err == nil
}

// lookupLinked returns accountID if userID has linked it. It fails with
// errNotLinked when the store says the user has not, and with the store's
// error (logged) when it cannot be read: only the first is a definite no.
func (b *Bot) lookupLinked(ctx context.Context, userID, accountID string) (links.Account, links.User, error) {
	u, err := b.cfg.Links.User(ctx, userID)
	if err != nil {
		b.logger(ctx).Error().Err(err).Str("user_id", userID).Msg("reading the user's links failed")
		return links.Account{}, u, err
	}
	if !slices.Contains(u.Accounts, accountID) {
		return links.Account{}, u, errNotLinked
	}
	acct, err := b.cfg.Links.Account(ctx, accountID)
	if errors.Is(err, links.ErrNoToken) {
		return links.Account{}, u, fmt.Errorf("%w: %w", errNotLinked, err)
	}
	if err != nil {
		b.logger(ctx).Error().Err(err).Str("account", accountID).Msg("reading the account failed")
		return links.Account{}, u, err
	}
	if acct.ID == "" {
		acct.ID = accountID
	}
	return acct, u, nil
}
