package bot

import (
	"context"
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

// linkedAccount returns accountID if userID has linked it; ok is false
// otherwise (and on store errors, which are logged).
func (b *Bot) linkedAccount(ctx context.Context, userID, accountID string) (links.Account, links.User, bool) {
	u, err := b.cfg.Links.User(ctx, userID)
	if err != nil {
		b.logger(ctx).Error().Err(err).Str("user_id", userID).Msg("reading the user's links failed")
		return links.Account{}, u, false
	}
	if !slices.Contains(u.Accounts, accountID) {
		return links.Account{}, u, false
	}
	acct, err := b.cfg.Links.Account(ctx, accountID)
	if err != nil {
		b.logger(ctx).Error().Err(err).Str("account", accountID).Msg("reading the account failed")
		return links.Account{}, u, false
	}
	if acct.ID == "" {
		acct.ID = accountID
	}
	return acct, u, true
}
