package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/internal/logctx"
)

// Peers connects a bot that is one member of a cluster to the others: an
// account's work (its window, its queue, its token) is done by the member
// that owns the account, and the member that received the interaction
// forwards it there. Nil in Config: every account is served here.
type Peers interface {
	// Serves reports whether this member serves account now.
	Serves(account string) bool
	// Forward sends body to the HandlePeer of account's owner, under
	// method, and returns the owner's answer. An error wrapping
	// ErrNotForwarded says the owner did no work (it could not be
	// reached, had just lost the account, or there is no owner yet): the
	// caller may try again. Any other error leaves the outcome unknown:
	// the work may have been done, and is never sent twice.
	Forward(ctx context.Context, account, method string, body []byte) ([]byte, error)
}

// ErrNotForwarded is wrapped by the errors of Peers.Forward and
// Bot.HandlePeer that say no work was done.
var ErrNotForwarded = errors.New("bot: not forwarded: no work done")

// Peer methods.
const peerPin = "pin"

// How long, at most, a forwarded command waits for an owner to take its
// account (a member that died or is handing its partitions over), and
// the pause between tries.
const (
	forwardPatience = 5 * time.Second
	forwardRetry    = 100 * time.Millisecond
)

// Replies of a forwarded command that did not come back.
const (
	msgNoOwner      = "Pinbot is moving your Pinterest account between its servers right now, so nothing was pinned. Please try again in a few seconds."
	msgForwardLost  = "Pinbot lost track of this command while another of its servers worked on it: some pictures may have been pinned. `/queue` shows what is queued; please check your board before pinning them again."
	msgForwardError = "Pinbot could not finish this command, so nothing more was pinned. Please try again later."
)

// forwardedPin is a /pin batch as it travels to the account's owner.
type forwardedPin struct {
	Interaction snowflake.ID        `json:"interaction"`
	Token       string              `json:"token"`
	User        snowflake.ID        `json:"user"`
	Guild       snowflake.ID        `json:"guild"`
	Channel     snowflake.ID        `json:"channel"`
	Perms       discord.Permissions `json:"perms"`
	Account     string              `json:"account"`
	Refs        []messageRef        `json:"refs"`
	Board       string              `json:"board,omitempty"`
	Target      *discord.Message    `json:"target,omitempty"`
	WhenFull    string              `json:"when_full,omitempty"`
	Again       bool                `json:"again,omitempty"`
	// Source is what asked for the batch, for the owner's metrics;
	// none counts as other.
	Source string `json:"source,omitempty"`
	// BoardID and BoardName, when set, are the board as it is (an
	// auto-pin rule's), and QueueAll queues every picture.
	BoardID   string `json:"board_id,omitempty"`
	BoardName string `json:"board_name,omitempty"`
	QueueAll  bool   `json:"queue_all,omitempty"`
	// Skip are the pictures left out (see batch.skip).
	Skip []string `json:"skip,omitempty"`
}

// forwardedReply is the owner's answer: the reply to edit in.
type forwardedReply struct {
	Content string `json:"content"`
}

// serves reports whether this member does account's work.
func (b *Bot) serves(account string) bool {
	return b.cfg.Peers == nil || b.cfg.Peers.Serves(account)
}

// forwardPin sends the batch to the owner of account and returns the
// reply it answered, or what to tell the user when it did not; an empty
// reply when the account came to this member meanwhile.
func (b *Bot) forwardPin(inv invocation, account string, bt batch) reply {
	body, err := json.Marshal(forwardedPin{
		Interaction: inv.id, Token: inv.token, User: inv.userID, Guild: inv.guildID,
		Channel: inv.channelID, Perms: inv.perms, Account: account,
		Refs: bt.refs, Board: bt.board, Target: bt.target, WhenFull: bt.whenFull, Again: bt.again,
		Source: bt.source, BoardID: bt.boardID, BoardName: bt.boardName, QueueAll: bt.queueAll, Skip: bt.skip,
	})
	if err != nil {
		inv.log.Error().Err(err).Msg("encoding a forwarded command failed")
		return reply{content: msgForwardError}
	}
	ans, err := b.forward(inv, account, peerPin, body)
	if errors.Is(err, errServedHere) {
		return reply{} // the caller runs it here
	}
	if err != nil {
		return reply{content: forwardTrouble(inv, err)}
	}
	var r forwardedReply
	if err := json.Unmarshal(ans, &r); err != nil {
		inv.log.Error().Err(err).Msg("the owner's answer to a forwarded command is unreadable")
		return reply{content: msgForwardLost}
	}
	return reply{content: r.Content}
}

