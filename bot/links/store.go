package links

import (
	"context"
	"time"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/digest"
)

// Store is the token store: Directory, Tokens, States, Observations,
// History, Guilds and GuildRules in one database, beside the digests' outbox. Every implementation is safe for
// simultaneous use by multiple goroutines, makes each write durable
// before the method returns, and passes linkstest.TestStore.
type Store interface {
	Directory
	Tokens
	States
	Observations
	History
	Guilds
	GuildRules

	// Outbox returns the store's digest outbox: the lines of digests
	// (package digest) that Discord has not yet accepted. Put keeps the
	// first line stored under a key and returns it; a line without a
	// user or a text, with an invalid key, or with a text over
	// MaxOutboxLineLen fails with ErrInvalid. It is valid while the
	// store is open.
	Outbox() digest.Outbox
	// Ping reports whether the store is open and readable: nil,
	// ErrClosed, or the error of a read.
	Ping(ctx context.Context) error
	// Close waits for the calls in progress to return, then closes the
	// store. Later calls, including Close, return ErrClosed.
	Close() error
}

// Directory is who linked which Pinterest account. Every method fails
// with an error wrapping ErrInvalid, before reading or writing anything,
// when an id is malformed (see CheckID).
type Directory interface {
	// User returns the links of the Discord user userID: the zero User
	// with ID set when the user has linked nothing.
	User(ctx context.Context, userID string) (User, error)
	// Accounts returns the accounts the user userID has linked, in the
	// order they were linked; nil when the user has linked nothing.
	Accounts(ctx context.Context, userID string) ([]Account, error)
	// Account returns the linked account accountID. An account that no
	// user links (never linked, or unlinked by all) fails with an error
	// wrapping ErrNoToken.
	Account(ctx context.Context, accountID string) (Account, error)
	// AccountUsers returns the linked account accountID and the ids of
	// the Discord users who link it, in the order they linked it; an
	// account no user links fails with an error wrapping ErrNoToken.
	AccountUsers(ctx context.Context, accountID string) (Account, []string, error)

	// Users calls fn with every user who has linked at least one
	// account, in byte order of their ids, until fn returns an error,
	// which Users then returns as is. It reads one consistent snapshot;
	// fn may call the store's other methods but not Close.
	Users(ctx context.Context, fn func(User) error) error
	// AllAccounts calls fn with every linked account, in byte order of
	// their ids, as Users does.
	AllAccounts(ctx context.Context, fn func(Account) error) error
	// AllAccountUsers calls fn with every linked account and the ids of
	// the users who link it, in byte order of the accounts' ids, as
	// Users does.
	AllAccountUsers(ctx context.Context, fn func(Account, []string) error) error

	// Link records, in one durable write, that the user userID linked
	// acct with the token tok: the account's token and username are
	// stored (replacing earlier ones), a new grant generation starts,
	// RelinkNeeded is cleared, the account is added to the user's
	// accounts if absent, and it becomes the user's active account. An
	// existing default board is kept; acct's is used only when the
	// account has none. Linking a new account when the user already has
	// MaxAccountsPerUser fails with an error wrapping ErrTooManyAccounts.
	Link(ctx context.Context, userID string, acct Account, tok *oauth2.Token) error
	// Unlink removes accountID from the user's accounts; it fails with
	// an error wrapping ErrNotLinked when the user has not linked it. If
	// it was the active account, the account linked after it becomes
	// active (or, if it was the last one, the one before it; none when
	// no account is left). When no user links the account any more, its
	// record and token are deleted.
	Unlink(ctx context.Context, userID, accountID string) error
	// SetActive makes accountID the account the user pins with. It fails
	// with an error wrapping ErrNotLinked unless the user has linked it.
	SetActive(ctx context.Context, userID, accountID string) error
	// SetQueueWhenFull sets what /pin does by default when the limit
	// refuses pictures: queue them (on) or skip them. It fails with an
	// error wrapping ErrNotLinked when the user has linked no account.
	SetQueueWhenFull(ctx context.Context, userID string, on bool) error
	// SetDefaultBoard sets the board pins of accountID go to when a
	// command names none, for every user of that account; boardID ""
	// (with boardName "") clears it. It fails with an error wrapping
	// ErrNotLinked unless the user has linked the account.
	SetDefaultBoard(ctx context.Context, userID, accountID, boardID, boardName string) error
	// MarkRelinkNeeded flags accountID as needing a new link, after
	// Pinterest declared its grant invalid; Link clears the flag. An
	// account no user links fails with an error wrapping ErrNoToken.
	MarkRelinkNeeded(ctx context.Context, accountID string) error
	// MarkGrantRelinkNeeded is MarkRelinkNeeded for generation gen of
	// the account's grant (see Tokens.Grant): when the account has been
	// linked again since, nothing changes.
	MarkGrantRelinkNeeded(ctx context.Context, accountID string, gen uint64) error
}

// Tokens are the linked accounts' OAuth tokens. Pinterest rotates
// refresh tokens and the previous one dies at once, so a token is stored
// durably before the method that saves it returns.
type Tokens interface {
	// Token returns the stored token of accountID, or an error wrapping
	// ErrNoToken when none is stored (the account was never linked, or
	// every user unlinked it).
	Token(ctx context.Context, accountID string) (*oauth2.Token, error)
	// Grant returns the stored token of accountID, as Token does, and
	// the generation of its grant: a number that Link raises each time
	// the account is authorized again, never repeated in the store, and
	// that saving a refreshed token keeps.
	Grant(ctx context.Context, accountID string) (*oauth2.Token, uint64, error)
	// SaveToken replaces the token of the linked account accountID with
	// tok, keeping its grant generation. It fails with an error wrapping
	// ErrNoToken when no user links the account, so that an unlinked
	// account's token is never written back. It does not clear
	// RelinkNeeded.
	SaveToken(ctx context.Context, accountID string, tok *oauth2.Token) error
	// SaveGrantToken is SaveToken for a token refreshed from generation
	// gen of the account's grant: when the account has been linked again
	// since, it saves nothing and fails with an error wrapping
	// ErrRelinked.
	SaveGrantToken(ctx context.Context, accountID string, gen uint64, tok *oauth2.Token) error
}

