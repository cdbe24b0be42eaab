package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
)

// sessionCache keeps one pinterest.Session per account, shared by every
// interaction that uses the account. Pinterest rotates refresh tokens and
// the old one dies at once: two Sessions refreshing the same account
// would make the second refresh fail, so there must be one per grant.
type sessionCache struct {
	mu sync.Mutex
	m  map[string]cachedSession
}

// cachedSession is an account's Session and the generation of the grant
// (see links.Store.Grant) it was built from.
type cachedSession struct {
	s   *pinterest.Session
	gen uint64
}

// session returns the account's Session, built from its stored token on
// first use and rebuilt only when the account was linked again (a newer
// grant generation). The stored token itself is not compared: the cached
// Session may have refreshed it since it was read, and a Session rebuilt
// from the older read would hold a refresh token Pinterest has already
// rotated away. It fails with links.ErrNoToken when no token is stored,
// and with pinterest.ErrReauthRequired when Pinterest has refused the
// grant; then it also returns the refused Session, for markRelink.
func (b *Bot) session(ctx context.Context, accountID string) (*pinterest.Session, error) {
	tok, gen, err := b.cfg.Links.Grant(ctx, accountID)
	if errors.Is(err, links.ErrNoToken) {
		// Unlinked: a later link starts afresh.
		b.sessions.mu.Lock()
		delete(b.sessions.m, accountID)
		b.sessions.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	b.sessions.mu.Lock()
	defer b.sessions.mu.Unlock()
	// A generation below the cached one is a read from before a newer
	// link: the cached Session is the current grant's.
	if c, ok := b.sessions.m[accountID]; ok && c.gen >= gen {
		if c.s.ReauthRequired() {
			return c.s, pinterest.ErrReauthRequired
		}
		return c.s, nil
	}
	s, err := pinterest.NewSession(tok, b.cfg.Links.GrantSaver(accountID, gen))
	if err != nil {
		return nil, fmt.Errorf("bot: account %s: %w", accountID, err)
	}
	b.sessions.m[accountID] = cachedSession{s: s, gen: gen}
	return s, nil
}

// grantOf returns the grant generation of s, the account's Session, and
// false when s is no longer the account's current Session (the account
// was linked again since s was handed out).
func (b *Bot) grantOf(accountID string, s *pinterest.Session) (uint64, bool) {
	b.sessions.mu.Lock()
	defer b.sessions.mu.Unlock()
	c, ok := b.sessions.m[accountID]
	if !ok || c.s != s {
		return 0, false
	}
	return c.gen, true
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
