package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/internal/logctx"
)

// Resolving unknown outcomes (see docs/design.md, "Pinterest's ledger").
// Every pin carries its slot's mark (slotMark) in its link. When
// Pinterest's answer to a POST is lost, the bot looks for the mark in the
// account's pins: found, the pin counts from its own creation time and the
// user is told it was pinned; not found by a listing that shows every pin
// Pinterest can have made for the slot, its slot is given back (a queued
// pin runs again). A lookup that fails leaves the slot to count as a pin
// made at its deadline, as without lookups.
//
// Two assumptions bound when absence is proven: Pinterest acts on a
// request within SlotMargin of the request's end (the assumption every
// slot's deadline rests on), and a pin Pinterest made is listed within
// Config.ListingLag of its creation. So a listing begun ListingLag after
// the last moment Pinterest can have acted, that lacks the mark, proves
// the pin was never made.

// DefaultListingLag is how long after Pinterest made a pin its listing
// is assumed to show it, at most, when Config.ListingLag is zero.
const DefaultListingLag = time.Minute

// Lookups of an unknown pin.
const (
	// lookupRetry is how long after a failed lookup the next one starts.
	lookupRetry = 30 * time.Second
	// maxLookupFailures is how many failed lookups end the search: the
	// slot then counts as a pin made at its deadline.
	maxLookupFailures = 3
)

// slotMark is the mark of the pin sent in slot (pinterest.PinRequest.Mark):
// opaque, the same for every send of the slot, and a different one for
// every slot, even when a restore makes reservation IDs come again (their
// deadlines differ).
func slotMark(slot actors.Reservation) string {
	h := sha256.Sum256([]byte(slot.Account + "\x00" + strconv.FormatUint(slot.ID, 10) + "\x00" + strconv.FormatInt(slot.Deadline.UnixMilli(), 10)))
	return hex.EncodeToString(h[:12])
}

// lookup is a pin whose outcome is unknown, to look for on Pinterest.
type lookup struct {
	slot actors.Reservation
	sess *pinterest.Session
	// ended is the engine time the send ended: Pinterest acts on it by
	// ended + SlotMargin. Zero when unknown (a job recovered after a
	// restart): then by the slot's deadline.
	ended time.Time
}

// lookupKind is what a search for an unknown pin found.
type lookupKind int

const (
	// lookupFailed: Pinterest could not be asked (or the search was cut
	// short); the outcome stays unknown.
	lookupFailed lookupKind = iota
	// lookupFound: the pin exists.
	lookupFound
	// lookupAbsent: the pin was never made.
	lookupAbsent
)

// lookupResult is the end of a search.
type lookupResult struct {
	kind lookupKind
	pin  pinterest.Pin // lookupFound
	// at is when the found pin counts from, engine time: its creation,
	// moved later by the most Pinterest's clock can lag the engine's.
	at time.Time
}

// resolve looks for lk's pin on Pinterest until it is found or proven
// absent, on the engine clock: first once Pinterest has acted on the
// send, then, if not found, once its listing must show the pin. It
// returns lookupFailed when ctx ends or lookups fail maxLookupFailures
// times.
func (b *Bot) resolve(ctx context.Context, lk lookup) lookupResult {
	r := b.search(ctx, lk)
	switch {
	case r.kind == lookupFound:
		b.cfg.Observer.LookupDone(lookupDoneFound)
	case r.kind == lookupAbsent:
		b.cfg.Observer.LookupDone(lookupDoneAbsent)
	case ctx.Err() == nil:
		b.cfg.Observer.LookupDone(lookupDoneFailed)
	}
	return r
}

// The results of Observer.LookupDone.
const (
	lookupDoneFound  = "found"
	lookupDoneAbsent = "absent"
	lookupDoneFailed = "failed"
)

// search is resolve without the report.
func (b *Bot) search(ctx context.Context, lk lookup) lookupResult {
	eng := b.cfg.Engine
	acted := lk.slot.Deadline
	if !lk.ended.IsZero() && lk.ended.Add(b.cfg.SlotMargin).Before(acted) {
		acted = lk.ended.Add(b.cfg.SlotMargin)
	}
	proves := acted.Add(b.cfg.ListingLag) // a listing begun then shows the pin, if made
	// Pins created since the slot was reserved, as far as Pinterest's
	// clock may lag the engine's. A recovered job's slot was reserved by
	// an earlier run, whose lease may have been longer: its search goes
	// back a window at least (pinbot made at most a limit of pins in it).
	back := eng.Config().Lease
	if lk.ended.IsZero() {
		back = max(back, eng.Config().Window)
	}
	since := lk.slot.Deadline.Add(-back - b.cfg.SlotMargin)
	mark := slotMark(lk.slot)
	log := b.logger(ctx).With().Str("account", lk.slot.Account).Uint64("slot", lk.slot.ID).Logger()
	sleep := b.sleepUntil
	if sleep == nil {
		sleep = eng.SleepUntil
	}
	at, fails := acted, 0
	for {
		if err := sleep(ctx, at); err != nil {
			return lookupResult{}
		}
		began := eng.Now()
		lctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		pins, err := b.cfg.Pinterest.ListPins(lctx, lk.sess, pinterest.ListOptions{Since: since})
		cancel()
		if err == nil {
			for _, p := range pins {
				if p.Mark == mark {
					// Created by acted at the latest; by its own time
					// plus the most the clocks can disagree.
					t := p.CreatedAt.Add(b.cfg.SlotMargin)
					if t.After(acted) {
						t = acted
					}
					log.Info().Str("pin_id", p.ID).Time("created_at", p.CreatedAt).Msg("pin of an unknown outcome found on Pinterest")
					return lookupResult{kind: lookupFound, pin: p, at: t}
				}
			}
			if !began.Before(proves) {
				log.Info().Msg("pin of an unknown outcome not on Pinterest: it was never made")
				return lookupResult{kind: lookupAbsent}
			}
			at = proves
			continue
		}
		if ctx.Err() != nil {
			return lookupResult{}
		}
		fails++
		log.Warn().Str("error", errText(err)).Int("failures", fails).Msg("looking for a pin of an unknown outcome failed")
		if fails >= maxLookupFailures {
			return lookupResult{}
		}
		at = eng.Now().Add(lookupRetry)
	}
}

