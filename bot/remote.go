package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pinbot/pinbot/actors"
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
