package metrics

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The values of the bot's labels. A value outside its list is counted as
// "other", so that no caller can grow a label's cardinality.
var (
	// PinResults are the values of pinbot_pins_total's result label.
	PinResults = []string{"pinned", "failed", "unknown", "skipped", "queued"}
	// PinSources are the values of the source label of pinbot_pins_total
	// and pinbot_duplicates_avoided_total: what asked for a picture
	// (package bot's pinSources, which its tests check against this
	// list): command (/pin), message_command (Pin to Pinterest),
	// reaction (a pin reaction), queued (a queued pin when it ran; the
	// picture counted as queued under the source that queued it),
	// autopin (a picture of an auto-pin channel, queued).
	PinSources = []string{"command", "message_command", "reaction", "queued", "autopin"}
	// PinFailureReasons are the values of pinbot_pin_failures_total's
	// reason label: why a picture was not pinned (package bot's
	// failReasons, which its tests check against this list).
	PinFailureReasons = []string{
		"limit", "held", "queue_full", "rate_limited", "spam_block", "reauth", "image_rejected", "refused",
		"unavailable", "outcome_unknown", "no_time", "timeout", "message_gone", "no_image", "no_access",
		"unlinked", "engine", "batch_cap", "discord_unavailable", "invalid", "throttled", "duplicate", "moved",
	}
	// InteractionResults are the values of pinbot_interactions_total's
	// result label: ok (handled), error (the handler failed),
	// not_acknowledged (Discord refused the deferral, or it came too
	// late), and the refusals (InteractionRefusals).
	InteractionResults = []string{"ok", "error", "not_acknowledged", "throttled", "closing", "busy"}
	// InteractionRefusals are the results of interactions the bot refused
	// before working on them, and the values of
	// pinbot_interaction_refusals_total's reason label: throttled (the
	// user's allowance was used up: PINBOT_USER_RATE), closing (arrived
	// or would have started during shutdown), busy (autocomplete answered
	// empty: too many at once).
	InteractionRefusals = []string{"throttled", "closing", "busy"}
	// LookupResults are the values of
	// pinbot_unknown_pins_resolved_total's result label: what looking
	// for a pin of unknown outcome on Pinterest found: found (it exists,
	// and counts from its creation), absent (never made: its slot was
	// given back), failed (Pinterest could not be asked: it counts until
	// its slot's deadline).
	LookupResults = []string{"found", "absent", "failed"}
	// ReactionResults are the values of pinbot_reactions_total's result
	// label: what became of a pin reaction (package bot's
	// reactionResults, which its tests check against this list): ran
	// (its pictures went through a batch, counted in pinbot_pins_total),
	// not_linked, canceled (taken off: queued pins canceled), none
	// (taken off: nothing to cancel), throttled, failed, duplicate (the
	// same event again), closing, busy (too many under way), not_served
	// (its gateway shard is no longer this member's: its next holder gets
	// it replayed).
	ReactionResults = []string{"ran", "not_linked", "canceled", "none", "throttled", "failed", "duplicate", "closing", "busy", "not_served"}
)

// other is the label value of anything outside a label's list.
const other = "other"

// BotObserver receives the bot's reports: it is the bot.Observer to set
// as bot.Config.Observer (see Metrics.Bot). Its methods are bot.Observer's,
// written out here so that this package does not import the bot, whose
// tests import this package. It is safe for simultaneous use.
type BotObserver struct {
	// commands are the values of pinbot_interactions_total's command
	// label: the bot's command table's labels (bot.InteractionLabels),
	// given to Metrics.Bot.
	commands []string

	pins         map[string]map[string]prometheus.Counter // by source, then result
	duplicates   map[string]prometheus.Counter            // by source
	failures     map[string]prometheus.Counter
	interactions *prometheus.CounterVec
	refusals     map[string]prometheus.Counter // by reason, without other
	ack          prometheus.Histogram
	reconnects   prometheus.Counter
	resumes      prometheus.Counter
	lookups      map[string]prometheus.Counter
	reactions    map[string]prometheus.Counter
}

// ackBuckets cover Discord's 3-second deadline for the initial response.
var ackBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5}

