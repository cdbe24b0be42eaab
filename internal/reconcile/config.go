package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
)

// Defaults of Config.
const (
	// DefaultEvery is the interval between rounds.
	DefaultEvery = 15 * time.Minute
	// DefaultMaxAccounts bounds the accounts one round lists.
	DefaultMaxAccounts = 200
	// DefaultSkew is the margin for the difference between Pinterest's
	// clock and the engine's: the listing reaches that much further back
	// than the window, and a pin made elsewhere counts from its creation
	// plus it. It is pinbot's SlotMargin, the delay it assumes of
	// Pinterest elsewhere.
	DefaultSkew = time.Minute
	// DefaultTokenMargin is how long the stored access token must still
	// be valid for a listing to use it.
	DefaultTokenMargin = 10 * time.Minute
	// RememberMargin is how long the token store remembers a pin made
	// elsewhere after it stopped counting: the listings reach back the
	// window and Skew, so a pin is no longer listed by then; the margin
	// covers a round that runs late.
	RememberMargin = time.Hour
)

// Config configures a Reconciler.
type Config struct {
	// Engine is the rate-limit engine: its survey names the active
	// accounts, its clock is the reconciler's, and Observe records the
	// pins made elsewhere. Required.
	Engine *actors.Engine
	// Links is the token store: which accounts are linked and usable,
	// their tokens, and the pins made elsewhere it remembers. Required.
	Links links.Store
	// Pinterest lists the accounts' pins. Required.
	Pinterest *pinterest.Client
	// Session returns the Session to list account's pins with; nil means
	// ReadOnlySessions over Links. It fails with ErrTokenDue when the
	// account must wait for the bot to renew its token, with
	// links.ErrNoToken when it is not linked.
	Session func(ctx context.Context, account string) (*pinterest.Session, error)
	// CountAll counts every pin an account made in the window against
	// its limit, those made outside pinbot included
	// (PINBOT_COUNT_ALL_PINS); off, only pinbot's own count, and the
	// others show in the drift alone.
	CountAll bool
	// Every is the interval between rounds (Run's ticks); 0 means
	// DefaultEvery.
	Every time.Duration
	// MaxAccounts bounds the accounts one round lists; 0 means
	// DefaultMaxAccounts.
	MaxAccounts int
	// MaxPages bounds the pages of one listing (a listing that needs
	// more fails, and changes nothing); 0 means the client's
	// pinterest.Config.MaxPinPages.
	MaxPages int
	// Skew is the margin for the clocks' difference; 0 means
	// DefaultSkew.
	Skew time.Duration
	// TokenMargin is how long an access token must still be valid to be
	// used; 0 means DefaultTokenMargin.
	TokenMargin time.Duration
	// Observer, when not nil, learns what each round did, for metrics.
	Observer Observer
	// Log receives a warning for each drift the rules do not explain,
	// the listings that fail, the accounts skipped for a new link, and a
	// line per round; tagged component=reconcile.
	Log zerolog.Logger
}

// Validate reports the first problem with c, naming the field.
func (c Config) Validate() error {
	switch {
	case c.Engine == nil:
		return errors.New("reconcile: Config.Engine is nil")
	case c.Links == nil:
		return errors.New("reconcile: Config.Links is nil")
	case c.Pinterest == nil:
		return errors.New("reconcile: Config.Pinterest is nil")
	case c.Every < 0:
		return fmt.Errorf("reconcile: Config.Every %v is negative", c.Every)
	case c.MaxAccounts < 0:
		return fmt.Errorf("reconcile: Config.MaxAccounts %d is negative", c.MaxAccounts)
	case c.MaxPages < 0:
		return fmt.Errorf("reconcile: Config.MaxPages %d is negative", c.MaxPages)
	case c.Skew < 0:
		return fmt.Errorf("reconcile: Config.Skew %v is negative", c.Skew)
	case c.TokenMargin < 0:
		return fmt.Errorf("reconcile: Config.TokenMargin %v is negative", c.TokenMargin)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Every == 0 {
		c.Every = DefaultEvery
	}
	if c.MaxAccounts == 0 {
		c.MaxAccounts = DefaultMaxAccounts
	}
	if c.Skew == 0 {
		c.Skew = DefaultSkew
	}
	if c.TokenMargin == 0 {
		c.TokenMargin = DefaultTokenMargin
	}
	return c
}

// Observer learns what the reconciler does, for metrics (package
// internal/metrics). Its methods must not block.
type Observer interface {
	// Reconciled reports one account's outcome in a round, one of
	// Results.
	Reconciled(result string)
	// Round reports how a round ended, one of RoundEnds.
	Round(end string)
	// Observed reports pins made elsewhere that a round recorded.
	Observed(pins int)
	// Unexplained reports a reconciliation in which Pinterest listed
	// more pins than the rules explain.
	Unexplained()
}

// The values Observer reports.
const (
	// ResultReconciled: the account was listed and its drift measured.
	ResultReconciled = "reconciled"
	// ResultFailed: its listing (or what follows it) failed; nothing
	// changed.
	ResultFailed = "failed"
	// ResultSkipped: not listed: not linked, needing a new link, or its
	// access token due for renewal.
	ResultSkipped = "skipped"

	// EndComplete: every active account was reached.
	EndComplete = "complete"
	// EndBounded: Config.MaxAccounts were listed; the others go first
	// next round.
	EndBounded = "bounded"
	// EndPaused: Pinterest rate limited the listings or was not
	// answering; the round stopped there.
	EndPaused = "paused"
	// EndFailed: the engine could not be surveyed, or the round was
	// canceled.
	EndFailed = "failed"
)

// Results and RoundEnds list the values of Observer's reports.
var (
	Results   = []string{ResultReconciled, ResultFailed, ResultSkipped}
	RoundEnds = []string{EndComplete, EndBounded, EndPaused, EndFailed}
)
