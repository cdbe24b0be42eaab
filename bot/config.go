package bot

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/internal/limit/gcra"
	"github.com/pinbot/pinbot/internal/limit/schedule"
)

// Defaults applied by New to zero fields of Config.
const (
	// DefaultHandlerTimeout bounds the work of one interaction once a
	// worker has taken it, below the 15 minutes an interaction token lets
	// the bot edit its reply.
	DefaultHandlerTimeout = 10 * time.Minute
	// DefaultCloseTimeout is how long Close waits for running handlers.
	DefaultCloseTimeout = 30 * time.Second
	// DefaultWorkers is how many interactions are worked on at once; the
	// others wait, already acknowledged. A worker mostly waits for
	// Pinterest and Discord; more of them also means more goroutines
	// competing for the CPU that acknowledgements need (see
	// docs/benchmarks.md).
	DefaultWorkers = 32
	// DefaultSlotMargin is how long before a reserved slot's deadline
	// every request for its pin has ended: the time Pinterest is assumed
	// to need, at most, to act on a request whose client gave up, plus
	// any drift between the engine's clock and Pinterest's (see
	// docs/design.md).
	DefaultSlotMargin = time.Minute
)

// Config configures a Bot. Token, Engine, Links and Pinterest are
// required; the zero value of every other field selects a default.
type Config struct {
	// Token is the Discord bot token. It is never logged.
	Token string
	// APIURL is the Discord REST base, such as
	// https://discord.com/api/v10; "" means Discord's.
	APIURL string
	// GatewayURL overrides the gateway address Discord recommends in
	// GET /gateway/bot; "" keeps Discord's.
	GatewayURL string
	// Shards is the number of gateway shards; 0 takes Discord's
	// recommendation from GET /gateway/bot.
	Shards int
	// ShardsByCaller leaves the opening and closing of each gateway shard
	// to the program (a cluster's member opens the shards it holds):
	// Start opens none, OpenShard, CloseShard and DropShard do, and Shards
	// reports those opened. Shards should then be the cluster's count.
	ShardsByCaller bool
	// ShardServing, with ShardsByCaller, says whether the process may
	// still serve shard (a cluster member within its lease): the events
	// of a shard it may not are dropped, and work on an event of such a
	// shard stops before it queues anything. It must not block. Nil
	// serves every shard opened.
	ShardServing func(shard int) bool
	// IdentifyLimiter, when not nil, is called by Start with Discord's
	// max_concurrency and spaces the gateway's IDENTIFYs instead of the
	// process's own limiter (a cluster's members share one).
	IdentifyLimiter func(maxConcurrency int) IdentifyLimiter

	// Engine counts every Pinterest account's pins.
	Engine *actors.Engine
	// Window, when not 0, is the window users read in place of the
	// engine's: a cluster member's engine counts each pin for the
	// window plus the members' clock bound, but the rule is the window
	// the operator set.
	Window time.Duration
	// Links holds who linked which Pinterest account, and the tokens.
	Links links.Store
	// Peers, in a cluster, forwards an account's work to the member that
	// owns it (see Peers); nil when this process serves every account.
	Peers Peers
	// Pinterest is the client for every account.
	Pinterest *pinterest.Client

	// Log receives the bot's log lines, tagged component=bot, and
	// disgo's, tagged component=disgo.
	Log zerolog.Logger

	// HandlerTimeout bounds the work on one interaction once a worker
	// has taken it; default DefaultHandlerTimeout.
	HandlerTimeout time.Duration
	// CloseTimeout is how long Close waits for running handlers before
	// cancelling them; default DefaultCloseTimeout.
	CloseTimeout time.Duration
	// Workers is how many interactions are worked on at once; default
	// DefaultWorkers. Every interaction is acknowledged at once whatever
	// this limit; the work waits for a worker. Queued pins that come due
	// have as many workers of their own.
	Workers int
	// SlotMargin is how long before a reserved slot's deadline every
	// request for its pin must have ended; default DefaultSlotMargin. A
	// request that could end later is not sent, and the slot is released.
	SlotMargin time.Duration
	// ListingLag is how long after Pinterest made a pin its listing is
	// assumed to show it, at most; default DefaultListingLag. A pin whose
	// outcome is unknown is proven never made only by a listing begun
	// this long after the last moment Pinterest can have made it.
	ListingLag time.Duration
	// RememberPinsFor is how long pinbot remembers the pictures it
	// pinned to each board, so that a picture asked for again is not
	// pinned twice (history.go); default DefaultRememberPinsFor, and a
	// negative value remembers nothing.
	RememberPinsFor time.Duration
	// NoReactions turns pin reactions off (reactions.go): the gateway then
	// asks for no intent, and reactions are ignored. By default a linked
	// user who reacts to a message with PinEmoji pins its pictures.
	NoReactions bool
	// NoAutopin turns auto-pin channels off (autopin.go): the gateway
	// then asks for no GUILD_MESSAGES intent, and messages are ignored.
	// By default the pictures posted in a channel a member set with
	// /autopin are queued for their board.
	NoAutopin bool
	// PinEmoji is the emoji of pin reactions: a unicode emoji, or a
	// custom emoji as name:id (see ParsePinEmoji); "" is DefaultPinEmoji.
	PinEmoji string
	// Digest configures the digests that tell users what became of their
	// queued pins (see package digest); zero fields take its defaults.
	Digest digest.Config
	// DigestClock is the digests' clock; nil means schedule.SystemClock()
	// (tests pass a fake one).
	DigestClock schedule.Clock
	// Outbox keeps the digests' lines, each stored with its queued pin's
	// outcome, until Discord accepted them, so that a crash loses none;
	// New gathers what it holds (see package digest). Nil keeps them in
	// memory only; the program passes Links.Outbox(), a cluster member
	// its member outbox (digest.SharedOutbox), which never sends a line
	// another live member keeps.
	Outbox digest.Outbox

	// Now is the wall clock, used for OAuth states and for how long
	// board lists are kept; default time.Now. Pin counts use the
	// Engine's clock.
	Now func() time.Time

	// UserRate is how much each user may ask of the bot, in units (a
	// /pin costs one per image, anything else one), on the Engine's
	// clock; default DefaultUserRate. A command over it is acknowledged
	// and answered with when to try again. NoUserRate turns it off.
	UserRate   gcra.Rate
	NoUserRate bool
	// Observer, when not nil, learns what became of every pin and
	// interaction, how long acknowledgements took and when gateway shards
	// connected, for metrics (see Observer).
	Observer Observer
	// DiscordTransport, when not nil, wraps the transport of the HTTP
	// client that sends every Discord REST request (metrics).
	DiscordTransport func(http.RoundTripper) http.RoundTripper
	// DiscordProcesses, when not nil, returns how many processes share
	// the bot's token now (a cluster's live members): the bot then keeps
	// its REST requests that Discord's global limit binds (all but
	// interaction responses) within its share of that limit, the limit
	// divided among them. Nil: no share is kept, as for one process.
	DiscordProcesses func() int
}

