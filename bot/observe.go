package bot

import (
	"time"

	"github.com/disgoorg/disgo/discord"
)

// Observer learns what the bot does, for metrics (Config.Observer; package
// internal/metrics has the one the program uses). Every label it is given
// comes from a short, fixed list below: never an ID. Its methods are
// called from many goroutines at once; they must be cheap and must not
// block.
type Observer interface {
	// PinDone reports what became of one picture of a command (or of a
	// whole message that could not be read or holds no picture), once the
	// command's report is written, and of one queued pin when it has run:
	// source is what asked for it (see pinSources): "command" (/pin),
	// "message_command" (Pin to Pinterest), "reaction" (a pin reaction),
	// or "queued" (a queued pin that ran); result is "pinned", "failed",
	// "unknown" (Pinterest did not answer clearly; the pin may exist and
	// counts toward the limit), "skipped" or "queued", and reason, for
	// failed, unknown and skipped, why the picture was not pinned (see
	// failReasons; "duplicate" when the board had it already). A queued
	// picture is reported twice: queued, under the source that queued it,
	// then what became of it when it ran, under "queued" (a run that will
	// be tried again is not reported).
	PinDone(source, result, reason string)
	// InteractionDone reports an interaction the bot is done with: command
	// names the command, component or autocomplete (see
	// interactionName), result how it ended: "ok", "error" (the handler
	// failed), "not_acknowledged" (the deferral was refused or too late),
	// or a refusal, the bot declining to work on it: "throttled" (the
	// user's allowance was used up), "closing" (the bot was shutting down)
	// or "busy" (autocomplete answered empty: too many at once). The
	// metrics count the refusals by reason as well (refusalResults).
	InteractionDone(command, result string)
	// Acknowledged reports how long after the bot took an interaction up
	// its initial response (the deferral, or autocomplete's choices) was
	// accepted: Discord allows three seconds.
	Acknowledged(took time.Duration)
	// ShardReady reports a gateway shard whose session became ready:
	// resumed when it resumed its session, again when the shard had been
	// ready before in this run (a reconnect).
	ShardReady(shard int, resumed, again bool)
	// LookupDone reports the end of a search on Pinterest for a pin of
	// unknown outcome (see resolve.go): "found", "absent" (never made)
	// or "failed" (Pinterest could not be asked; the slot counts until
	// its deadline). A search cut short by the bot closing is not
	// reported.
	LookupDone(result string)
}

// nopObserver observes nothing: the Observer of a Config without one.
type nopObserver struct{}

func (nopObserver) PinDone(string, string, string) {}
func (nopObserver) InteractionDone(string, string) {}
func (nopObserver) Acknowledged(time.Duration)     {}
func (nopObserver) ShardReady(int, bool, bool)     {}
func (nopObserver) LookupDone(string)              {}

// The sources of Observer.PinDone: what asked for a picture.
const (
	sourceCommand        = "command"         // /pin
	sourceMessageCommand = "message_command" // Pin to Pinterest
	sourceReaction       = "reaction"        // a pin reaction
	sourceAutopin        = "autopin"         // an auto-pin channel (queued)
	sourceQueued         = "queued"          // a queued pin, when it runs
)

// pinSources lists PinDone's sources, for the metrics' check of their
// labels.
var pinSources = []string{sourceCommand, sourceMessageCommand, sourceReaction, sourceQueued, sourceAutopin}

// The results of Observer.PinDone.
const (
	pinPinned  = "pinned"
	pinFailed  = "failed"
	pinUnknown = "unknown"
	pinSkipped = "skipped"
	pinQueued  = "queued"
)

