package bot

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/internal/logctx"
)

// The pin pipeline, shared by /pin, "Pin to Pinterest" (pinner.pin) and
// queued pins (runQueuedPin): the message is fetched fresh
// (fetchMessage), the request built from it and its picture (pinRequest),
// sent within the slot's deadline and its outcome classified (sendPin),
// and the account held or marked for relinking as the outcome asks
// (afterSend). The two paths differ only in how they report the outcome:
// a line of the command's reply, or the job's actors.Outcome and its
// digest line.

// fetchMessage fetches a message fresh from Discord (attachment URLs are
// signed and expire). When it cannot, reason says why, for the metrics:
// failMessageGone, failNoAccess, or failDiscord when Discord did not
// answer and a later try may succeed.
func (b *Bot) fetchMessage(ctx context.Context, channel, message snowflake.ID) (_ *discord.Message, reason string) {
	m, err := b.api.Message(ctx, channel, message)
	if err == nil {
		return m, ""
	}
	switch {
	case discordio.NotFound(err):
		return nil, failMessageGone
	case discordio.Forbidden(err):
		return nil, failNoAccess
	}
	b.logger(ctx).Warn().Str("error", errText(err)).Str("message_id", message.String()).Msg("fetching the message failed")
	return nil, failDiscord
}

// pinRequest is the pin of picture im of message msg (at ref) on board,
// sent in slot: its mark is the slot's (see slotMark).
func pinRequest(ref messageRef, msg discord.Message, im image, board string, slot actors.Reservation) pinterest.PinRequest {
	title := pinTitle(msg)
	return pinterest.PinRequest{
		Mark:     slotMark(slot),
		BoardID:  board,
		ImageURL: im.URL,
		Link:     ref.jumpURL(),
		Title:    title,
		AltText:  truncateRunes(firstNonEmpty(im.Alt, title), 500),
	}
}

// sendKind is what became of a pin sent in its slot.
type sendKind int

const (
	// sentPinned: the pin exists; its slot is committed.
	sentPinned sendKind = iota + 1
	// sentUnknown: Pinterest may have made the pin; its slot is never
	// released and counts as a pin made at the end of its lease.
	sentUnknown
	// sentRetry: a passing failure before Pinterest acted; nothing was
	// made, and the pin may be tried again after wait.
	sentRetry
	// sentFailed: nothing was made, and trying again would not help.
	sentFailed
)

// sendCause is the failure behind an outcome: what the paths word their
// reports by.
type sendCause int

const (
	causeNone          sendCause = iota // pinned
	causeUnknown                        // a 5xx or a timeout after sending
	causeNoTime                         // the slot's send deadline came too close: nothing sent
	causeUnreachable                    // Pinterest not answering (a failed dial, ErrUnavailable)
	causeRateLimited                    // Pinterest's 429
	causeSpamBlock                      // Pinterest's 429 of its spam protection
	causeReauth                         // Pinterest refused the account's grant
	causeImageRejected                  // Pinterest could not use the image
	causeRefused                        // Pinterest refused the pin (400)
	causeRefusedStatus                  // Pinterest refused the pin otherwise (another 4xx)
	causeEnded                          // the work itself ended (the command's time, the bot closing)
	causeNotSent                        // any other error: the request could not be sent
)

// sendResult is the outcome of one pin sent in its slot.
type sendResult struct {
	kind  sendKind
	cause sendCause
	pin   pinterest.Pin // sentPinned
	// at is the engine's time when Pinterest answered, and took how long
	// the request took.
	at   time.Time
	took time.Duration
	// reason and why say why nothing was pinned (every kind but
	// sentPinned): the reason for the metrics (failReasons), why for the
	// user, as a command's reply words it.
	reason, why string
	// wait, for sentRetry, is how long to wait before trying again.
	wait time.Duration
	// hold, for Pinterest's 429, is until when the account is held: no
	// pin is sent with it before.
	hold time.Time
	err  error
}

// slotContext bounds every request for slot's pin, the refresh of the
// account's token after a 401 and the wait for another's refresh
// included, so that all of them end SlotMargin before the slot's
// deadline: by then the slot counts as a pin made at its deadline, and
// Pinterest must have nothing left to act on. The bound is on the engine
// clock (the deadline's) for what is sent, and on Go's monotonic clock
// for how long the call may wait.
func (b *Bot) slotContext(ctx context.Context, slot actors.Reservation) (context.Context, context.CancelFunc) {
	eng := b.cfg.Engine
	by := slot.Deadline.Add(-b.cfg.SlotMargin)
	cctx, cancel := context.WithTimeout(ctx, by.Sub(eng.Now()))
	return pinterest.WithSendDeadline(cctx, by, eng.Now), cancel
}

