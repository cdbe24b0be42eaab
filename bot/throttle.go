package bot

import (
	"github.com/pinbot/pinbot/internal/logctx"

	"context"
	"fmt"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/internal/limit/gcra"
)

// DefaultUserRate is how much work each user may ask of the bot when
// Config.UserRate is zero: 60 units per 10 minutes, 60 at once, a unit
// coming back every 10 seconds. A /pin costs a unit per image, every
// other command, button or menu one.
var DefaultUserRate = gcra.Rate{Limit: 60, Period: 10 * time.Minute}

// maxThrottledUsers bounds the users whose allowance is remembered at
// once; a user whose allowance is full again is forgotten (package gcra).
const maxThrottledUsers = 100_000

// whyThrottled is why a picture of a batch was skipped once its user's
// allowance ran out.
const whyThrottled = "not attempted: your allowance is used up"

// throttle is each user's allowance (see DefaultUserRate), on the
// engine's clock. A nil throttle allows everything.
type throttle struct {
	lim *gcra.Limiter
	// now is the engine's clock, which says when to try again; elapsed
	// the allowances' instants, the engine time since the throttle was
	// made. Engine time only moves forward, whatever the wall clock
	// does (package actors, RunningClock).
	now     func() time.Time
	elapsed func() time.Duration
	rate    gcra.Rate
}

func newThrottle(r gcra.Rate, now func() time.Time) *throttle {
	return &throttle{lim: gcra.NewLimiter(r, maxThrottledUsers), now: now, elapsed: gcra.Since(now), rate: r}
}

// charge takes n units from user's allowance. When it refuses, nothing
// is taken, and at is the instant from which the same charge would pass,
// rounded up to the second (the resolution of Discord's timestamps).
func (t *throttle) charge(user snowflake.ID, n int) (ok bool, at time.Time) {
	if t == nil {
		return true, time.Time{}
	}
	res := t.lim.AllowN(user.String(), t.elapsed(), n)
	if res.Allowed {
		return true, time.Time{}
	}
	at = t.now().Add(res.RetryAfter)
	if frac := at.Sub(at.Truncate(time.Second)); frac > 0 {
		at = at.Add(time.Second - frac)
	}
	return false, at
}

// describe names the allowance in what users read: "60 per 10 minutes".
func (t *throttle) describe() string {
	return fmt.Sprintf("%d per %s", t.rate.Limit, periodText(t.rate.Period))
}

// periodText writes a period for people: "minute", "10 minutes", "hour",
// "90 seconds"; in the largest unit it is a whole number of.
func periodText(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}} {
		if d%u.d == 0 {
			if n := d / u.d; n > 1 {
				return fmt.Sprintf("%d %ss", n, u.name)
			}
			return u.name
		}
	}
	return d.String()
}

// msgThrottled refuses a command whose user has used up their allowance.
func (t *throttle) msgThrottled(at time.Time) string {
	return fmt.Sprintf("You are asking Pinbot for more than it allows each user (%s; a /pin costs one per image), so this was not run. Try again at %s.",
		t.describe(), timeText(at))
}

// msgThrottledStop stops a batch whose user's allowance ran out midway.
func (t *throttle) msgThrottledStop(at time.Time) string {
	return fmt.Sprintf("You have used up what Pinbot allows each user (%s; a /pin costs one per image), so Pinbot stopped here. You can go on at %s.",
		t.describe(), timeText(at))
}

// cost is what an interaction costs up front: a /pin one unit per message
// it names (each holds at least one image: the images beyond the first
// are charged once known, see pinner.chargeExtra), "Pin to Pinterest" one
// per image of its message, up to MaxPinsPerBatch, and anything else
// one. Autocomplete costs nothing (it is not throttled).
func cost(e *event) int {
	ai, ok := e.Interaction.(discord.ApplicationCommandInteraction)
	if !ok {
		return 1
	}
	switch d := ai.Data.(type) {
	case discord.SlashCommandInteractionData:
		if d.CommandName() != cmdPin {
			return 1
		}
		var guild, channel snowflake.ID
		if g := ai.GuildID(); g != nil {
			guild = *g
		}
		if ch := ai.Channel(); ch.MessageChannel != nil {
			channel = ch.ID()
		}
		refs, err := parseMessageRefs(d.String(optMessages), guild, channel)
		if err != nil {
			return 1
		}
		return max(len(refs), 1)
	case discord.MessageCommandInteractionData:
		if d.CommandName() != cmdPinMessage {
			return 1
		}
		return min(max(len(imagesOf(d.TargetMessage())), 1), MaxPinsPerBatch)
	}
	return 1
}

// throttled charges an acknowledged interaction to its user's allowance
// and, when the allowance is used up, answers it, saying when to try
// again, and reports true: the interaction is not worked on.
func (b *Bot) throttled(e *event) bool {
	ok, at := b.throttle.charge(e.User().ID, cost(e))
	if ok {
		return false
	}
	log := b.logger(e.Ctx)
	log.Info().Str("user_id", e.User().ID.String()).
		Time("retry_at", at).Msg("interaction refused: the user's allowance is used up")
	msg := b.throttle.msgThrottled(at)
	if !editsInPlace(e) {
		b.reply(e.Ctx, e.Token(), reply{content: msg})
		return true
	}
	// The deferred answer would replace the message the component is on
	// (the /queue list): say it beside it instead.
	ctx, cancel := context.WithTimeout(logctx.Inherit(b.workCtx, e.Ctx), replyTimeout)
	defer cancel()
	if err := b.api.Followup(ctx, e.Token(), discord.MessageCreate{
		Content: msg, Flags: discord.MessageFlagEphemeral, AllowedMentions: &noMentions,
	}); err != nil {
		log.Warn().Str("error", errText(err)).Msg("reply not delivered")
	}
	return true
}

// chargeExtra charges the user a unit for an image of a /pin message
// beyond its first, which the command's up-front cost did not cover. When
// the allowance is used up it stops the batch, saying when the user can
// go on, and reports false.
func (p *pinner) chargeExtra() bool {
	ok, at := p.b.throttle.charge(p.inv.userID, 1)
	if !ok {
		p.stopWith(failThrottled, p.b.throttle.msgThrottledStop(at), whyThrottled)
	}
	return ok
}
