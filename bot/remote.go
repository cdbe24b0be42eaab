package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/internal/logctx"
)

// The engine calls of the commands other than /pin (the counts of
// /settings and /switch, /queue and its cancellations, the cancellations
// of /unlink) go, in a cluster, to the member that owns the account: its
// engine alone holds the account's window and queue. These wrappers run
// them here when this member serves the account, and forward them
// otherwise (peer method "engine").

const peerEngine = "engine"

// engineCall is an engine call as it travels to the account's owner.
type engineCall struct {
	Op      string   `json:"op"` // "status", "jobs", "cancel"
	Account string   `json:"account"`
	IDs     []uint64 `json:"ids,omitempty"`
}

// engineAnswer is the owner's answer.
type engineAnswer struct {
	Status actors.Status `json:"status"`
	Jobs   []actors.Job  `json:"jobs,omitempty"`
}

// callEngine runs c on this member's engine.
func (b *Bot) callEngine(ctx context.Context, c engineCall) (engineAnswer, error) {
	var a engineAnswer
	var err error
	switch c.Op {
	case "status":
		a.Status, err = b.cfg.Engine.Status(ctx, c.Account)
	case "jobs":
		a.Jobs, a.Status, err = b.cfg.Engine.Jobs(ctx, c.Account)
	case "cancel":
		a.Jobs, a.Status, err = b.cfg.Engine.Cancel(ctx, c.Account, c.IDs)
	default:
		err = fmt.Errorf("%w: unknown engine call %q", ErrNotForwarded, c.Op)
	}
	return a, err
}

// engineAt runs c where c.Account is served: here, or on its owner.
func (b *Bot) engineAt(ctx context.Context, c engineCall) (engineAnswer, error) {
	if b.serves(c.Account) {
		return b.callEngine(ctx, c)
	}
	body, err := json.Marshal(c)
	if err != nil {
		return engineAnswer{}, err
	}
	inv := invocation{ctx: ctx, log: *b.logger(ctx)}
	ans, err := b.forward(inv, c.Account, peerEngine, body)
	if errors.Is(err, errServedHere) {
		return b.callEngine(ctx, c)
	}
	if err != nil {
		return engineAnswer{}, fmt.Errorf("bot: %s of account %s on its owner: %w", c.Op, c.Account, err)
	}
	var a engineAnswer
	if err := json.Unmarshal(ans, &a); err != nil {
		return engineAnswer{}, fmt.Errorf("bot: %s of account %s: the owner's answer: %w", c.Op, c.Account, err)
	}
	return a, nil
}

// handlePeerEngine serves a forwarded engine call.
func (b *Bot) handlePeerEngine(ctx context.Context, body []byte) ([]byte, error) {
	var c engineCall
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("bot: forwarded engine call: %w", err)
	}
	if !b.serves(c.Account) {
		return nil, fmt.Errorf("%w: account %s is not served here", ErrNotForwarded, c.Account)
	}
	a, err := b.callEngine(logctx.Inherit(b.workCtx, ctx), c)
	if err != nil {
		return nil, err
	}
	return json.Marshal(a)
}

func (b *Bot) accountStatus(ctx context.Context, account string) (actors.Status, error) {
	a, err := b.engineAt(ctx, engineCall{Op: "status", Account: account})
	return a.Status, err
}

// accountStatuses is Engine.StatusMany over the accounts' owners: an
// account that fails has only its Account set, its error joined.
func (b *Bot) accountStatuses(ctx context.Context, accounts []string) ([]actors.Status, error) {
	local := true
	for _, a := range accounts {
		local = local && b.serves(a)
	}
	if local {
		return b.cfg.Engine.StatusMany(ctx, accounts)
	}
	out := make([]actors.Status, len(accounts))
	var errs []error
	for i, a := range accounts {
		st, err := b.accountStatus(ctx, a)
		if err != nil {
			st = actors.Status{Account: a}
			errs = append(errs, err)
		}
		out[i] = st
	}
	return out, errors.Join(errs...)
}

func (b *Bot) accountJobs(ctx context.Context, account string) ([]actors.Job, actors.Status, error) {
	a, err := b.engineAt(ctx, engineCall{Op: "jobs", Account: account})
	return a.Jobs, a.Status, err
}

