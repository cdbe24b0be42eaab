package bot

import (
	"strconv"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

// InvitePermissions are the channel permissions the bot needs in a
// server, and no more:
//   - View Channel and Read Message History, to fetch the messages /pin
//     names and the messages of queued pins when they run (GET
//     /channels/{id}/messages/{id});
//   - Send Messages and Send Messages in Threads, to post a user's
//     results of queued pins in the channel of their command when the
//     user accepts no direct message (see package digest).
//
// Replies to commands go through the interaction's webhook, which needs
// no channel permission; they carry no embeds or files, so Embed Links
// and Attach Files are not asked for.
const InvitePermissions = discord.PermissionViewChannel |
	discord.PermissionReadMessageHistory |
	discord.PermissionSendMessages |
	discord.PermissionSendMessagesInThreads

// InviteScopes are the OAuth2 scopes of the invite: the bot user, and its
// slash and message commands.
var InviteScopes = []discord.OAuth2Scope{discord.OAuth2ScopeBot, discord.OAuth2ScopeApplicationsCommands}

// ApplicationID returns the application ID that starts the bot token:
// for a bot it is the bot user's ID, and the application's client ID.
// The error never shows the token.
func ApplicationID(token string) (snowflake.ID, error) {
	return applicationID(token)
}

// InviteURL returns the address at which a server manager adds the bot
// of application appID to a server, with InviteScopes and
// InvitePermissions.
func InviteURL(appID snowflake.ID) string {
	scopes := ""
	for i, s := range InviteScopes {
		if i > 0 {
			scopes += " "
		}
		scopes += string(s)
	}
	return discord.AuthorizeURL(discord.QueryValues{
		"client_id":   appID.String(),
		"scope":       scopes,
		"permissions": strconv.FormatInt(int64(InvitePermissions), 10),
	})
}