func (o *BotObserver) init(reg *prometheus.Registry) {
	pins := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_pins_total",
		Help: "Pictures of /pin, Pin to Pinterest and pin reactions (and messages that could not be read or had no picture), and queued pins when they ran, by source (command, message_command, reaction, queued) and result: pinned, failed, unknown (may exist, counts toward the limit), skipped, queued.",
	}, []string{"source", "result"})
	duplicates := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_duplicates_avoided_total",
		Help: "Pictures not pinned again because the board had them already (answered \"already pinned\", no slot used), by source: command, message_command, reaction, queued.",
	}, []string{"source"})
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_pin_failures_total",
		Help: "Pins not made (results failed, unknown and skipped) by reason.",
	}, []string{"reason"})
	o.interactions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_interactions_total",
		Help: "Interactions the bot is done with, by command (or component, or autocomplete) and result.",
	}, []string{"command", "result"})
	refusals := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_interaction_refusals_total",
		Help: "Interactions the bot refused before working on them, by reason: throttled (the user's allowance was used up), closing (shutting down), busy (autocomplete: too many at once).",
	}, []string{"reason"})
	o.ack = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "pinbot_interaction_ack_seconds",
		Help:    "Time from the bot taking an interaction up to Discord accepting its initial response (deferral or autocomplete choices); Discord allows 3 s.",
		Buckets: ackBuckets,
	})
	o.reconnects = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "pinbot_gateway_reconnects_total",
		Help: "Gateway shards connected again after having been connected (a resume or a new session).",
	})
	o.resumes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "pinbot_gateway_resumes_total",
		Help: "Gateway shards whose session resumed after a reconnect.",
	})
	lookups := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_unknown_pins_resolved_total",
		Help: "Searches on Pinterest for pins whose outcome was unknown (an answer lost, a restart while sending), by result: found, absent (never made, slot given back), failed (counted until the slot's deadline).",
	}, []string{"result"})
	reactions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_reactions_total",
		Help: "Pin reactions (added or taken off) by result: ran, not_linked, canceled, none, throttled, failed, duplicate, closing, busy.",
	}, []string{"result"})
	reg.MustRegister(pins, duplicates, failures, o.interactions, refusals, o.ack, o.reconnects, o.resumes, lookups, reactions)
	o.reactions = children(reactions, ReactionResults)
	o.lookups = children(lookups, LookupResults)
	o.pins = make(map[string]map[string]prometheus.Counter, len(PinSources)+1)
	for _, src := range append(slices.Clone(PinSources), other) {
		o.pins[src] = make(map[string]prometheus.Counter, len(PinResults)+1)
		for _, r := range append(slices.Clone(PinResults), other) {
			o.pins[src][r] = pins.WithLabelValues(src, r)
		}
	}
	o.duplicates = children(duplicates, PinSources)
	o.failures = children(failures, PinFailureReasons)
	o.refusals = make(map[string]prometheus.Counter, len(InteractionRefusals))
	for _, r := range InteractionRefusals {
		o.refusals[r] = refusals.WithLabelValues(r)
	}
}

// children resolves vec's child for each value, and for other.
func children(vec *prometheus.CounterVec, values []string) map[string]prometheus.Counter {
	m := make(map[string]prometheus.Counter, len(values)+1)
	for _, v := range append(slices.Clone(values), other) {
		m[v] = vec.WithLabelValues(v)
	}
	return m
}

// PinDone counts one picture's result by its source and, unless it was
// pinned or queued, why; a picture the board had already (reason
// duplicate) counts as a duplicate avoided too.
func (o *BotObserver) PinDone(source, result, reason string) {
	bySource, ok := o.pins[source]
	if !ok {
		source, bySource = other, o.pins[other]
	}
	c, ok := bySource[result]
	if !ok {
		c = bySource[other]
	}
	c.Inc()
	if result == "pinned" || result == "queued" {
		return
	}
	if reason == "duplicate" {
		o.duplicates[source].Inc()
	}
	if c, ok = o.failures[reason]; !ok {
		c = o.failures[other]
	}
	c.Inc()
}

// LookupDone counts one search for a pin of unknown outcome by its
// result (see LookupResults).
func (o *BotObserver) LookupDone(result string) {
	c, ok := o.lookups[result]
	if !ok {
		c = o.lookups[other]
	}
	c.Inc()
}

// ReactionDone counts one pin reaction by its result (see
// ReactionResults).
func (o *BotObserver) ReactionDone(result string) {
	c, ok := o.reactions[result]
	if !ok {
		c = o.reactions[other]
	}
	c.Inc()
}

// InteractionDone counts one interaction by command and result, and a
// refusal (see InteractionRefusals) by its reason too.
func (o *BotObserver) InteractionDone(command, result string) {
	if !slices.Contains(o.commands, command) {
		command = other
	}
	if !slices.Contains(InteractionResults, result) {
		result = other
	}
	o.interactions.WithLabelValues(command, result).Inc()
	if c, ok := o.refusals[result]; ok {
		c.Inc()
	}
}

// Acknowledged observes the time an initial response took.
func (o *BotObserver) Acknowledged(took time.Duration) { o.ack.Observe(took.Seconds()) }

// ShardReady counts a shard's reconnect and resume.
func (o *BotObserver) ShardReady(_ int, resumed, again bool) {
	if again || resumed {
		o.reconnects.Inc()
	}
	if resumed {
		o.resumes.Inc()
	}
}

// Bot returns the observer to set as bot.Config.Observer; commands are
// the values its interactions' command label may take, the bot's
// bot.InteractionLabels (any other counts as "other"). Every observer it
// returns counts into the same series.
func (m *Metrics) Bot(commands []string) *BotObserver {
	o := m.bot
	o.commands = slices.Clone(commands)
	return &o
}
