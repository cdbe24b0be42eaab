package bot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
	"golang.org/x/oauth2"
)

// sessionCache keeps one pinterest.Session per account, shared by every
// interaction that uses the account. Pinterest rotates refresh tokens and
// the old one dies at once: two Sessions refreshing the same account
// would make the second refresh fail, so there must be one.
type sessionCache struct {
	mu sync.Mutex
	m  map[string]*pinterest.Session
}

// session returns the account's Session, built from its stored token on
// first use, rebuilt when the stored token is no longer the Session's
// (the account was linked again). It fails with links.ErrNoToken when no
// token is stored, and with pinterest.ErrReauthRequired when Pinterest has
// refused the stored grant.
func (b *Bot) session(ctx context.Context, accountID string) (*pinterest.Session, error) {
	tok, err := b.cfg.Links.Token(ctx, accountID)
	if err != nil {
		return nil, err
	}
	b.sessions.mu.Lock()
	defer b.sessions.mu.Unlock()
	if s := b.sessions.m[accountID]; s != nil {
		cur := s.Token()
		if sameGrant(cur, tok) {
			if s.ReauthRequired() {
				return nil, pinterest.ErrReauthRequired
			}
			return s, nil
		}
	}
	s, err := pinterest.NewSession(tok, b.cfg.Links.Saver(accountID))
	if err != nil {
		return nil, fmt.Errorf("bot: account %s: %w", accountID, err)
	}
	b.sessions.m[accountID] = s
	return s, nil
}

// sameGrant reports whether two tokens belong to the same grant, the one
// having possibly been refreshed into the other by the same Session.
func sameGrant(a, b *oauth2.Token) bool {
	if a.RefreshToken != "" || b.RefreshToken != "" {
		return a.RefreshToken == b.RefreshToken
	}
	return a.AccessToken == b.AccessToken
}

// boardsTTL is how long an account's board list is reused.
const boardsTTL = time.Minute

// boardCache keeps each account's board list for boardsTTL, for
// autocomplete (which must answer within Discord's 3 seconds), /settings
// and checking a board named in /pin.
type boardCache struct {
	mu sync.Mutex
	m  map[string]boardList
}

type boardList struct {
	boards []pinterest.Board
	at     time.Time
}

// listBoards returns the account's boards, from the cache when fresh.
func (b *Bot) listBoards(ctx context.Context, accountID string, s *pinterest.Session) ([]pinterest.Board, error) {
	now := b.cfg.Now()
	b.boards.mu.Lock()
	bl, ok := b.boards.m[accountID]
	b.boards.mu.Unlock()
	if ok && now.Sub(bl.at) < boardsTTL && !now.Before(bl.at) {
		return bl.boards, nil
	}
	boards, err := b.cfg.Pinterest.ListBoards(ctx, s)
	if err != nil {
		return nil, err
	}
	b.boards.mu.Lock()
	b.boards.m[accountID] = boardList{boards: boards, at: now}
	b.boards.mu.Unlock()
	return boards, nil
}

// findBoard finds the board named by v: its id, or its name ignoring case.
func findBoard(boards []pinterest.Board, v string) (pinterest.Board, bool) {
	v = strings.TrimSpace(v)
	for _, bd := range boards {
		if bd.ID == v {
			return bd, true
		}
	}
	for _, bd := range boards {
		if strings.EqualFold(bd.Name, v) {
			return bd, true
		}
	}
	return pinterest.Board{}, false
}

// activeAccount returns the user's active account, checked against the
// user's own links: an active account the user has not linked (a store
// gone inconsistent) is never used. The reply is set when there is none to
// use, and says why.
func (b *Bot) activeAccount(ctx context.Context, userID string) (links.Account, string) {
	u, err := b.cfg.Links.User(ctx, userID)
	if err != nil {
		b.log.Error().Err(err).Str("user_id", userID).Msg("reading the user's links failed")
		return links.Account{}, msgLinksUnavailable
	}
	if len(u.Accounts) == 0 || u.Active == "" {
		return links.Account{}, msgNoAccount
	}
	if !slices.Contains(u.Accounts, u.Active) {
		b.log.Error().Str("user_id", userID).Str("account", u.Active).Msg("active account is not among the user's links; refusing it")
		return links.Account{}, msgActiveNotLinked
	}
	acct, err := b.cfg.Links.Account(ctx, u.Active)
	if err != nil {
		b.log.Error().Err(err).Str("account", u.Active).Msg("reading the account failed")
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
		b.log.Error().Err(err).Str("user_id", userID).Msg("reading the user's links failed")
		return links.Account{}, u, false
	}
	if !slices.Contains(u.Accounts, accountID) {
		return links.Account{}, u, false
	}
	acct, err := b.cfg.Links.Account(ctx, accountID)
	if err != nil {
		b.log.Error().Err(err).Str("account", accountID).Msg("reading the account failed")
		return links.Account{}, u, false
	}
	if acct.ID == "" {
		acct.ID = accountID
	}
	return acct, u, true
}
