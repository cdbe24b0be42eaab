package bot

import (
	"github.com/pinbot/pinbot/internal/logctx"

	"context"
	"strings"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/internal/discordio"
)

// Deadlines of taking an interaction up.
const (
	// ackTimeout bounds the initial response; Discord refuses it after
	// three seconds anyway.
	ackTimeout = 3 * time.Second
	// autocompleteTimeout bounds the work behind autocomplete choices,
	// which cannot be deferred, from the moment the bot takes the
	// interaction up; autocompleteAnswerBy bounds sending the choices,
	// from the same moment, so that work using all its time still leaves
	// time to answer (empty choices) within Discord's three seconds.
	autocompleteTimeout  = 2 * time.Second
	autocompleteAnswerBy = 2800 * time.Millisecond
	// maxAutocompletes bounds autocomplete requests worked on at once;
	// beyond it the choices are empty.
	maxAutocompletes = 64
)

// admit is the first step of every interaction. Autocomplete is answered
// directly, bounded by autocompleteTimeout. Everything else is deferred
// at once with an ephemeral "thinking" response (a /queue component with
// a deferred update of its message, see editsInPlace), on the
// interaction's own goroutine (see HandleInteraction), is
// charged to its user's allowance (see throttle: over it, it is answered
// with when to try again), then waits for one of Config.Workers workers:
// a burst of commands queues, acknowledged, instead of running all at
// once. An interaction whose deferral fails (too late, or already
// acknowledged, as when an event is delivered twice) is not worked on,
// so no interaction is answered twice.
// Config.Observer learns how long each acknowledgement took, from the
// moment admit took the interaction up, and how each interaction ended.
func (b *Bot) admit(e *event, next func(*event) error) (err error) {
	taken := time.Now()
	name := interactionName(e.Interaction)
	// Every line logged for the interaction, whichever component
	// logs it, carries its ID (see package logctx).
	lctx := logctx.With(b.workCtx, logctx.InteractionID, e.ID().String())
	e.Ctx = lctx
	log := b.logger(lctx)
	if !e.entered && !b.enter() {
		log.Debug().Msg("interaction ignored: closing")
		b.cfg.Observer.InteractionDone(name, interactionClosing)
		if b.onDone != nil {
			b.onDone(e.ID())
		}
		return nil
	}
	defer b.leave()
	if b.onDone != nil {
		defer b.onDone(e.ID())
	}
	// Reported before onDone, so that a test that waits for it sees it.
	result := interactionOK
	defer func() {
		if err != nil && result == interactionOK {
			result = interactionError
		}
		b.cfg.Observer.InteractionDone(name, result)
	}()

	if e.Type() == discord.InteractionTypeAutocomplete {
		select {
		case b.autocompletes <- struct{}{}:
			defer func() { <-b.autocompletes }()
		default:
			result = interactionBusy
			err := b.api.Respond(b.workCtx, e.ID(), e.Token(), discord.InteractionResponse{
				Type: discord.InteractionResponseTypeAutocompleteResult,
				Data: discord.AutocompleteResult{Choices: []discord.AutocompleteChoice{}},
			})
			if err == nil {
				b.cfg.Observer.Acknowledged(time.Since(taken))
			}
			return err
		}
		start := time.Now()
		ctx, cancel := context.WithDeadline(lctx, start.Add(autocompleteTimeout))
		defer cancel()
		e.Ctx = context.WithValue(ctx, answerByKey{}, start.Add(autocompleteAnswerBy))
		// The choices are the initial response: sent by next.
		err := next(e)
		if err == nil {
			b.cfg.Observer.Acknowledged(time.Since(taken))
		}
		return err
	}

	actx, cancel := context.WithTimeout(lctx, ackTimeout)
	if editsInPlace(e) {
		err = b.api.Respond(actx, e.ID(), e.Token(), discord.InteractionResponse{Type: discord.InteractionResponseTypeDeferredUpdateMessage})
	} else {
		err = b.api.Respond(actx, e.ID(), e.Token(), discord.InteractionResponse{
			Type: discord.InteractionResponseTypeDeferredCreateMessage,
			Data: discord.MessageCreate{Flags: discord.MessageFlagEphemeral},
		})
	}
	cancel()
	if err == nil {
		b.cfg.Observer.Acknowledged(time.Since(taken))
	} else if !b.deferredAnyway(lctx, e.Token(), err) {
		log.Warn().Str("error", errText(err)).
			Msg("interaction not acknowledged; not working on it")
		result = interactionNotAcknowledged
		return nil
	}
	if b.throttled(e) {
		result = interactionThrottled
		return nil
	}

	select {
	case b.workers <- struct{}{}:
		defer func() { <-b.workers }()
	case <-b.closingCh:
	}
	if b.isClosing() {
		// Acknowledged but not started: say so rather than start a
		// batch while shutting down.
		b.reply(lctx, e.Token(), reply{content: msgRestarting})
		result = interactionClosing
		return nil
	}
	ctx, cancel := context.WithTimeout(lctx, b.cfg.HandlerTimeout)
	defer cancel()
	e.Ctx = ctx
	return next(e)
}

