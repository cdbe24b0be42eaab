package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pinbot/pinbot/bot/pinterest"
)

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

// boardsTrouble explains why the account's boards could not be listed.
func (b *Bot) boardsTrouble(inv invocation, accountID string, sess *pinterest.Session, name string, err error) string {
	switch {
	case errors.Is(err, pinterest.ErrReauthRequired):
		b.markRelink(inv.ctx, accountID, sess)
		return msgRelink(name)
	case errors.Is(err, pinterest.ErrRateLimited):
		var rl *pinterest.RateLimitError
		if errors.As(err, &rl) {
			return fmt.Sprintf("Pinterest is rate limiting %s; try again at %s.", name, timeText(b.cfg.Now().Add(rl.Wait)))
		}
	}
	inv.log.Warn().Err(err).Str("account", accountID).Msg("listing boards failed")
	return msgPinterestDown
}