// goResolve runs f on a goroutine that Close waits for after it cancels
// the work; it reports false, running nothing, once Close has begun.
func (b *Bot) goResolve(f func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return false
	}
	b.resolving.Add(1)
	go func() {
		defer b.resolving.Done()
		f()
	}()
	return true
}

// resolveSlotLater looks for the pin of a /pin whose outcome is unknown,
// after the command's reply: found, its slot is committed at the pin's
// time; absent, released. Either way the user is told in a digest. Until
// then, and if the search fails, the slot counts as a pin made at its
// deadline. what names the picture, as the reply did. It reports false,
// doing nothing, once Close has begun.
func (b *Bot) resolveSlotLater(inv invocation, lk lookup, what, name string) bool {
	ctx := logctx.Inherit(b.workCtx, inv.ctx)
	return b.goResolve(func() {
		res := b.resolve(ctx, lk)
		eng := b.cfg.Engine
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
		defer cancel()
		var text string
		switch res.kind {
		case lookupFound:
			if _, err := eng.Commit(sctx, lk.slot, res.at); err != nil {
				b.logger(ctx).Error().Err(err).Str("account", lk.slot.Account).Msg("committing a found pin failed; its slot counts until its deadline")
			}
			text = fmt.Sprintf("✅ %s · %s → <%s> (Pinterest's answer was lost; Pinbot found the pin)", what, name, res.pin.URL)
		case lookupAbsent:
			if _, err := eng.Release(sctx, lk.slot); err != nil {
				b.logger(ctx).Error().Err(err).Str("account", lk.slot.Account).Msg("releasing the slot of a pin never made failed; it counts until its deadline")
				return
			}
			text = fmt.Sprintf("❌ %s · %s · not pinned: Pinterest never made it (its answer was lost), so it does not count toward the limit; run /pin again for it", what, name)
		default:
			return
		}
		b.tell(inv.userID, inv.guildID, inv.channelID, text)
	})
}

// tell sends a line to a user in their next digest, by DM or in the
// channel where they ran the command.
func (b *Bot) tell(user, guild, channel snowflake.ID, text string) {
	if b.digest == nil || user == 0 {
		return
	}
	b.digest.Add(digest.Line{User: user, Guild: guild, Channel: channel, Text: text})
}

// resolveJobLater looks for the pin of a queued pin whose outcome is
// unknown (o, the outcome reported while it stays unknown) and ends the
// job: pinned at the pin's time when found; back to the head of the queue
// when absent; unknown when the search fails. The job stays running
// until then: a restart meanwhile hands it out as recovered, and its
// search starts again. It reports false, doing nothing, once Close has
// begun.
func (b *Bot) resolveJobLater(jctx context.Context, j actors.Job, q queuedPin, name string, lk lookup, o actors.Outcome) bool {
	return b.goResolve(func() {
		res := b.resolve(jctx, lk)
		switch res.kind {
		case lookupFound:
			o = actors.Outcome{Done: true, At: res.at, Result: jobResult{Outcome: jobPinned, PinURL: res.pin.URL}.encode()}
		case lookupAbsent:
			o = actors.Outcome{Absent: true, Retry: true, RetryAfter: jobRetryShutdown}
		default:
			if jctx.Err() != nil {
				// Closing: the job stays running, and the next start
				// hands it out as recovered to look again.
				return
			}
		}
		b.endJob(jctx, j, o, q, name)
	})
}

// recoveredLookup is the lookup of a recovered job's pin: its slot and
// the account's session. ok is false when there is nothing to look for
// (a job without a slot, as after a restore) or no way to look (the
// account's access is gone).
func (b *Bot) recoveredLookup(ctx context.Context, j actors.Job) (lookup, bool) {
	if j.Slot.ID == 0 || j.Slot.Deadline.IsZero() {
		return lookup{}, false
	}
	sess, err := b.session(ctx, j.Account)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			b.logger(ctx).Info().Str("error", errText(err)).Str("account", j.Account).Msg("a recovered queued pin cannot be looked for on Pinterest; it counts as made")
		}
		return lookup{}, false
	}
	return lookup{slot: j.Slot, sess: sess}, true
}
