package bot

import (
	"github.com/pinbot/pinbot/internal/logctx"
	"golang.org/x/oauth2"

	"context"
	"errors"
	"fmt"
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
	if c, ok := b.sessions.m[accountID]; ok && c.gen >= gen && !storedNewer(tok, c.s) {
		if c.s.ReauthRequired() {
			return c.s, pinterest.ErrReauthRequired
		}
		return c.s, nil
	}
	s, err := pinterest.NewSession(tok, links.GrantSaver(b.cfg.Links, accountID, gen))
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

// resolveTimeout bounds recording what Pinterest answered, which runs
// even when the handler's own time is up: committing or releasing a pin's
// slot (a pin Pinterest made must be recorded), and marking an account
// whose grant Pinterest refused.
const resolveTimeout = 10 * time.Second

// markRelink records that the account needs a new authorization because
// Pinterest refused the grant of sess, the account's Session; sess nil
// (the account has no token at all) marks nothing. A Session replaced by
// a newer link since it was handed out condemns nothing either: the new
// grant is not the one Pinterest refused. cmd carries the log IDs of the
// work that saw the refusal.
func (b *Bot) markRelink(cmd context.Context, accountID string, sess *pinterest.Session) {
	ctx, cancel := context.WithTimeout(logctx.Inherit(b.workCtx, cmd), resolveTimeout)
	defer cancel()
	if sess == nil {
		// No token at all: the account was unlinked (the user is told to
		// link it again). Marking it could only flag a link made since.
		return
	}
	gen, current := b.grantOf(accountID, sess)
	if !current {
		b.logger(ctx).Info().Str("account", accountID).Msg("a replaced grant was refused; the account's newer link stands")
		return
	}
	if err := b.cfg.Links.MarkGrantRelinkNeeded(ctx, accountID, gen); err != nil {
		b.logger(ctx).Error().Err(err).Str("account", accountID).Msg("marking the account for re-link failed")
	}
}

// storedNewer reports whether tok, the stored token of the grant a cached
// session holds, is newer than the session's own: another process
// refreshed it since (in a cluster, the account's previous owner), and
// the session's refresh token is dead. Newer is a later expiry: each
// refresh grants one, and tok may also be a read from before the
// session's own last refresh (it is read before the cache's lock), which
// is older and must not replace it.
func storedNewer(tok *oauth2.Token, s *pinterest.Session) bool {
	cur := s.Token()
	return tok != nil && cur != nil && tok.AccessToken != cur.AccessToken && tok.Expiry.After(cur.Expiry)
}