// States are the single-use OAuth states of links in progress. No method
// reads the wall clock: each takes the current time.
type States interface {
	// NewState is NewLinkState for a Request with no interaction, made
	// at now.
	NewState(ctx context.Context, userID string, now time.Time) (string, error)
	// NewLinkState returns a new OAuth state for req: StateBytes random
	// bits, StateLen characters of unpadded base64url, usable once until
	// now plus the store's time to live (DefaultStateTTL unless
	// configured). The user's oldest states beyond MaxStatesPerUser are
	// retired.
	NewLinkState(ctx context.Context, req Request, now time.Time) (string, error)
	// ConsumeState is ConsumeLinkState returning the Request's user.
	ConsumeState(ctx context.Context, state string, now time.Time) (string, error)
	// ConsumeLinkState checks state and returns the Request it was
	// issued for. A state works once: of concurrent calls with one state
	// at most one succeeds. A state never issued, already consumed or
	// purged, or malformed fails with ErrStateInvalid; one consumed when
	// now is past its expiry fails with ErrStateExpired (and is gone
	// too).
	ConsumeLinkState(ctx context.Context, state string, now time.Time) (Request, error)
	// PurgeStates deletes the states that expired before now and returns
	// how many it deleted.
	PurgeStates(ctx context.Context, now time.Time) (int, error)
}

// History remembers which pictures were pinned to which board, so that a
// picture asked for again is not pinned twice (see package bot: a
// picture's key is its Discord attachment, or its image address without
// the signed query of Discord's CDN).
type History interface {
	// PinnedBefore returns, of keys, those remembered as pinned to
	// boardID of accountID and not forgotten by now: key → the pin's
	// address. A key never remembered, or remembered until now or
	// earlier, is absent.
	PinnedBefore(ctx context.Context, accountID, boardID string, keys []string, now time.Time) (map[string]string, error)
	// RememberPinned remembers, durably and in one write, that each of
	// pins was pinned to boardID of accountID, until its Until (a later
	// Remember replaces it). A pin without an address or an Until fails
	// with ErrInvalid, and nothing is stored.
	RememberPinned(ctx context.Context, accountID, boardID string, pins []PinnedPicture) error
}

// PinnedPicture is a picture pinned to a board (see History).
type PinnedPicture struct {
	Key    string // the picture's key
	PinURL string // the pin's address
	Until  time.Time
}

// Observations are the pins each account made outside pinbot that the
// engine counts (see actors.Engine.Observe), so that a pin is counted
// once across reconciliations and restarts. They belong to the account,
// not to its links: unlinking and linking again keep them. Every method
// fails with an error wrapping ErrInvalid, before reading or writing
// anything, when an id is malformed (see CheckID).
//
// The engine counts a pin first and the store remembers it second: a
// crash between the two counts the pin again at the next
// reconciliation, twice, never less. For the same reason a store may
// forget a record early (its clock running ahead): that too can only
// count a pin twice.
type Observations interface {
	// Unobserved returns, of pinIDs, those not remembered for
	// accountID, in the order given and each once; none when all are.
	Unobserved(ctx context.Context, accountID string, pinIDs []string) ([]string, error)
	// MarkObserved remembers pins for accountID, durably, each until its
	// Until (a pin remembered already keeps the later Until), and
	// forgets those of the account whose Until is at or before now. Of
	// more than MaxObservedPerAccount, those with the earliest Until go.
	// A pin without an Until fails with ErrInvalid.
	MarkObserved(ctx context.Context, accountID string, pins []ObservedPin, now time.Time) error
}

// Guilds are the Discord servers' (guilds') own settings, chosen by their
// managers and shared by every member of the server. A server that never
// chose anything has the zero GuildSettings: the bot's defaults. Every
// method fails with an error wrapping ErrInvalid, before reading or
// writing anything, when an argument is malformed (see CheckID; a pin
// emoji longer than MaxEmojiLen, not valid UTF-8, or holding spaces or
// control characters).
//
// A store keeps each server's records under the server's id (the
// settings, and beside them, later, per-channel records such as rules),
// so that all a server keeps is read, exported and imported together.
type Guilds interface {
	// GuildSettings returns the settings of the server guildID: the
	// zero GuildSettings with ID set when it has chosen nothing.
	GuildSettings(ctx context.Context, guildID string) (GuildSettings, error)
	// SetPinEmoji sets the emoji of the server's pin reactions, durably,
	// as package bot spells it (a unicode emoji, or a custom emoji as
	// name:id; the store checks only its form); "" goes back to the
	// bot's default. A server whose settings are all back to their
	// defaults keeps no record.
	SetPinEmoji(ctx context.Context, guildID, emoji string) error
}

// GuildSettings are a server's settings (see Guilds). The zero value,
// with ID set, is a server that kept the bot's defaults.
type GuildSettings struct {
	// ID is the Discord server (guild) id.
	ID string
	// PinEmoji is the emoji of the server's pin reactions; "" for the
	// bot's (Config.PinEmoji of package bot).
	PinEmoji string
}

// MaxEmojiLen is the longest pin emoji a server may choose, in bytes of
// UTF-8: a custom emoji as name:id (a 32-character name, a 20-digit id),
// or a unicode emoji of up to 16 code points.
const MaxEmojiLen = 64
