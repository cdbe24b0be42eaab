package discordio

import (
	"context"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

// API is every request the bot makes to Discord's REST API. REST is its
// implementation over disgo; package discordiotest has an in-memory one
// for handler tests.
//
// Errors: a request Discord answered with an error status returns an
// *Error (see NotFound, Forbidden, DMRefused); a request that got no
// answer (a timeout, a refused dial, a broken connection) returns the
// transport's error. Every method is safe for concurrent use.
type API interface {
	// Respond sends interaction id's initial response: a deferral or
	// autocomplete choices. Discord takes it within three seconds of the
	// interaction, once.
	Respond(ctx context.Context, id snowflake.ID, token string, r discord.InteractionResponse) error
	// Original fetches an interaction's original response; it exists
	// once the interaction was acknowledged.
	Original(ctx context.Context, token string) (*discord.Message, error)
	// EditOriginal edits an interaction's original response (the
	// deferred "thinking" message or the message a component is on).
	EditOriginal(ctx context.Context, token string, m discord.MessageUpdate) error
	// Followup sends a followup message to an interaction.
	Followup(ctx context.Context, token string, m discord.MessageCreate) error

	// Message fetches a message; its attachment URLs are freshly signed.
	Message(ctx context.Context, channelID, messageID snowflake.ID) (*discord.Message, error)
	// Channel fetches a channel or thread.
	Channel(ctx context.Context, channelID snowflake.ID) (discord.Channel, error)
	// Guild fetches a guild (its owner).
	Guild(ctx context.Context, guildID snowflake.ID) (*discord.RestGuild, error)
	// Roles fetches a guild's roles.
	Roles(ctx context.Context, guildID snowflake.ID) ([]discord.Role, error)
	// Member fetches a guild's member.
	Member(ctx context.Context, guildID, userID snowflake.ID) (*discord.Member, error)

	// OpenDM opens (or finds) the DM channel with a user.
	OpenDM(ctx context.Context, userID snowflake.ID) (snowflake.ID, error)
	// Send sends a message to a channel.
	Send(ctx context.Context, channelID snowflake.ID, m discord.MessageCreate) error

	// SetCommands replaces the application's global commands (a bulk
	// overwrite) and returns how many Discord now has.
	SetCommands(ctx context.Context, cmds []discord.ApplicationCommandCreate) (int, error)
	// GatewayBot is the gateway's URL, the shard count Discord recommends
	// and how many shards may identify at once.
	GatewayBot(ctx context.Context) (GatewayInfo, error)
}

// GatewayInfo is Discord's answer to GET /gateway/bot.
type GatewayInfo struct {
	URL            string
	Shards         int
	MaxConcurrency int
}
