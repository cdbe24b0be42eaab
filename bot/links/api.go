package links

import (
	"errors"
	"time"
)

// Account is a linked Pinterest account, as stored. It holds no token:
// tokens are read with Store.Token.
type Account struct {
	// ID is Pinterest's user_account id: the key of the rate limit.
	ID string
	// Username is the account's Pinterest username at the last link.
	Username string
	// DefaultBoard and DefaultBoardName are the board pins go to when the
	// command names none; empty until chosen.
	DefaultBoard     string
	DefaultBoardName string
	// RelinkNeeded is set when Pinterest declared the grant invalid (for
	// example a revoked or rotated-away refresh token): the account cannot
	// pin until a user links it again.
	RelinkNeeded bool
}

// User is a Discord user's links. The zero User (with ID set) is a user
// who has linked nothing.
type User struct {
	// ID is the Discord user id.
	ID string
	// Active is the account /pin uses; "" when the user has linked none.
	Active string
	// Accounts are the linked account ids, in the order they were linked.
	Accounts []string
	// QueueWhenFull says that /pin queues what the limit refuses unless
	// the command says otherwise (see SetQueueWhenFull).
	QueueWhenFull bool
}

// Errors returned by Store methods; match them with errors.Is.
var (
	// ErrNotLinked: the user has not linked that account.
	ErrNotLinked = errors.New("links: account not linked by this user")
	// ErrNoToken: no token is stored for the account, because no user
	// links it (never linked, or unlinked by every user). Account,
	// MarkRelinkNeeded and SaveToken return it for such an account too.
	ErrNoToken = errors.New("links: no token stored for account")
	// ErrRelinked: the account was linked again, so a token refreshed from
	// its earlier grant is not saved (SaveGrantToken).
	ErrRelinked = errors.New("links: account linked again since this grant")
	// ErrStateInvalid: an OAuth state that was never issued, was already
	// used, or was forged.
	ErrStateInvalid = errors.New("links: invalid OAuth state")
	// ErrStateExpired: an OAuth state older than its time to live.
	ErrStateExpired = errors.New("links: OAuth state expired")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("links: store closed")
	// ErrEncryptionKey: the key is missing, of the wrong length, or not
	// the key the database was written with.
	ErrEncryptionKey = errors.New("links: bad encryption key")
	// ErrLocked: another process (or another Store in this process) has
	// the data directory open.
	ErrLocked = errors.New("links: data directory in use")
	// ErrInvalid: an argument was rejected before anything was read or
	// written, such as an empty or oversized id or a token with neither
	// an access nor a refresh token. The message names the argument.
	ErrInvalid = errors.New("links: invalid argument")
	// ErrCorrupt: a stored record cannot be decoded, has an unknown
	// version, or contradicts another record. The message names the key.
	ErrCorrupt = errors.New("links: corrupt record")
	// ErrTooManyAccounts: the user has already linked MaxAccountsPerUser
	// accounts and must unlink one before linking another.
	ErrTooManyAccounts = errors.New("links: too many linked accounts")
)

// DefaultStateTTL is how long an OAuth state stays usable.
const DefaultStateTTL = 10 * time.Minute

// Limits on what a Store accepts; larger values fail with ErrInvalid (or
// ErrTooManyAccounts).
const (
	// MaxIDLen is the longest user, account or board id, in bytes. Ids
	// are made of ASCII letters, digits and "-_.:"; Discord and Pinterest
	// ids are decimal numbers of up to 20 digits.
	MaxIDLen = 64
	// MaxNameLen is the longest username or board name, in bytes of UTF-8.
	MaxNameLen = 512
	// MaxTokenLen is the longest access or refresh token, in bytes.
	MaxTokenLen = 8 << 10
	// MaxAccountsPerUser is how many accounts one user may link: the
	// most options a Discord select menu can offer.
	MaxAccountsPerUser = 25
)

// StateBytes is the number of random bytes in an OAuth state: 256 bits
// from crypto/rand.
const StateBytes = 32

// StateLen is the length of the states NewState returns, in characters
// of unpadded base64url (URL-safe without escaping).
const StateLen = (StateBytes*8 + 5) / 6

// MaxStatesPerUser is how many links in progress (OAuth states) a user
// may have: each NewState beyond it retires the user's oldest state, so
// repeated /link commands neither pile up records nor keep old links
// usable.
const MaxStatesPerUser = 3

// Request is a link in progress as /link started it: who asked, and what
// the bot needs to tell them, once Pinterest sends the browser back, what
// became of it.
type Request struct {
	// User is the Discord user who ran /link.
	User string
	// Interaction is the token of the /link interaction, with which the
	// bot can edit its reply while Discord keeps the token valid; "" for
	// a link not started by /link, which the bot tells no one about.
	Interaction string
	// At is when /link ran; the zero time when unknown.
	At time.Time
}

// MaxOutboxLineLen is the longest digest line the outbox stores, in bytes.
const MaxOutboxLineLen = 8 << 10

// ObservedPin is a pin an account made outside pinbot that the engine
// counts (actors.Engine.Observe): the token store remembers it so that
// the next reconciliation does not count it again.
type ObservedPin struct {
	// ID is Pinterest's id of the pin.
	ID string
	// CreatedAt is when Pinterest says the pin was made.
	CreatedAt time.Time
	// Until is when the record may be forgotten: the pin counts under no
	// rule from then on (its creation plus the window, plus a margin).
	Until time.Time
}

// MaxObservedPerAccount is how many pins made elsewhere the store
// remembers per account; beyond it, those to be forgotten first go.
// Forgetting a pin early may only count it twice, never less.
const MaxObservedPerAccount = 4096