func (b *Bot) cancelJobs(ctx context.Context, account string, ids []uint64) ([]actors.Job, actors.Status, error) {
	a, err := b.engineAt(ctx, engineCall{Op: "cancel", Account: account, IDs: ids})
	return a.Jobs, a.Status, err
}

// The account's boards are listed with its token, which only the
// account's owner uses: a refresh rotates the token, and two members
// refreshing one would leave one of them with a dead one.
const peerBoards = "boards"

// boardsAnswer is the owner's answer to a boards call.
type boardsAnswer struct {
	Boards []pinterest.Board `json:"boards,omitempty"`
	// Relink: the account needs /link again (no token, or Pinterest
	// refused it); the owner has marked it.
	Relink bool `json:"relink,omitempty"`
	// RateWait, when set, is how long Pinterest rate limits the account.
	RateWait time.Duration `json:"rate_wait,omitempty"`
	// Trouble, when set, says the listing failed otherwise.
	Trouble string `json:"trouble,omitempty"`
}

// sessionError is an error of accountBoards met before listing: the
// account's token could not be loaded, or it needs /link again.
type sessionError struct{ err error }

func (e *sessionError) Error() string { return e.err.Error() }
func (e *sessionError) Unwrap() error { return e.err }

// errRemoteBoards is the error of a listing that failed on the owner.
var errRemoteBoards = errors.New("bot: the account's owner could not list its boards")

// accountBoards lists accountID's boards where it is served. The session
// is the local one, nil when the listing ran on the owner. An error met
// before listing is a *sessionError (wrapping links.ErrNoToken or
// pinterest.ErrReauthRequired when the account needs /link again); the
// others are the listing's (listBoards).
func (b *Bot) accountBoards(ctx context.Context, accountID string) ([]pinterest.Board, *pinterest.Session, error) {
	if b.serves(accountID) {
		sess, err := b.session(ctx, accountID)
		if err != nil {
			return nil, sess, &sessionError{err}
		}
		boards, err := b.listBoards(ctx, accountID, sess)
		return boards, sess, err
	}
	body, err := json.Marshal(engineCall{Op: peerBoards, Account: accountID})
	if err != nil {
		return nil, nil, err
	}
	inv := invocation{ctx: ctx, log: *b.logger(ctx)}
	ans, err := b.forward(inv, accountID, peerBoards, body)
	if errors.Is(err, errServedHere) {
		return b.accountBoards(ctx, accountID)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("bot: boards of account %s on its owner: %w", accountID, err)
	}
	var a boardsAnswer
	if err := json.Unmarshal(ans, &a); err != nil {
		return nil, nil, fmt.Errorf("bot: boards of account %s: the owner's answer: %w", accountID, err)
	}
	switch {
	case a.Relink:
		return nil, nil, &sessionError{fmt.Errorf("bot: boards of account %s: %w", accountID, pinterest.ErrReauthRequired)}
	case a.RateWait > 0:
		return nil, nil, &pinterest.RateLimitError{Wait: a.RateWait, ResetAt: b.cfg.Now().Add(a.RateWait)}
	case a.Trouble != "":
		return nil, nil, fmt.Errorf("%w: %s", errRemoteBoards, a.Trouble)
	}
	return a.Boards, nil, nil
}

// handlePeerBoards lists the boards of an account this member serves,
// for the member that asked.
func (b *Bot) handlePeerBoards(ctx context.Context, body []byte) ([]byte, error) {
	var c engineCall
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("bot: forwarded boards call: %w", err)
	}
	if !b.serves(c.Account) {
		return nil, fmt.Errorf("%w: account %s is not served here", ErrNotForwarded, c.Account)
	}
	ctx = logctx.Inherit(b.workCtx, ctx)
	boards, sess, err := b.accountBoards(ctx, c.Account)
	var a boardsAnswer
	var rl *pinterest.RateLimitError
	switch {
	case err == nil:
		a.Boards = boards
	case errors.Is(err, links.ErrNoToken) || errors.Is(err, pinterest.ErrReauthRequired):
		b.markRelink(ctx, c.Account, sess)
		a.Relink = true
	case errors.As(err, &rl):
		a.RateWait = max(rl.Wait, time.Second)
	default:
		b.logger(ctx).Warn().Err(err).Str("account", c.Account).Msg("listing boards for a peer failed")
		a.Trouble = "listing failed"
	}
	return json.Marshal(a)
}