// Validate reports the first problem with c, naming the field.
func (c Config) Validate() error {
	switch {
	case c.Token == "":
		return errors.New("bot: Config.Token is empty")
	case c.Engine == nil:
		return errors.New("bot: Config.Engine is nil")
	case c.Links == nil:
		return errors.New("bot: Config.Links is nil")
	case c.Pinterest == nil:
		return errors.New("bot: Config.Pinterest is nil")
	case c.Shards < 0:
		return fmt.Errorf("bot: Config.Shards %d is negative", c.Shards)
	case c.Window < 0:
		return fmt.Errorf("bot: Config.Window %v is negative", c.Window)
	case c.HandlerTimeout < 0:
		return fmt.Errorf("bot: Config.HandlerTimeout %v is negative", c.HandlerTimeout)
	case c.CloseTimeout < 0:
		return fmt.Errorf("bot: Config.CloseTimeout %v is negative", c.CloseTimeout)
	case c.Workers < 0:
		return fmt.Errorf("bot: Config.Workers %d is negative", c.Workers)
	case c.SlotMargin < 0:
		return fmt.Errorf("bot: Config.SlotMargin %v is negative", c.SlotMargin)
	case c.ListingLag < 0:
		return fmt.Errorf("bot: Config.ListingLag %v is negative", c.ListingLag)
	}
	if _, err := applicationID(c.Token); err != nil {
		return err
	}
	if !c.UserRate.IsZero() {
		if err := c.UserRate.Validate(); err != nil {
			return fmt.Errorf("bot: Config.UserRate: %w", err)
		}
	}
	if _, err := parsePinEmoji(c.PinEmoji); err != nil {
		return fmt.Errorf("bot: Config.PinEmoji: %w", err)
	}
	if c.APIURL != "" {
		if err := checkURL("APIURL", c.APIURL, "http", "https"); err != nil {
			return err
		}
	}
	if c.GatewayURL != "" {
		if err := checkURL("GatewayURL", c.GatewayURL, "ws", "wss"); err != nil {
			return err
		}
	}
	return nil
}

// CheckToken reports whether token has the shape of a Discord bot token,
// as Validate checks Config.Token: its first part must be the base64
// application ID. The error never shows the token. It lets a program
// check its configuration before opening anything.
func CheckToken(token string) error {
	_, err := applicationID(token)
	return err
}

// applicationID reads the application ID that starts a bot token, as
// disgo does, without ever putting the token into an error.
func applicationID(token string) (snowflake.ID, error) {
	first, _, _ := strings.Cut(token, ".")
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(first, "="))
	if err == nil {
		if id, perr := snowflake.Parse(string(raw)); perr == nil && id != 0 {
			return id, nil
		}
	}
	return 0, errors.New("bot: Config.Token is not a Discord bot token (its first part must be the base64 application ID)")
}

func checkURL(field, raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err == nil && u.Host != "" {
		for _, s := range schemes {
			if u.Scheme == s {
				return nil
			}
		}
	}
	return fmt.Errorf("bot: Config.%s %q is not an absolute %s URL", field, raw, strings.Join(schemes, "/"))
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.HandlerTimeout == 0 {
		c.HandlerTimeout = DefaultHandlerTimeout
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = DefaultCloseTimeout
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.SlotMargin == 0 {
		c.SlotMargin = DefaultSlotMargin
	}
	if c.ListingLag == 0 {
		c.ListingLag = DefaultListingLag
	}
	if c.RememberPinsFor == 0 {
		c.RememberPinsFor = DefaultRememberPinsFor
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.UserRate.IsZero() {
		c.UserRate = DefaultUserRate
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	return c
}
