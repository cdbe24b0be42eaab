package links

import "context"

// GuildRules are a server's auto-pin channels: each rule links one channel
// of the server to one Pinterest account and a board of it, so that the
// pictures posted there are queued for that board (package bot, /autopin).
// A store keeps all of a server's rules in one record beside its settings
// (under the server's id, see Guilds), read by one read. Every method
// fails with an error wrapping ErrInvalid, before reading or writing
// anything, when an id is malformed (see CheckID).
type GuildRules interface {
	// AutopinRules returns the rules of the server guildID, in the order
	// they were added; nil when it has none.
	AutopinRules(ctx context.Context, guildID string) ([]AutopinRule, error)
	// UpdateAutopinRules replaces the rules of the server guildID with
	// what fn returns from the rules stored, in one atomic write: fn may
	// be called again when a concurrent write changed them meanwhile, so
	// it must have no effect but its result. fn returning an error leaves
	// the rules as they are and UpdateAutopinRules returns that error as
	// is. A result with more than MaxAutopinRules rules, two rules of one
	// channel, or a rule with a malformed field fails with ErrInvalid. An
	// empty result deletes the record.
	UpdateAutopinRules(ctx context.Context, guildID string, fn func([]AutopinRule) ([]AutopinRule, error)) error
}

// AutopinRule is one auto-pin channel of a server.
type AutopinRule struct {
	// Channel is the Discord channel whose pictures are queued.
	Channel string
	// Owner is the Discord user who added the rule: the pins are theirs
	// (their queue, their digest).
	Owner string
	// Account is the owner's Pinterest account the pins go to, and
	// Board the id of its board; BoardName is the board's name when the
	// rule was added, for the list.
	Account   string
	Board     string
	BoardName string
	// Paused rules queue nothing until resumed.
	Paused bool
}

// MaxAutopinRules is the most auto-pin channels one server may have.
const MaxAutopinRules = 50

// MaxBoardNameLen bounds an AutopinRule's BoardName, in bytes.
const MaxBoardNameLen = 200