// editsInPlace reports whether an interaction's answer replaces the
// message it came from rather than a new ephemeral one: the /queue
// components, whose answer is the refreshed list.
func editsInPlace(e *event) bool {
	d := e.componentData()
	return d != nil && strings.HasPrefix(d.CustomID(), idQueue)
}

// deferredAnyway reports whether a deferral that failed with err took
// effect at Discord all the same: its answer was lost or late (a timeout,
// a broken connection, a 5xx), but Discord has the "thinking" response,
// and the user waits for it to be edited. A refusal (a 4xx such as 10062
// Unknown interaction or 40060 already acknowledged) did not take effect.
// Otherwise the original response is fetched: it exists only if the
// deferral took effect. ctx carries the interaction's log IDs.
func (b *Bot) deferredAnyway(ctx context.Context, token string, err error) bool {
	if discordio.Refused(err) {
		return false
	}
	gctx, cancel := context.WithTimeout(logctx.Inherit(b.workCtx, ctx), ackTimeout)
	defer cancel()
	if _, gerr := b.api.Original(gctx, token); gerr != nil {
		return false
	}
	b.logger(ctx).Info().Str("error", errText(err)).Msg("the deferral's answer was lost, but Discord has it; working on the interaction")
	return true
}

// answerByKey keys the instant by which an autocomplete interaction must
// be answered in its handler's context (see admit).
type answerByKey struct{}

// answerContext returns the context to send an autocomplete answer with,
// given the handler's context ctx. Its deadline is the one admit set for
// answering, not ctx's: the lookup behind the choices may have used up ctx,
// and an answer, even an empty one, is still due.
func (b *Bot) answerContext(ctx context.Context) (context.Context, context.CancelFunc) {
	by, ok := ctx.Value(answerByKey{}).(time.Time)
	if !ok {
		by = time.Now().Add(autocompleteAnswerBy)
	}
	return context.WithDeadline(logctx.Inherit(b.workCtx, ctx), by)
}

// invocation is what every handler needs to know of its interaction.
type invocation struct {
	ctx       context.Context
	id        snowflake.ID
	token     string
	userID    snowflake.ID
	guildID   snowflake.ID // 0 outside a guild
	channelID snowflake.ID
	// perms are the user's permissions in the channel, as Discord sent
	// them.
	perms discord.Permissions
	log   zerolog.Logger
}

func (b *Bot) invocation(ctx context.Context, i discord.Interaction) invocation {
	ctx = logctx.With(ctx, logctx.InteractionID, i.ID().String())
	inv := invocation{ctx: ctx, id: i.ID(), token: i.Token(), userID: i.User().ID}
	if g := i.GuildID(); g != nil {
		inv.guildID = *g
	}
	if ch := i.Channel(); ch.MessageChannel != nil {
		inv.channelID = ch.ID()
		inv.perms = ch.Permissions
	}
	if m := i.Member(); m != nil && m.Permissions != 0 {
		inv.perms = m.Permissions
	}
	inv.log = b.logger(ctx).With().Str("user_id", inv.userID.String()).Logger()
	return inv
}
