package bot

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/internal/logctx"
)

// Waits before a queued pin is tried again after a passing failure.
const (
	// jobRetryUnreachable is the wait after Pinterest or Discord did not
	// answer.
	jobRetryUnreachable = time.Minute
	// jobRetryShutdown is the wait for a pin handed out while the bot was
	// closing, or that waited for a worker too long: the next run starts
	// it.
	jobRetryShutdown = time.Second
	// jobMinSendTime is the least time before a slot's send deadline
	// worth starting a queued pin with (fetching the message, checking
	// access, posting the pin), or half the time a slot gives to send
	// when that is shorter.
	jobMinSendTime = 5 * time.Second
)

// RunJob runs one queued pin the engine handed out (give it to
// actors.Engine.ServeJobs once the bot is built): it fetches the message
// fresh, checks that the user who queued it may still read it and that the
// account is still theirs and usable, pins the picture within the slot the
// engine reserved, ends the job with its outcome and tells the user in a
// digest. A job the engine hands out again after a restart (Recovered) is
// never sent again while its pin may exist: it is looked for on Pinterest
// (found: done with its address; proven absent: back at the head of the
// queue), and reported unknown only when it cannot be looked for.
func (b *Bot) RunJob(j actors.Job) {
	eng := b.cfg.Engine
	// Every line logged for the job carries its ID and, once its payload
	// is read, the /pin that queued it (see package logctx).
	jctx := logctx.With(b.workCtx, logctx.JobID, strconv.FormatUint(j.ID, 10))
	q, err := decodeQueuedPin(j.Payload)
	if q.Interaction != 0 {
		jctx = logctx.With(jctx, logctx.InteractionID, q.Interaction.String())
	}
	// A recovered job is never sent again: its pin may exist. It is
	// looked for on Pinterest (found: done; proven absent: back to the
	// queue); when it cannot be, it ends as unknown at once, its slot
	// never released. While the bot closes it stays running, and the
	// next start hands it out again to look.
	if j.Recovered {
		unknown := actors.Outcome{Unknown: true, Result: jobResult{Outcome: jobUnknown, Reason: failOutcomeUnknown,
			Why: "Pinbot restarted while sending it; the pin may exist, so it counts toward the limit"}.encode()}
		name := b.storedAccountName(jctx, j.Account)
		if lk, ok := b.recoveredLookup(jctx, j); ok && b.resolveJobLater(jctx, j, q, name, lk, unknown) {
			return
		}
		if b.isClosing() {
			return
		}
		b.endJob(jctx, j, unknown, q, name)
		return
	}
	if err != nil {
		b.logger(jctx).Error().Err(err).Str("account", j.Account).Msg("unreadable queued pin; dropped")
		b.endJob(jctx, j, failedJob(failInvalid, "Pinbot could not read this queued pin"), q, "")
		return
	}
	if !b.enter() {
		// Closing: back to the head of the queue, for the next run.
		b.endJob(jctx, j, actors.Outcome{Retry: true, RetryAfter: jobRetryShutdown}, queuedPin{}, "")
		return
	}
	defer b.leave()
	// At most Config.Workers queued pins run at once; the others wait
	// here, their slots' send deadlines running.
	select {
	case b.jobWorkers <- struct{}{}:
		defer func() { <-b.jobWorkers }()
	case <-b.closingCh:
		b.endJob(jctx, j, actors.Outcome{Retry: true, RetryAfter: jobRetryShutdown}, queuedPin{}, "")
		return
	}
	// Every request for the pin ends SlotMargin before its slot's
	// deadline (see Bot.slotContext). A pin that waited for a worker
	// until too little of that time is left was never sent: back to the
	// head of the queue, with a fresh slot when it starts again.
	by := j.Slot.Deadline.Add(-b.cfg.SlotMargin)
	if by.Sub(eng.Now()) < min(jobMinSendTime, (eng.Config().Lease-b.cfg.SlotMargin)/2) {
		b.logger(jctx).Warn().Str("account", j.Account).Msg("queued pin waited too long for a worker; back to the queue")
		b.endJob(jctx, j, actors.Outcome{Retry: true, RetryAfter: jobRetryShutdown}, queuedPin{}, "")
		return
	}
	ctx, cancel := context.WithTimeout(jctx, by.Sub(eng.Now()))
	defer cancel()
	o, name, lk := b.runQueuedPin(pinterest.WithSendDeadline(ctx, by, eng.Now), j, q)
	if lk != nil && b.resolveJobLater(jctx, j, q, name, *lk, o) {
		return // the search ends the job
	}
	if lk != nil && b.isClosing() {
		// Its outcome is unknown and no search starts while the bot
		// closes: the job stays running, and the next start looks.
		return
	}
	b.endJob(jctx, j, o, q, name)
}