// sendPin sends req with sess within slot's deadline and classifies what
// became of it. ended reports whether the work itself is over apart from
// the slot's deadline (the command out of time, the bot closing), given
// the send's error. It neither settles the slot nor acts on the account:
// see afterSend.
func (b *Bot) sendPin(ctx context.Context, slot actors.Reservation, sess *pinterest.Session, req pinterest.PinRequest, ended func(error) bool) sendResult {
	eng := b.cfg.Engine
	start := time.Now()
	cctx, cancel := b.slotContext(ctx, slot)
	pin, err := b.cfg.Pinterest.CreatePin(cctx, sess, req)
	cancel()
	took, at := time.Since(start), eng.Now()
	if err == nil {
		return sendResult{kind: sentPinned, pin: pin, at: at, took: took}
	}
	r := classifySend(err, ended(err))
	r.at, r.took, r.err = at, took, err
	if r.cause == causeRateLimited || r.cause == causeSpamBlock {
		r.hold = eng.Now().Add(r.wait)
	}
	log := b.logger(ctx).Warn().Str("error", errText(err)).Str("account", slot.Account)
	switch r.cause {
	case causeUnknown:
		log.Msg("pin outcome unknown; slot kept")
	case causeNoTime:
		log.Msg("pin not sent: its slot's time ran out")
	case causeUnreachable:
		log.Msg("pinterest unreachable")
	case causeRateLimited:
		log.Msg("pinterest rate limit")
	case causeSpamBlock:
		log.Msg("pinterest spam block")
	case causeReauth:
		log.Msg("pinterest grant refused")
	case causeImageRejected:
		log.Msg("pinterest rejected the image")
	case causeRefused, causeRefusedStatus:
		log.Msg("pinterest refused the pin")
	case causeEnded:
		log.Msg("pin abandoned: out of time")
	default:
		log.Msg("pin not sent")
	}
	return r
}

// classifySend classifies a failed CreatePin. Only ErrOutcomeUnknown
// leaves open whether Pinterest created the pin (the client's contract),
// and only when the request provably left (not a failed dial): such a pin
// is unknown, its slot kept. Every other failure happened before
// Pinterest acted. ended says the work itself is over (see sendPin).
func classifySend(err error, ended bool) sendResult {
	failed := func(c sendCause, reason, why string) sendResult {
		return sendResult{kind: sentFailed, cause: c, reason: reason, why: why}
	}
	retry := func(c sendCause, wait time.Duration, reason, why string) sendResult {
		return sendResult{kind: sentRetry, cause: c, wait: wait, reason: reason, why: why}
	}
	switch {
	case errors.Is(err, pinterest.ErrOutcomeUnknown) && !isDialError(err):
		return sendResult{kind: sentUnknown, cause: causeUnknown, reason: failOutcomeUnknown,
			why: "Pinterest did not answer clearly (a server error or a timeout); the pin may exist, so it counts toward the limit"}
	case errors.Is(err, pinterest.ErrNoTime) || (errors.Is(err, context.DeadlineExceeded) && !ended):
		// The slot's own deadline came too close (a slow token refresh):
		// nothing was sent for this pin.
		return retry(causeNoTime, jobRetryUnreachable, failNoTime, "Pinterest was too slow to renew Pinbot's access in time, so it was not sent")
	case isDialError(err) || errors.Is(err, pinterest.ErrUnavailable):
		return retry(causeUnreachable, jobRetryUnreachable, failUnavailable, "Pinterest is not answering")
	case errors.Is(err, pinterest.ErrRateLimited):
		var wait time.Duration
		var rl *pinterest.RateLimitError
		if errors.As(err, &rl) {
			wait = rl.Wait
		}
		if errors.Is(err, pinterest.ErrSpamBlocked) {
			r := failed(causeSpamBlock, failSpamBlock, "blocked by Pinterest's spam protection")
			r.wait = wait
			return r
		}
		return retry(causeRateLimited, wait, failRateLimited, "Pinterest rate limited this account")
	case errors.Is(err, pinterest.ErrReauthRequired):
		return failed(causeReauth, failReauth, "Pinterest refused Pinbot's access to the account")
	case errors.Is(err, pinterest.ErrImageRejected):
		return failed(causeImageRejected, failImageRejected, "Pinterest could not use this image")
	}
	var ae *pinterest.APIError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusBadRequest:
		return failed(causeRefused, failRefused, "Pinterest refused it: "+plain(truncateRunes(ae.Message, 200)))
	case errors.As(err, &ae):
		return failed(causeRefusedStatus, failRefused, fmt.Sprintf("Pinterest refused it (HTTP %d): %s", ae.Status, plain(truncateRunes(ae.Message, 200))))
	case ended:
		return retry(causeEnded, jobRetryShutdown, failTimeout, "the command ran out of time")
	}
	return failed(causeNotSent, failUnavailable, "it could not be sent to Pinterest")
}

// afterSend acts on the account as a pin's outcome asks: Pinterest's 429
// holds it until Pinterest's reset, and a refused grant marks it for
// linking again. ctx is the work's.
func (b *Bot) afterSend(ctx context.Context, account string, sess *pinterest.Session, r sendResult) {
	switch r.cause {
	case causeRateLimited, causeSpamBlock:
		hctx, cancel := context.WithTimeout(logctx.Inherit(b.workCtx, ctx), resolveTimeout)
		defer cancel()
		if _, err := b.cfg.Engine.Hold(hctx, account, r.hold); err != nil {
			b.logger(ctx).Error().Err(err).Str("account", account).Msg("holding the rate-limited account failed")
		}
	case causeReauth:
		b.markRelink(ctx, account, sess)
	}
}

// isDialError reports whether err comes from failing to connect: the
// request was never sent.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