// forward calls the owner of account, trying again while no work was
// done there and this member does not serve the account itself, for at
// most forwardPatience.
func (b *Bot) forward(inv invocation, account, method string, body []byte) ([]byte, error) {
	patience := forwardPatience
	if b.forwardPatience > 0 {
		patience = b.forwardPatience
	}
	ctx, cancel := context.WithTimeout(inv.ctx, patience)
	defer cancel()
	for {
		ans, err := b.cfg.Peers.Forward(ctx, account, method, body)
		if err == nil || !errors.Is(err, ErrNotForwarded) {
			return ans, err
		}
		inv.log.Debug().Err(err).Str("account", account).Msg("forwarding refused before any work; trying again")
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", err, ctx.Err())
		case <-time.After(forwardRetry):
		}
		if b.cfg.Peers.Serves(account) {
			// The account came here meanwhile.
			return nil, errServedHere
		}
	}
}

// errServedHere: a forwarded command's account is now served by this
// member; the caller runs it here.
var errServedHere = errors.New("bot: the account is served here now")

// forwardTrouble logs why a forwarded command did not come back and
// returns what to tell the user.
func forwardTrouble(inv invocation, err error) string {
	if errors.Is(err, ErrNotForwarded) {
		inv.log.Warn().Err(err).Msg("no owner took the forwarded command")
		return msgNoOwner
	}
	inv.log.Error().Err(err).Msg("the forwarded command's outcome is unknown")
	return msgForwardLost
}

// HandlePeer serves a call forwarded by another member of the cluster (see
// Peers) and returns its answer. An account this member does not serve
// is refused with an error wrapping ErrNotForwarded, before any work.
func (b *Bot) HandlePeer(ctx context.Context, method string, body []byte) ([]byte, error) {
	switch method {
	case peerPin:
		var f forwardedPin
		if err := json.Unmarshal(body, &f); err != nil {
			return nil, fmt.Errorf("bot: forwarded pin: %w", err)
		}
		if !b.serves(f.Account) {
			return nil, fmt.Errorf("%w: account %s is not served here", ErrNotForwarded, f.Account)
		}
		ctx = logctx.With(ctx, logctx.InteractionID, f.Interaction.String())
		inv := invocation{ctx: ctx, id: f.Interaction, token: f.Token, userID: f.User, guildID: f.Guild, channelID: f.Channel, perms: f.Perms}
		inv.log = b.logger(ctx).With().Str("user_id", inv.userID.String()).Bool("forwarded", true).Logger()
		acct, err := b.cfg.Links.Account(ctx, f.Account)
		if err != nil {
			inv.log.Error().Err(err).Str("account", f.Account).Msg("reading the forwarded command's account failed")
			return json.Marshal(forwardedReply{Content: msgLinksUnavailable})
		}
		if acct.ID == "" {
			acct.ID = f.Account
		}
		r := b.pinFor(inv, acct, batch{source: f.Source, refs: f.Refs, board: f.Board, target: f.Target, whenFull: f.WhenFull, again: f.Again,
			boardID: f.BoardID, boardName: f.BoardName, queueAll: f.QueueAll, skip: f.Skip})
		return json.Marshal(forwardedReply{Content: r.content})
	case peerEngine:
		return b.handlePeerEngine(ctx, body)
	case peerBoards:
		return b.handlePeerBoards(ctx, body)
	default:
		return nil, fmt.Errorf("%w: unknown method %q", ErrNotForwarded, method)
	}
}