// storedAccountName names the account as the links store knows it, for a
// result that is reported without the work that would read it; the ID
// alone when the store cannot say.
func (b *Bot) storedAccountName(ctx context.Context, accountID string) string {
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	acct, err := b.cfg.Links.Account(ctx, accountID)
	if err != nil {
		return accountName("", accountID)
	}
	return accountName(acct.Username, accountID)
}

// failedJob is the outcome of a pin that was not sent, and why (reason
// for the metrics, why for the user).
func failedJob(reason, why string) actors.Outcome {
	return actors.Outcome{Result: jobResult{Outcome: jobFailed, Why: why, Reason: reason}.encode()}
}

// runQueuedPin does the work of a queued pin and returns its outcome and
// the account's display name ("" when unknown), and, when the outcome is
// unknown, how to look for the pin.
func (b *Bot) runQueuedPin(ctx context.Context, j actors.Job, q queuedPin) (actors.Outcome, string, *lookup) {
	acct, _, err := b.lookupLinked(ctx, q.User.String(), j.Account)
	if errors.Is(err, errNotLinked) {
		return failedJob(failUnlinked, "the Pinterest account is no longer linked to you"), "", nil
	}
	if err != nil {
		// The links store could not say: nothing was sent, try later.
		return actors.Outcome{Retry: true, RetryAfter: jobRetryUnreachable}, "", nil
	}
	name := accountName(acct.Username, acct.ID)
	if acct.RelinkNeeded {
		return failedJob(failReauth, "Pinterest no longer accepts Pinbot's access to the account; run /link"), name, nil
	}
	sess, err := b.session(ctx, acct.ID)
	switch {
	case errors.Is(err, links.ErrNoToken):
		return failedJob(failUnlinked, "the Pinterest account is no longer linked to you"), name, nil
	case errors.Is(err, pinterest.ErrReauthRequired):
		b.markRelink(ctx, acct.ID, sess)
		return failedJob(failReauth, "Pinbot could not use the account's access; run /link"), name, nil
	case err != nil:
		b.logger(ctx).Warn().Str("error", errText(err)).Msg("reading a queued pin's access failed; retrying later")
		return actors.Outcome{Retry: true, RetryAfter: jobRetryUnreachable}, name, nil
	}

	ref := q.ref()
	msg, reason := b.fetchMessage(ctx, q.Channel, q.Message)
	switch reason {
	case "":
	case failMessageGone:
		return failedJob(failMessageGone, "the message was deleted"), name, nil
	case failNoAccess:
		if q.Guild != 0 {
			b.pauseLost(ctx, q.Guild, q.Channel, q.User, j.Account, whyBotLost)
		}
		return failedJob(failNoAccess, "Pinbot can no longer read that channel"), name, nil
	default:
		// Discord did not answer: nothing was sent, try later.
		return actors.Outcome{Retry: true, RetryAfter: jobRetryUnreachable}, name, nil
	}
	if q.Guild != 0 {
		ac := &accessChecker{api: b.api, ctx: ctx, guildID: q.Guild, userID: q.User}
		res, err := ac.canRead(q.Channel)
		if err != nil {
			b.logger(ctx).Warn().Str("error", errText(err)).Msg("permission check of a queued pin failed; retrying later")
			return actors.Outcome{Retry: true, RetryAfter: jobRetryUnreachable}, name, nil
		}
		if !res.ok {
			b.pauseLost(ctx, q.Guild, q.Channel, q.User, j.Account, whyOwnerLost)
			return failedJob(failNoAccess, "you can no longer read that channel ("+res.why+")"), name, nil
		}
	}
	im, ok := q.imageIn(imagesOf(*msg))
	if !ok {
		return failedJob(failNoImage, "the image is no longer in the message"), name, nil
	}
	if u, ok := b.pinnedBefore(ctx, j.Account, q.Board, im.Key); ok && !q.Again {
		// Its slot is released: nothing is sent.
		return actors.Outcome{Result: jobResult{Outcome: jobDuplicate, PinURL: u, Reason: failDuplicate}.encode()}, name, nil
	}
	// A queued pin's context ends at its slot's send deadline, or with the
	// bot (canceled): only the latter ends the work itself.
	r := b.sendPin(ctx, j.Slot, sess, pinRequest(ref, *msg, im, q.Board, j.Slot), func(err error) bool { return errors.Is(err, context.Canceled) })
	b.afterSend(ctx, j.Account, sess, r)
	if r.kind == sentPinned {
		b.rememberPinned(ctx, j.Account, q.Board, map[string]string{im.Key: r.pin.URL})
	}
	var lk *lookup
	if r.kind == sentUnknown {
		lk = &lookup{slot: j.Slot, sess: sess, ended: r.at}
	}
	return queuedOutcome(r), name, lk
}

