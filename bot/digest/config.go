package digest

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/pinbot/pinbot/internal/limit/schedule"
)

// Defaults applied by New to the zero fields of Config.
const (
	// DefaultGather is how long a user's lines are gathered, from the
	// first, before their digest goes out.
	DefaultGather = time.Minute
	// DefaultHeader opens every digest.
	DefaultHeader = "Queued pins that ran:"
	// DefaultMaxLines is how many lines are kept per user while a digest
	// gathers; the digest counts those beyond ("… and 3 more").
	DefaultMaxLines = 200
	// DefaultMaxUsers is how many users may have lines gathered or a
	// digest under way at once; lines for more users are dropped.
	DefaultMaxUsers = 10_000
	// DefaultMaxLineRunes is the longest line kept; longer ones are cut
	// and end with "…".
	DefaultMaxLineRunes = 300
	// DefaultSendTimeout bounds each request to Discord.
	DefaultSendTimeout = 15 * time.Second
	// DefaultAttempts is how many times a request that met a 5xx, a
	// timeout, a broken connection or a 429 is tried.
	DefaultAttempts = 5
	// DefaultBackoff is the wait before the second try of a request that
	// failed; it doubles with each try, up to DefaultMaxBackoff.
	DefaultBackoff    = 2 * time.Second
	DefaultMaxBackoff = time.Minute
	// DefaultDMsClosedFor is how long a user whose DMs refused a digest
	// (403, 50007) gets digests in the fallback channel without a DM
	// being tried first.
	DefaultDMsClosedFor = time.Hour
	// DefaultDMCache is how many users' DM channels, and closed DMs, are
	// remembered.
	DefaultDMCache = 10_000
	// DefaultAdopt is how often a Sender over a SharedOutbox claims the
	// lines of processes that stopped running.
	DefaultAdopt = 10 * time.Second
)

// DefaultPace is the rule of all requests of a Sender together: 20 per
// second, less than half of Discord's global 50 per second, which the
// bot's interactions share.
var DefaultPace = schedule.Rule{Kind: schedule.KindSlidingLog, Calls: 20, Per: time.Second}

// maxContent is Discord's limit on a message's content, in characters.
const maxContent = 2000

// maxHeaderRunes bounds Config.Header, so that a line of MaxLineRunes
// always fits in a message beside it.
const maxHeaderRunes = 200

// Config configures a Sender. The zero value of each field selects its
// default; DefaultConfig returns them all.
type Config struct {
	// Gather is how long a user's lines are gathered, from the first one
	// on, before they go out as one digest; default DefaultGather.
	Gather time.Duration
	// Header is the first line of every digest; default DefaultHeader.
	Header string
	// MaxLines is how many lines are kept per user while a digest
	// gathers; later ones are counted and the digest ends with "… and K
	// more". Default DefaultMaxLines.
	MaxLines int
	// MaxUsers is how many users may have lines gathered or a digest
	// under way at once; lines for other users are dropped, counted and
	// logged. Default DefaultMaxUsers.
	MaxUsers int
	// MaxLineRunes is the longest line kept, in characters; longer lines
	// are cut and end with "…". Default DefaultMaxLineRunes; at most
	// 2000 − 200 − the room a fallback's mention takes.
	MaxLineRunes int
	// SendTimeout bounds each request to Discord; default
	// DefaultSendTimeout.
	SendTimeout time.Duration
	// Attempts is how many times a request that met a 5xx, a timeout, a
	// broken connection or a 429 is tried before the rest of its digest
	// is dropped; default DefaultAttempts.
	Attempts int
	// Backoff is the wait before a failed request's second try, doubled
	// for each later one up to MaxBackoff; defaults DefaultBackoff and
	// DefaultMaxBackoff. A 429 waits its retry_after instead.
	Backoff, MaxBackoff time.Duration
	// DMsClosedFor is how long a user whose DMs refused a digest gets the
	// next ones in the fallback channel at once; default
	// DefaultDMsClosedFor.
	DMsClosedFor time.Duration
	// DMCache is how many users' DM channels, and closed DMs, are
	// remembered (the least recently used are forgotten); default
	// DefaultDMCache.
	DMCache int
	// Channel is the limit of each destination channel; default
	// schedule.DiscordChannel().
	Channel schedule.Rule
	// Pace is the limit of the Sender's requests together; default
	// DefaultPace. See the package documentation for what it bounds.
	Pace schedule.Rule
	// Adopt is how often a Sender over a SharedOutbox claims and sends
	// the lines of processes that stopped running; default
	// DefaultAdopt. Unused with another Outbox.
	Adopt time.Duration
}

// DefaultConfig returns the configuration New uses for a zero Config.
func DefaultConfig() Config {
	return Config{}.withDefaults()
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	set := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	setDur(&c.Gather, DefaultGather)
	if c.Header == "" {
		c.Header = DefaultHeader
	}
	set(&c.MaxLines, DefaultMaxLines)
	set(&c.MaxUsers, DefaultMaxUsers)
	set(&c.MaxLineRunes, DefaultMaxLineRunes)
	setDur(&c.SendTimeout, DefaultSendTimeout)
	set(&c.Attempts, DefaultAttempts)
	setDur(&c.Backoff, DefaultBackoff)
	setDur(&c.MaxBackoff, DefaultMaxBackoff)
	setDur(&c.DMsClosedFor, DefaultDMsClosedFor)
	set(&c.DMCache, DefaultDMCache)
	setDur(&c.Adopt, DefaultAdopt)
	if c.Channel == (schedule.Rule{}) {
		c.Channel = schedule.DiscordChannel()
	}
	if c.Pace == (schedule.Rule{}) {
		c.Pace = DefaultPace
	}
	return c
}

// Validate reports what is wrong with c, naming the field, or nil. Zero
// fields are valid: they select defaults.
func (c Config) Validate() error {
	ints := []struct {
		name string
		v    int
	}{{"MaxLines", c.MaxLines}, {"MaxUsers", c.MaxUsers}, {"MaxLineRunes", c.MaxLineRunes}, {"Attempts", c.Attempts}, {"DMCache", c.DMCache}}
	for _, f := range ints {
		if f.v < 0 {
			return fmt.Errorf("digest: Config.%s %d is negative", f.name, f.v)
		}
	}
	durs := []struct {
		name string
		v    time.Duration
	}{{"Gather", c.Gather}, {"SendTimeout", c.SendTimeout}, {"Backoff", c.Backoff}, {"MaxBackoff", c.MaxBackoff}, {"DMsClosedFor", c.DMsClosedFor}, {"Adopt", c.Adopt}}
	for _, f := range durs {
		if f.v < 0 {
			return fmt.Errorf("digest: Config.%s %v is negative", f.name, f.v)
		}
	}
	if n := utf8.RuneCountInString(c.Header); n > maxHeaderRunes {
		return fmt.Errorf("digest: Config.Header has %d characters, more than %d", n, maxHeaderRunes)
	}
	if limit := maxContent - maxHeaderRunes - fallbackRoom; c.MaxLineRunes > limit {
		return fmt.Errorf("digest: Config.MaxLineRunes %d is over %d", c.MaxLineRunes, limit)
	}
	for _, r := range []struct {
		name string
		rule schedule.Rule
	}{{"Channel", c.Channel}, {"Pace", c.Pace}} {
		if r.rule == (schedule.Rule{}) {
			continue
		}
		if err := r.rule.Validate(); err != nil {
			return fmt.Errorf("digest: Config.%s: %w", r.name, err)
		}
	}
	return nil
}