// Why a picture was not pinned: the reasons of Observer.PinDone.
const (
	failLimit          = "limit"               // the account's limit (skipped)
	failHeld           = "held"                // Pinterest asked to wait, and the hold is in force (skipped)
	failQueueFull      = "queue_full"          // the account's queue had no room (skipped)
	failRateLimited    = "rate_limited"        // Pinterest answered 429
	failSpamBlock      = "spam_block"          // Pinterest's spam protection
	failReauth         = "reauth"              // Pinterest refused the account's grant: link it again
	failImageRejected  = "image_rejected"      // Pinterest could not use the image
	failRefused        = "refused"             // Pinterest refused the pin otherwise (a 4xx)
	failUnavailable    = "unavailable"         // Pinterest not answering, or the request could not be sent
	failOutcomeUnknown = "outcome_unknown"     // a 5xx or a timeout after sending (result unknown)
	failNoTime         = "no_time"             // the slot's send deadline came too close (nothing sent)
	failTimeout        = "timeout"             // the command ran out of time
	failMessageGone    = "message_gone"        // the message is not there (deleted, or not in that channel)
	failNoImage        = "no_image"            // the message has no picture (or no longer the one queued)
	failNoAccess       = "no_access"           // the user or Pinbot can no longer read the channel
	failUnlinked       = "unlinked"            // the account is no longer the user's (queued pins)
	failEngine         = "engine"              // Pinbot's pin counter or its storage is unavailable
	failMoved          = "moved"               // the account moved to another cluster member mid-batch (skipped)
	failBatchCap       = "batch_cap"           // beyond MaxPinsPerBatch pictures in one command (skipped)
	failDiscord        = "discord_unavailable" // Discord did not return the message
	failInvalid        = "invalid"             // a queued pin Pinbot could not read
	failThrottled      = "throttled"           // the user's own allowance ran out (skipped)
	failDuplicate      = "duplicate"           // pinned to the board before (skipped, no slot used)
)

// failReasons lists every reason, for the metrics' check of their labels.
var failReasons = []string{
	failLimit, failHeld, failQueueFull, failRateLimited, failSpamBlock, failReauth, failImageRejected,
	failRefused, failUnavailable, failOutcomeUnknown, failNoTime, failTimeout, failMessageGone,
	failNoImage, failNoAccess, failUnlinked, failEngine, failBatchCap, failDiscord, failInvalid, failDuplicate,
	failThrottled, failMoved,
}

// The results of Observer.InteractionDone.
const (
	interactionOK              = "ok"
	interactionError           = "error"
	interactionNotAcknowledged = "not_acknowledged"
	interactionThrottled       = "throttled"
	interactionClosing         = "closing"
	interactionBusy            = "busy"
)

// refusalResults are the results of Observer.InteractionDone that are
// refusals, for the metrics' check of their labels.
var refusalResults = []string{interactionThrottled, interactionClosing, interactionBusy}

// reportPins reports every entry of a batch's report; source is what
// asked for the batch.
func (b *Bot) reportPins(source string, r report) {
	for _, e := range r.entries {
		switch e.res {
		case resPinned:
			b.cfg.Observer.PinDone(source, pinPinned, "")
		case resQueued:
			b.cfg.Observer.PinDone(source, pinQueued, "")
		case resSkipped, resDuplicate:
			b.cfg.Observer.PinDone(source, pinSkipped, e.reason)
		case resFailed:
			if e.reason == failOutcomeUnknown {
				b.cfg.Observer.PinDone(source, pinUnknown, e.reason)
			} else {
				b.cfg.Observer.PinDone(source, pinFailed, e.reason)
			}
		}
	}
}

// reportRefused reports the messages of a command refused as a whole by
// the limit or a hold, before any was read: each is skipped for reason.
// Other refusals of a whole command (no account linked, an unknown board)
// count in the interactions alone.
func (b *Bot) reportRefused(source string, messages int, reason string) {
	for range messages {
		b.cfg.Observer.PinDone(source, pinSkipped, reason)
	}
}

// reportJob reports what became of a queued pin that ran to its end.
func (b *Bot) reportJob(r jobResult) {
	switch r.Outcome {
	case jobPinned:
		b.cfg.Observer.PinDone(sourceQueued, pinPinned, "")
	case jobUnknown:
		b.cfg.Observer.PinDone(sourceQueued, pinUnknown, firstNonEmpty(r.Reason, failOutcomeUnknown))
	case jobFailed:
		b.cfg.Observer.PinDone(sourceQueued, pinFailed, r.Reason)
	case jobDuplicate:
		b.cfg.Observer.PinDone(sourceQueued, pinSkipped, failDuplicate)
	}
}

// interactionName names an interaction for the metrics with its label
// in the command table (see InteractionLabels): its command, component or
// autocomplete; anything else is "other".
func interactionName(in discord.Interaction) string {
	var label string
	var ok bool
	switch i := in.(type) {
	case discord.ApplicationCommandInteraction:
		label, ok = labelOf(i.Data.CommandName(), false, "")
	case discord.AutocompleteInteraction:
		label, ok = labelOf(i.Data.CommandName, true, "")
	case discord.ComponentInteraction:
		label, ok = labelOf("", false, i.Data.CustomID())
	}
	if !ok {
		return "other"
	}
	return label
}