// queuedOutcome is a queued pin's outcome for the engine and its digest:
// pinned, unknown when Pinterest may have made the pin (its slot is kept),
// a retry for passing failures that happened before Pinterest acted, else
// failed with why.
func queuedOutcome(r sendResult) actors.Outcome {
	switch r.kind {
	case sentPinned:
		return actors.Outcome{Done: true, At: r.at, Result: jobResult{Outcome: jobPinned, PinURL: r.pin.URL}.encode()}
	case sentUnknown:
		return actors.Outcome{Unknown: true, Result: jobResult{Outcome: jobUnknown, Reason: failOutcomeUnknown,
			Why: "Pinterest did not answer clearly; the pin may exist, so it counts toward the limit"}.encode()}
	case sentRetry:
		return actors.Outcome{Retry: true, RetryAfter: r.wait}
	}
	why := r.why
	if r.cause == causeReauth {
		why += "; run /link"
	}
	return failedJob(r.reason, why)
}

// endJob records the job's outcome with the engine and, unless it goes
// back to the queue, tells the user in a digest. The digest's line is
// kept in the digests' outbox before the engine records the outcome, so
// that a crash between the two loses no news; for a job reported before,
// the line kept first is the one sent. jctx carries the job's log IDs.
func (b *Bot) endJob(jctx context.Context, j actors.Job, o actors.Outcome, q queuedPin, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(jctx), resolveTimeout)
	defer cancel()
	r, ok := decodeJobResult(o.Result)
	tell := !o.Retry && ok && q.User != 0 && b.digest != nil
	var line digest.Line
	if tell {
		line = digest.Line{
			Key:  digest.Key{Account: j.Account, Job: j.ID},
			User: q.User, Guild: q.Guild, Channel: q.From,
			Text: jobLine(q, r, name),
		}
		kept, err := b.digest.Keep(ctx, line)
		if err != nil {
			b.logger(jctx).Error().Err(err).Str("account", j.Account).Msg("keeping a queued pin's result for its digest failed; it is sent from memory")
		} else {
			line = kept
		}
	}
	b.finishJob(jctx, j, o)
	if o.Retry {
		return
	}
	if ok {
		b.reportJob(r)
	}
	if tell {
		b.digest.Add(line)
	}
}

// finishJob records the job's outcome with the engine, trying again while
// the engine cannot record it for now (its journal unavailable, etcd
// electing a leader): a job whose outcome is never recorded stays running
// in this engine, its slot held, its pin neither made nor reported until
// a restart. It gives up once the job is not running (ended already), its
// account is not served here (whichever engine serves it next, this one
// included, hands it out again, recovered), the engine closes, or the
// bot's work ends (the next start hands it out again).
func (b *Bot) finishJob(jctx context.Context, j actors.Job, o actors.Outcome) {
	eng := b.cfg.Engine
	sleep := b.finishSleep
	if sleep == nil {
		sleep = eng.SleepUntil
	}
	wait := finishRetryMin
	for {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(jctx), resolveTimeout)
		_, err := eng.Finish(ctx, j, o)
		cancel()
		switch {
		case err == nil:
			return
		case errors.Is(err, actors.ErrNotOwner):
			b.logger(jctx).Warn().Err(err).Str("account", j.Account).
				Msg("a queued pin's outcome cannot be recorded here: the account is not served here now; whoever serves it next looks its pin up")
			return
		case errors.Is(err, actors.ErrUnknownJob), errors.Is(err, actors.ErrClosed), errors.Is(err, actors.ErrInvalidOutcome):
			b.logger(jctx).Error().Err(err).Str("account", j.Account).Msg("recording a queued pin's outcome failed")
			return
		}
		b.logger(jctx).Warn().Err(err).Str("account", j.Account).Dur("retry_in", wait).
			Msg("recording a queued pin's outcome failed; trying again")
		if sleep(b.workCtx, eng.Now().Add(wait)) != nil {
			return
		}
		wait = min(2*wait, finishRetryMax)
	}
}

// finishRetryMin and finishRetryMax bound the pauses between attempts to
// record a job's outcome.
const (
	finishRetryMin = time.Second
	finishRetryMax = 30 * time.Second
)

// jobLine is a queued pin's line in a digest or in /queue.
func jobLine(q queuedPin, r jobResult, name string) string {
	what := "<" + q.ref().jumpURL() + ">"
	if q.Images > 1 {
		what += fmt.Sprintf(" (image %d of %d)", q.Image, q.Images)
	}
	if name != "" {
		what += " · " + name
	}
	switch r.Outcome {
	case jobPinned:
		return fmt.Sprintf("✅ %s → <%s>", what, r.PinURL)
	case jobDuplicate:
		return fmt.Sprintf("↩️ %s · already pinned → <%s>", what, r.PinURL)
	case jobUnknown:
		return fmt.Sprintf("❔ %s · %s", what, r.Why)
	}
	return fmt.Sprintf("❌ %s · failed: %s", what, r.Why)
}
